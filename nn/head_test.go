package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/gguf"
)

// TestHeadBlocks: codes times scales give, bit for bit, the values
// gguf.Decode gives for the stored blocks, and for an F16 tensor converted
// to each block type the values of its encoding.
func TestHeadBlocks(t *testing.T) {
	const in, out = 512, 3
	rng := rand.New(rand.NewPCG(3, 4))
	src := make([]float32, in*out)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * float64(1+i%7))
	}
	enc := map[gguf.Type]func([]float32) ([]byte, error){
		gguf.TypeQ8_0: gguf.EncodeQ8_0, gguf.TypeQ6_K: gguf.EncodeQ6_K, gguf.TypeQ4_0: gguf.EncodeQ4_0,
	}
	f16 := Tensor{Name: "f16", Type: TypeF16, In: in, Out: out, Data: gguf.EncodeF16(src)}
	for _, h := range []HeadType{HeadQ8_0, HeadQ6_K, HeadQ4_0} {
		bt := h.blockType()
		data, err := enc[bt](src)
		if err != nil {
			t.Fatal(err)
		}
		stored := Tensor{Name: "stored", Type: bt, In: in, Out: out, Data: data}
		if got := HeadStored.For(bt); got != h {
			t.Errorf("HeadStored.For(%s) = %s, want %s", bt, got, h)
		}
		// The F16 tensor converted: its rows decoded, then encoded per row.
		f16Vals := make([]float32, in*out)
		if err := gguf.Decode(TypeF16, f16.Data, in*out, f16Vals); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			t    Tensor
			want func(r int) []float32
		}{
			{"stored", stored, func(r int) []float32 {
				v := make([]float32, in*out)
				if err := gguf.Decode(bt, data, in*out, v); err != nil {
					t.Fatal(err)
				}
				return v[r*in : (r+1)*in]
			}},
			{"from f16", f16, func(r int) []float32 {
				b, _ := enc[bt](f16Vals[r*in : (r+1)*in])
				v := make([]float32, in)
				if err := gguf.Decode(bt, b, in, v); err != nil {
					t.Fatal(err)
				}
				return v
			}},
		} {
			codes, scales, tmp := make([]int8, in), make([]float32, in/h.Group()), make([]float32, in)
			for r := 0; r < out; r++ {
				if err := HeadBlocks(tc.t, r, h, codes, scales, tmp); err != nil {
					t.Fatalf("%s %s row %d: %v", h, tc.name, r, err)
				}
				want := tc.want(r)
				for i := range want {
					if got := scales[i/h.Group()] * float32(codes[i]); math.Float32bits(got) != math.Float32bits(want[i]) {
						t.Fatalf("%s %s row %d value %d: %g, decoded %g", h, tc.name, r, i, got, want[i])
					}
				}
				if h != HeadQ6_K {
					continue
				}
				// HeadQ6K: the same values from d, sc and codes.
				sc, d := make([]int8, in/16), make([]float32, in/256)
				if err := HeadQ6K(tc.t, r, codes, sc, d, tmp); err != nil {
					t.Fatalf("HeadQ6K %s row %d: %v", tc.name, r, err)
				}
				for i := range want {
					if got := d[i/256] * float32(sc[i/16]) * float32(codes[i]); math.Float32bits(got) != math.Float32bits(want[i]) {
						t.Fatalf("HeadQ6K %s row %d value %d: %g, decoded %g", tc.name, r, i, got, want[i])
					}
				}
			}
		}
	}
	if err := HeadBlocks(f16, 0, HeadF16, make([]int8, in), make([]float32, in), make([]float32, in)); err == nil {
		t.Errorf("HeadBlocks(f16 head type): no error")
	}
	if err := HeadBlocks(Tensor{Name: "odd", Type: TypeF16, In: 100, Out: 1, Data: make([]byte, 200)}, 0, HeadQ6_K,
		make([]int8, 100), make([]float32, 100), make([]float32, 100)); err == nil {
		t.Errorf("HeadBlocks of a width that is not a multiple of 256 to Q6_K: no error")
	}
	if err := HeadQ6K(Tensor{Name: "odd", Type: TypeF16, In: 100, Out: 1, Data: make([]byte, 200)}, 0,
		make([]int8, 100), make([]int8, 100), make([]float32, 100), make([]float32, 100)); err == nil {
		t.Errorf("HeadQ6K of a width that is not a multiple of 256: no error")
	}
	if err := HeadQ6K(f16, 0, make([]int8, in), make([]int8, in/16-1), make([]float32, 2), make([]float32, in)); err == nil {
		t.Errorf("HeadQ6K with too few group scales: no error")
	}
	for _, s := range []string{"", "stored", "F16", "q8", "q6_k", "Q4_0", "q8_0"} {
		if _, err := ParseHeadType(s); err != nil {
			t.Errorf("ParseHeadType(%q): %v", s, err)
		}
	}
	if _, err := ParseHeadType("q5_k"); err == nil {
		t.Errorf("ParseHeadType(q5_k): no error")
	}
}
