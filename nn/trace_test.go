package nn

import (
	"math"
	"testing"
)

// CompareTraces gives bitvk check's figures (largest |Δ|, where, relative
// to the reference's largest |x|) and the per-position ones view draws.
func TestCompareTraces(t *testing.T) {
	nan := float32(math.NaN())
	ref := Trace{{
		{1, -4, 2, 0, 0.5, 1}, // attention block: 3 positions of width 2
		{2, 2, 2, 2, 2, 2},
	}}
	got := Trace{{
		{1, -4, 2.5, 0, 0.5, 0},
		{2, 2, nan, 2, 2, 2.2},
	}}
	d, err := CompareTraces(ref, got, 2)
	if err != nil {
		t.Fatal(err)
	}
	a := d[0][StageAttention]
	if a.MaxAbs != 1 || a.At != 2 || a.Rel != 0.25 {
		t.Errorf("attention: max %g at %d, rel %g; want 1 at 2, 0.25", a.MaxAbs, a.At, a.Rel)
	}
	if want := []float64{0, 0.125, 0.25}; !equalFloats(a.PosRel, want) {
		t.Errorf("attention per position %v, want %v", a.PosRel, want)
	}
	f := d[0][StageFFN]
	if !math.IsNaN(f.MaxAbs) || f.At != 1 || !math.IsNaN(f.PosRel[1]) || f.PosRel[0] != 0 {
		t.Errorf("ffn: a NaN must count as the largest difference: %+v", f)
	}
	if _, err := CompareTraces(ref, Trace{{{1}, {2}}}, 2); err == nil {
		t.Error("traces of different lengths compared without an error")
	}
	if _, err := CompareTraces(ref, Trace{}, 2); err == nil {
		t.Error("traces of different depths compared without an error")
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}
