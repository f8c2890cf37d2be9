//go:build !purego

package cpu

import (
	"math"

	"github.com/bitvk/bitvk/nn"
	"golang.org/x/sys/cpu"
)

// expSumTable is nn's table for exp: 2^(j/2048), j < 2048.
var expSumTable = func() (t [2048]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 2048)
	}
	return t
}()

// hasExpSumAVX512 says whether this CPU runs expSumAVX512 (AVX-512 F, DQ
// and BW, and BMI2 for its tail mask).
var hasExpSumAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW

// expSumKernel is the fastest of expSumAVX512 and expSumAVX2 this CPU
// runs, nil for neither.
var expSumKernel = func() func(x []float32, m float64, table *float64) float64 {
	switch {
	case hasExpSumAVX512:
		return expSumAVX512
	case hasAVX2:
		return expSumAVX2
	}
	return nil
}()

// expSumVector is nn.ExpSum's sum for a finite m with expSumKernel.
func expSumVector(x []float32, m float64) float64 {
	return expSumKernel(x, m, &expSumTable[0])
}

// The server's log-probabilities and perplexity sum exp over the whole
// vocabulary once a token (nn.ExpSum): 128,256 logits of the 2B model in
// 0.85-1.05 ms in Go on one core of the Intel Xeon VM, 0.10-0.12 ms with
// expSumAVX512 and 0.15-0.21 ms with expSumAVX2 (BenchmarkExpSumVector).
func init() {
	if expSumKernel != nil {
		nn.SetExpSum(expSumVector)
	}
}
