package nn_test

import (
	"testing"

	"github.com/bitvk/bitvk/nn/nntest"
)

// TestInconsistentModels: every file of nntest.Inconsistencies that nn can
// judge is rejected by the step that should (ParseConfig, LoadWeights,
// NewTokenizer) with an error naming the problem, and never panics, hangs
// or allocates in proportion to a number in the file; the valid ones load.
// The backends run the same cases through their constructors
// (cpu.TestInconsistentModels, gpu.TestInconsistentModels).
func TestInconsistentModels(t *testing.T) {
	nntest.RejectsInconsistent(t, nil)
}
