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
