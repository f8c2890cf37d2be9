package cpu

import (
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
