package nntest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
)

// Ops are a backend's building blocks, exposed to the suite by a small
// adapter in the backend's own tests. Each takes and returns host slices;
// T is a number of positions (rows of x, q and the result).
type Ops interface {
	// Quantize is BitLinear's int8 quantization of one row.
	Quantize(x []float32) ([]int8, float32)
	// TernarySums returns Σ_i t[o][i]·q[t][i] for the ternary tensor w:
	// [T][w.Out], exact.
	TernarySums(w nn.Tensor, q []int8, T int) ([]int32, error)
	// BitLinear returns the projection of x [T][w.In] by w: [T][w.Out].
	BitLinear(w nn.Tensor, x []float32, T int) ([]float32, error)
	// RMSNorm returns x / sqrt(mean(x²)+eps)·w for one row.
	RMSNorm(x, w []float32, eps float32) []float32
	// RoPE rotates the first dim values of one head in place.
	RoPE(x []float32, pos, dim int, base float32, interleaved bool)
	// Attention is ref.Attention with k and v held as float16.
	Attention(q []float32, k, v [][]float32, heads, kvHeads, headDim int) []float32
	// Logits returns x · wᵀ for the float tensor w: [w.Out], the head held
	// in w's own type.
	Logits(w nn.Tensor, x []float32) ([]float32, error)
}

// RunOps checks each operation against nn/ref on the tiny model's tensors
// in every storage and on random inputs, including the extremes of the
// int8 range.
func RunOps(t *testing.T, ops Ops) {
	rng := rand.New(rand.NewPCG(1, 2))
	randVec := func(n int, scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * scale
		}
		return x
	}
	t.Run("Quantize", func(t *testing.T) {
		for _, x := range [][]float32{randVec(256, 3), randVec(768, 1e-7), make([]float32, 128), {1, -1, 0.5, -0.5, 127.0 / 254, 1.0 / 254, 3.0 / 254}} {
			wq, ws := ref.Quantize(x)
			gq, gs := ops.Quantize(x)
			if gs != ws {
				t.Errorf("scale %v, oracle %v", gs, ws)
			}
			for i := range wq {
				if gq[i] != wq[i] {
					t.Fatalf("code %d: %d, oracle %d (x=%v)", i, gq[i], wq[i], x[i])
				}
			}
		}
	})
	t.Run("RMSNorm", func(t *testing.T) {
		for _, n := range []int{1, 256, 2560} {
			x, w := randVec(n, 4), randVec(n, 1.1)
			near(t, "RMSNorm", ops.RMSNorm(x, w, 1e-5), ref.RMSNorm(x, w, 1e-5), 1e-5)
		}
	})
	t.Run("RoPE", func(t *testing.T) {
		for _, interleaved := range []bool{false, true} {
			for _, pos := range []int{0, 1, 17, 4095} {
				x := randVec(128, 2)
				want := append([]float32(nil), x...)
				ref.RoPE(want, pos, 128, 500000, interleaved)
				ops.RoPE(x, pos, 128, 500000, interleaved)
				near(t, fmt.Sprintf("RoPE (interleaved %v, position %d)", interleaved, pos), x, want, 1e-5)
			}
		}
	})
	t.Run("Attention", func(t *testing.T) {
		for _, c := range append([]attentionCase{attentionF16Case()}, attentionCases(randVec)...) {
			near(t, c.name, ops.Attention(c.q, c.k, c.v, c.heads, c.kvHeads, c.hd), ref.Attention(c.q, c.k, c.v, c.heads, c.kvHeads, c.hd), attentionTol)
		}
	})
	for _, st := range Storages {
		m := NewModel(t, "tiny", st, 3)
		l := m.Weights.Layers[0]
		t.Run("Ternary/"+string(st), func(t *testing.T) {
			for _, w := range []nn.Tensor{l.AttnQ, l.AttnK, l.FFNGate, l.FFNDown} {
				const T = 3
				q := make([]int8, T*w.In)
				for i := range q {
					q[i] = int8(rng.IntN(256) - 128)
				}
				q[0], q[1] = -128, 127
				got, err := ops.TernarySums(w, q, T)
				if err != nil {
					t.Fatal(err)
				}
				for tk := 0; tk < T; tk++ {
					want, err := ref.TernarySums(w, q[tk*w.In:(tk+1)*w.In])
					if err != nil {
						t.Fatal(err)
					}
					for o := range want {
						if g := got[tk*w.Out+o]; g != want[o] {
							t.Fatalf("%s position %d row %d: %d, oracle %d", w.Name, tk, o, g, want[o])
						}
					}
				}
				x := randVec(T*w.In, 2)
				y, err := ops.BitLinear(w, x, T)
				if err != nil {
					t.Fatal(err)
				}
				for tk := 0; tk < T; tk++ {
					want, err := ref.BitLinear(w, x[tk*w.In:(tk+1)*w.In])
					if err != nil {
						t.Fatal(err)
					}
					near(t, w.Name, y[tk*w.Out:(tk+1)*w.Out], want, 1e-5)
				}
			}
		})
		if st == StoreI2S {
			t.Run("Logits", func(t *testing.T) {
				x := randVec(m.Config.Embd, 1)
				got, err := ops.Logits(m.Weights.Output, x)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Logits(m.Weights.Output, x)
				if err != nil {
					t.Fatal(err)
				}
				near(t, "Logits", got, want, 1e-4)
			})
		}
	}
	// Heads stored as Microsoft's converter can store them: a backend may
	// quantize the activations to int8 against them (as ggml does), so the
	// tolerance is that of an int8 activation, 1e-2 of the largest logit.
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ6_K, gguf.TypeQ4_0} {
		t.Run("Logits/"+typ.String(), func(t *testing.T) {
			m := NewModelEmbd(t, "tiny", StoreI2S, typ, 3)
			x := randVec(m.Config.Embd, 1)
			got, err := ops.Logits(m.Weights.Output, x)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Logits(m.Weights.Output, x)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "Logits", got, want, 1e-2)
		})
	}
}

// attentionTol is the Attention check's tolerance, relative to the largest
// output. What Vulkan lets a device's exp (3 + 2·|x| ulp) and division
// (2.5 ulp) be off by moves these outputs by under 2e-6 of it
// (TestAttentionTolerance); the rest is float32 sums in any order. Faults
// are far above it: a position dropped from the softmax, the scale 1/hd
// for 1/√hd, queries not rounded to float16 (attentionF16Case).
const attentionTol = 1e-4

// attentionCase is one input of the Attention check.
type attentionCase struct {
	name               string
	q                  []float32   // [heads·hd]
	k, v               [][]float32 // [n][kvHeads·hd], float16 values
	heads, kvHeads, hd int
}

// attentionCases are random queries and float16 keys and values for 1, 2
// and 33 positions, drawn from randVec.
func attentionCases(randVec func(n int, scale float32) []float32) []attentionCase {
	var cases []attentionCase
	heads, kvHeads, hd := 4, 2, 64
	for _, n := range []int{1, 2, 33} {
		var k, v [][]float32
		for p := 0; p < n; p++ {
			k = append(k, f16Round(randVec(kvHeads*hd, 2)))
			v = append(v, f16Round(randVec(kvHeads*hd, 2)))
		}
		q := randVec(heads*hd, 2)
		cases = append(cases, attentionCase{fmt.Sprintf("Attention (%d positions)", n), q, k, v, heads, kvHeads, hd})
	}
	return cases
}

// attentionF16Case pins the rounding of the queries to float16 (nearest,
// ties to even), as bitnet.cpp rounds them before K·q: query element 0 of
// every head is 1 + 2^-11 + 2^-13, which rounds to 1 + 2^-10, element 1 is
// 1 + 2^-10; key 0 is 64 at element 0, key 1 64 at element 1, so both
// scores are 8 + 2^-7 exactly and the two positions weigh ½ each. Value
// element 0 is +1 and −1 (the output, 0, is exact on any device: the two
// weights are the same float), element 1 is 1 for both. Queries left in
// float32 make score 0 lower by 2^-8 − 2^-10 and the output's element 0
// about −0.0015, 15 times the tolerance; rounded toward zero, −0.0039.
func attentionF16Case() attentionCase {
	heads, kvHeads, hd := 4, 2, 64
	c := attentionCase{name: "Attention (queries rounded to float16)", heads: heads, kvHeads: kvHeads, hd: hd}
	c.q = make([]float32, heads*hd)
	for h := range heads {
		c.q[h*hd] = 1 + 0x1p-11 + 0x1p-13
		c.q[h*hd+1] = 1 + 0x1p-10
	}
	for p := range 2 {
		k, v := make([]float32, kvHeads*hd), make([]float32, kvHeads*hd)
		for h := range kvHeads {
			k[h*hd+p] = 64
			v[h*hd] = float32(1 - 2*p)
			v[h*hd+1] = 1
		}
		c.k, c.v = append(c.k, k), append(c.v, v)
	}
	return c
}

func f16Round(x []float32) []float32 {
	for i := range x {
		x[i] = nn.RoundF16(x[i])
	}
	return x
}

// near fails unless |got−want| ≤ tol·max|want| everywhere.
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, oracle %d", what, len(got), len(want))
	}
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	bound := tol * math.Max(scale, 1e-30)
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= bound) {
			t.Fatalf("%s[%d] = %v, oracle %v (|diff| %.3g > %.3g)", what, i, got[i], want[i], d, bound)
		}
	}
}
