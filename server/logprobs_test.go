package server

import (
	"math"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// TestLogprobOf holds logprobOf to the plain log-softmax (math.Exp over
// every logit that is not NaN) and its top alternatives to a sort.
func TestLogprobOf(t *testing.T) {
	tok, err := nn.NewTokenizer(tiny(t).File)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, 300)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)*0.7)) * 9
	}
	logits[17] = float32(math.NaN())
	logits[40], logits[41] = 12, 12 // a tie: the lower id first
	logits[99] = float32(math.Inf(-1))
	var sum float64
	for _, x := range logits {
		if x == x {
			sum += math.Exp(float64(x) - 12)
		}
	}
	lse := 12 + math.Log(sum)
	for _, k := range []int{0, 1, 3, 20} {
		lp := logprobOf(tok, logits, 5, k)
		if want := float64(logits[5]) - lse; math.Abs(lp.Logprob-want) > 1e-12 {
			t.Errorf("k=%d: logprob %v, want %v", k, lp.Logprob, want)
		}
		if len(lp.Top) != k {
			t.Fatalf("k=%d: %d alternatives", k, len(lp.Top))
		}
		for i, a := range lp.Top {
			if want := float64(logits[a.ID]) - lse; math.Abs(a.Logprob-want) > 1e-12 {
				t.Errorf("k=%d: alternative %d (id %d): %v, want %v", k, i, a.ID, a.Logprob, want)
			}
			if i > 0 {
				b := lp.Top[i-1]
				if b.Logprob < a.Logprob || b.Logprob == a.Logprob && b.ID > a.ID {
					t.Errorf("k=%d: alternatives %d and %d out of order: %+v, %+v", k, i-1, i, b, a)
				}
			}
		}
		if k >= 2 && (lp.Top[0].ID != 40 || lp.Top[1].ID != 41) {
			t.Errorf("k=%d: top two %d, %d; want the tie 40, 41", k, lp.Top[0].ID, lp.Top[1].ID)
		}
		for _, a := range lp.Top {
			if a.ID == 17 || a.ID == 99 {
				t.Errorf("k=%d: id %d (NaN or −∞) among the alternatives", k, a.ID)
			}
		}
	}

	// Logits JSON cannot carry: a −∞ or NaN logit is "unlikely", +∞ logits
	// share the probability, and every value stays finite.
	odd := []float32{1, float32(math.Inf(-1)), float32(math.NaN()), 2}
	if lp := logprobOf(tok, odd, 1, 2); lp.Logprob != unlikely || lp.Top[0].ID != 3 || lp.Top[1].ID != 0 {
		t.Errorf("a −∞ logit: %+v", lp)
	}
	if lp := logprobOf(tok, odd, 2, 0); lp.Logprob != unlikely {
		t.Errorf("a NaN logit: %+v", lp)
	}
	inf := []float32{1, float32(math.Inf(1)), 3, float32(math.Inf(1))}
	lp := logprobOf(tok, inf, 1, 3)
	if want := -math.Log(2); lp.Logprob != want || lp.Top[0].Logprob != want || lp.Top[1].Logprob != want || lp.Top[2].Logprob != unlikely {
		t.Errorf("two +∞ logits: %+v", lp)
	}
	allNeg := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	if lp := logprobOf(tok, allNeg, 0, 1); lp.Logprob != unlikely || lp.Top[0].Logprob != unlikely {
		t.Errorf("every logit −∞: %+v", lp)
	}
}
