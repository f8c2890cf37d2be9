package convert

import (
	"fmt"
	"math"
)

// Absmean ternarizes a float weight matrix as BitNet b1.58 trains it and as
// bitvk's trainer exports it: γ = mean|W| (summed in float64, rounded to
// float32), codes RoundClip(W/(γ+1e-6), −1, 1) with rounding half to even
// (the quotient in float64). W ≈ γ·codes, γ being the I2_S tensor scale.
func Absmean(w []float32) (codes []int8, gamma float32) {
	var sum float64
	for _, v := range w {
		sum += math.Abs(float64(v))
	}
	if len(w) > 0 {
		gamma = float32(sum / float64(len(w)))
	}
	inv := 1 / (float64(gamma) + 1e-6)
	codes = make([]int8, len(w))
	for i, v := range w {
		codes[i] = int8(max(-1, min(1, math.RoundToEven(float64(v)*inv))))
	}
	return codes, gamma
}

// UnpackHF unpacks a ternary matrix of rows×cols stored as transformers'
// BitNet integration packs it (integrations/bitnet.py, pack_weights and
// unpack_weights): a U8 tensor of shape [rows/4, cols] whose byte (p, c)
// holds, in its bits 2i+1:2i for i = 0..3, the weight of row i·rows/4 + p,
// column c, as the code w+1 (0 → −1, 1 → 0, 2 → +1). So the four 2-bit
// fields of a byte come from four blocks of rows/4 rows, the lowest bits
// from the first block. Code 3 is no ternary value and is an error.
func UnpackHF(packed []byte, rows, cols int) ([]int8, error) {
	if rows <= 0 || cols <= 0 || rows%4 != 0 {
		return nil, fmt.Errorf("a packed ternary matrix needs a positive row count divisible by 4, got %d×%d", rows, cols)
	}
	block := rows / 4
	if len(packed) != block*cols {
		return nil, fmt.Errorf("%d packed bytes for a %d×%d ternary matrix, want %d", len(packed), rows, cols, block*cols)
	}
	out := make([]int8, rows*cols)
	for p := 0; p < block; p++ {
		for c := 0; c < cols; c++ {
			b := packed[p*cols+c]
			for i := 0; i < 4; i++ {
				code := b >> (2 * i) & 3
				if code == 3 {
					return nil, fmt.Errorf("packed byte (%d, %d) = %#02x holds code 3 in bits %d-%d, which is no ternary value (corrupt weights?)", p, c, b, 2*i+1, 2*i)
				}
				out[(i*block+p)*cols+c] = int8(code) - 1
			}
		}
	}
	return out, nil
}

// scaleFromHF turns a packed matrix's weight_scale into the per-tensor
// scale γ with W = γ·codes. transformers' BitLinear (linear_class
// "bitlinear", the default and Microsoft's 2B4T) computes
// y = (codes·x_q) / (s_x · weight_scale): the scale divides, so γ =
// 1/weight_scale. AutoBitLinear (linear_class "autobitlinear") multiplies
// its output by weight_scale instead: γ = weight_scale.
func scaleFromHF(ws float32, divides bool) (float32, error) {
	if !(ws > 0) || math.IsInf(float64(ws), 0) {
		return 0, fmt.Errorf("weight_scale is %g; want a finite positive number", ws)
	}
	if divides {
		return float32(1 / float64(ws)), nil
	}
	return ws, nil
}

// permuteRows reorders the rows of a rows×cols matrix (any element type)
// from Hugging Face's LLaMA order to GGUF's interleaved RoPE order in
// heads heads (nn.HFTensor.PermuteHeads): new row h·d + 2i + j is old row
// h·d + j·d/2 + i.
func permuteRows[T any](w []T, rows, cols, heads int) ([]T, error) {
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 {
		return nil, fmt.Errorf("%d rows do not split into %d heads of an even size", rows, heads)
	}
	d := rows / heads
	out := make([]T, len(w))
	for h := 0; h < heads; h++ {
		for i := 0; i < d/2; i++ {
			for j := 0; j < 2; j++ {
				dst := (h*d + 2*i + j) * cols
				src := (h*d + j*d/2 + i) * cols
				copy(out[dst:dst+cols], w[src:src+cols])
			}
		}
	}
	return out, nil
}

// histogram counts a ternary tensor's −1, 0 and +1.
type histogram struct{ neg, zero, pos int }

func countCodes(codes []int8) histogram {
	var h histogram
	for _, c := range codes {
		switch c {
		case -1:
			h.neg++
		case 0:
			h.zero++
		default:
			h.pos++
		}
	}
	return h
}

func (h histogram) String() string {
	n := float64(max(1, h.neg+h.zero+h.pos))
	return fmt.Sprintf("−1 %5.1f%%  0 %5.1f%%  +1 %5.1f%%", 100*float64(h.neg)/n, 100*float64(h.zero)/n, 100*float64(h.pos)/n)
}
