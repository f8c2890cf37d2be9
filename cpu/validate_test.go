package cpu

import (
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// TestInconsistentModels: every inconsistent file of nntest.Inconsistencies
// is rejected with a clear error, never a panic, a hang or a huge
// allocation, on the way to the CPU backend (whose own step is the K/V
// cache of a context no machine holds); the valid ones load and run.
func TestInconsistentModels(t *testing.T) {
	nntest.RejectsInconsistent(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		return New(c, w, Options{Threads: 2, Context: ctx})
	})
}

// TestBadConfig: a configuration built by hand that disagrees with itself
// or with the weights is an error, not a panic.
func TestBadConfig(t *testing.T) {
	nntest.RejectsBadConfig(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		return New(c, w, Options{Threads: 2, Context: ctx})
	})
}

// TestTooManyThreads: a mistyped thread count is an error naming the
// limit, not tens of thousands of polling goroutines.
func TestTooManyThreads(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 1)
	b, err := New(m.Config, m.Weights, Options{Threads: MaxThreads + 1})
	if err == nil {
		b.Close()
		t.Fatalf("New with %d threads: no error", MaxThreads+1)
	}
	if !strings.Contains(err.Error(), "more than 1024") {
		t.Errorf("New with %d threads: %v; want the limit named", MaxThreads+1, err)
	}
}
