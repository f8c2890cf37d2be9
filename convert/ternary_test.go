package convert

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestUnpackHFGolden pins the packing of transformers' BitNet integration
// (integrations/bitnet.py). The first case is the example in the docstring
// of unpack_weights: packed [[0b10100001, 0b00011000], [0b10010000,
// 0b00001010]] unpacks to the 8×2 matrix below. The second is worked by hand
// from pack_weights' description: row r = i·rows/4 + p goes, as the code
// w+1, to bits 2i+1:2i of packed row p.
func TestUnpackHFGolden(t *testing.T) {
	for _, c := range []struct {
		name       string
		packed     []byte
		rows, cols int
		want       []int8
	}{
		{"unpack_weights docstring", []byte{0b10100001, 0b00011000, 0b10010000, 0b00001010}, 8, 2,
			[]int8{0, -1, -1, 1, -1, 1, -1, 1, 1, 0, 0, -1, 1, -1, 1, -1}},
		// rows r0..r3, one column; r0=-1 (code 0), r1=0 (1), r2=+1 (2), r3=0 (1):
		// one packed byte, fields from bit 0 up: 00, 01, 10, 01 = 0b01100100.
		{"one byte, four rows", []byte{0b01100100}, 4, 1, []int8{-1, 0, 1, 0}},
		// 4×3: packed row 0 holds rows 0..3 of each column.
		{"4×3", []byte{0b10101010, 0b00000000, 0b01010101}, 4, 3,
			[]int8{1, -1, 0, 1, -1, 0, 1, -1, 0, 1, -1, 0}},
	} {
		got, err := UnpackHF(c.packed, c.rows, c.cols)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: unpacked %v, want %v", c.name, got, c.want)
		}
		if back := packHF(c.want, c.rows, c.cols); !slices.Equal(back, c.packed) {
			t.Errorf("%s: packHF gives %08b, want %08b", c.name, back, c.packed)
		}
	}
	if _, err := UnpackHF([]byte{0b00001100}, 4, 1); err == nil || !strings.Contains(err.Error(), "code 3 in bits 3-2") {
		t.Errorf("code 3: %v", err)
	}
	if _, err := UnpackHF([]byte{0}, 6, 1); err == nil {
		t.Error("6 rows should be refused")
	}
	if _, err := UnpackHF([]byte{0, 0}, 4, 1); err == nil {
		t.Error("wrong byte count should be refused")
	}
}

func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rows, cols := 64, 40
	codes := make([]int8, rows*cols)
	for i := range codes {
		codes[i] = int8(r.IntN(3)) - 1
	}
	got, err := UnpackHF(packHF(codes, rows, cols), rows, cols)
	if err != nil || !slices.Equal(got, codes) {
		t.Fatalf("round trip differs (%v)", err)
	}
}

// TestAbsmean checks the formula on numbers worked by hand; the trainer
// round trip in convert_test.go checks it bit for bit against train.
func TestAbsmean(t *testing.T) {
	// γ = mean|W| = (0.5+1+0+2+0.1+0.4+3+1)/8 = 1 (in float32); the codes
	// are RoundClip(W/(1+1e-6)): 0.5 → 0.4999995 → 0, 2 → 1.999998 → 2 →
	// clipped to 1, 1 → 0.999999 → 1.
	w := []float32{0.5, -1, 0, 2, 0.1, -0.4, -3, 1}
	codes, gamma := Absmean(w)
	if gamma != 1 {
		t.Errorf("γ = %v, want 1", gamma)
	}
	if want := []int8{0, -1, 0, 1, 0, 0, -1, 1}; !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if c, g := Absmean([]float32{0, 0}); g != 0 || !slices.Equal(c, []int8{0, 0}) {
		t.Errorf("zeros: %v %v", c, g)
	}
}

func TestPermuteRows(t *testing.T) {
	// Two heads of d = 4 rows, one column: HF rows per head are
	// [x0, x1, y0, y1] (RoPE pairs (x_i, y_i)); GGUF wants [x0, y0, x1, y1].
	w := []int{0, 1, 2, 3, 10, 11, 12, 13}
	got, err := permuteRows(w, 8, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 2, 1, 3, 10, 12, 11, 13}; !slices.Equal(got, want) {
		t.Errorf("permuted %v, want %v", got, want)
	}
	if _, err := permuteRows(w, 8, 1, 3); err == nil {
		t.Error("3 heads of 8 rows should be refused")
	}
}

func TestScaleFromHF(t *testing.T) {
	if g, err := scaleFromHF(4, true); err != nil || g != 0.25 {
		t.Errorf("bitlinear divides: %v %v", g, err)
	}
	if g, err := scaleFromHF(4, false); err != nil || g != 4 {
		t.Errorf("autobitlinear multiplies: %v %v", g, err)
	}
	for _, bad := range []float32{0, -1, float32(math.NaN()), float32(math.Inf(1))} {
		if _, err := scaleFromHF(bad, true); err == nil {
			t.Errorf("weight_scale %v accepted", bad)
		}
	}
}
