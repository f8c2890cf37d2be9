package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
)

// TestInconsistentModels: every inconsistent file of nntest.Inconsistencies
// is rejected with a clear error, never a panic, a hang or a huge
// allocation, on the way to the Vulkan backend (whose own step is the K/V
// cache of a context no device holds); the valid ones load and run, with
// no message from the validation layer.
func TestInconsistentModels(t *testing.T) {
	needVulkan(t)
	nntest.RejectsInconsistent(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		b, err := New(c, w, Options{Context: ctx, Validation: true})
		if err != nil {
			return nil, err
		}
		return validated{b}, nil
	})
}

// validated is a backend whose Close fails when the validation layer said
// anything.
type validated struct{ *Backend }

func (v validated) Close() error {
	err := v.Backend.Close()
	msgs := v.ValidationMessages() // since New, the device's destruction included
	if len(msgs) > 0 {
		err = errors.Join(err, errors.New("validation: "+strings.Join(msgs, "; validation: ")))
	}
	return err
}

// TestBadConfig: a configuration built by hand that disagrees with itself
// or with the weights is an error, not a panic.
func TestBadConfig(t *testing.T) {
	needVulkan(t)
	nntest.RejectsBadConfig(t, func(c *nn.Config, w *nn.Weights, ctx int) (nn.Backend, error) {
		return New(c, w, Options{Context: ctx, Validation: true})
	})
}
