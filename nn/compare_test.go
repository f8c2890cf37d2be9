package nn

import (
	"math"
	"testing"
)

func TestCompare(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	if c := Correlation(a, []float32{2, 4, 6, 8}); math.Abs(c-1) > 1e-12 {
		t.Errorf("Correlation of proportional vectors = %v", c)
	}
	if c := Correlation(a, []float32{4, 3, 2, 1}); math.Abs(c+1) > 1e-12 {
		t.Errorf("Correlation of reversed vectors = %v", c)
	}
	if b, m := Top2([]float32{0.5, 3, 2.5, -1}); b != 1 || m != 0.5 {
		t.Errorf("Top2 = %d, %v", b, m)
	}
	if kl := KLDivergence(a, []float32{11, 12, 13, 14}); kl > 1e-12 {
		t.Errorf("KL of shifted logits (the same distribution) = %v", kl)
	}
	// Two tokens, p = (1/2, 1/2), q = (e/(1+e), 1/(1+e)).
	q := []float32{1, 0}
	want := 0.5*math.Log(0.5/(math.E/(1+math.E))) + 0.5*math.Log(0.5/(1/(1+math.E)))
	if kl := KLDivergence([]float32{0, 0}, q); math.Abs(kl-want) > 1e-12 {
		t.Errorf("KL = %v, want %v", kl, want)
	}
}

func TestRowScaleAndPackI2S(t *testing.T) {
	vals := make([]int8, 2*TQGroup)
	vals[3] = 1 // group 0 non-zero, group 1 all zero
	if s, ok := RowScale(vals, []float32{0.5, 9}); !ok || s != 0.5 {
		t.Errorf("all-zero group's scale counted: %v, %v", s, ok)
	}
	vals[TQGroup+1] = -1
	if _, ok := RowScale(vals, []float32{0.5, 9}); ok {
		t.Error("a row mixing scales 0.5 and 9 reported one scale")
	}
	if s, ok := RowScale(vals, []float32{2, 2}); !ok || s != 2 {
		t.Errorf("equal scales: %v, %v", s, ok)
	}
	v := make([]int8, 128)
	v[0], v[32], v[64], v[96], v[1] = 1, -1, 0, 1, -1
	dst := make([]byte, 32)
	PackI2S(dst, v)
	if dst[0] != 2<<6|0<<4|1<<2|2 || dst[1] != 0<<6|1<<4|1<<2|1 || dst[2] != 0x55 {
		t.Errorf("packed bytes %08b %08b %08b", dst[0], dst[1], dst[2])
	}
}
