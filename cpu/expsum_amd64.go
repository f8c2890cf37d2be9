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

// expSumVector is nn.ExpSum's sum for a finite m with expSumAVX512.
func expSumVector(x []float32, m float64) float64 {
	return expSumAVX512(x, m, &expSumTable[0])
}

// The server's log-probabilities and perplexity sum exp over the whole
// vocabulary once a token (nn.ExpSum): 128,256 logits of the 2B model in
// 0.85 ms in Go on one core of the Intel Xeon VM, in a few tens of
// microseconds here (BenchmarkExpSum).
func init() {
	if hasExpSumAVX512 {
		nn.SetExpSum(expSumVector)
	}
}
