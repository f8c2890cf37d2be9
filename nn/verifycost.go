package nn

import (
	"errors"
	"fmt"
	"time"
)

// VerifyCost times the passes that speculative decoding's verification
// makes: for k = 0…maxK drafted tokens, one Forward of k+1 tokens at
// positions pos… with the logits of every token (k = 0 is a plain decode
// step). times[k] is the best of reps runs; times[k]/times[0] is what
// verifying k drafts costs against decoding one token. The runs interleave
// the k (0, 1, …, maxK, then again) so that a machine's changing load
// falls on all of them alike.
//
// The cache positions before pos should hold a context (a prefill of pos
// tokens), as they do when a draft is verified; the positions pos…pos+maxK
// are overwritten.
func VerifyCost(b Backend, vocab, pos, maxK, reps int) ([]time.Duration, error) {
	switch {
	case maxK < 0 || reps < 1 || vocab < 1:
		return nil, errors.New("nn: VerifyCost needs maxK ≥ 0, reps ≥ 1 and a vocabulary")
	case pos < 0 || pos+maxK+1 > b.Context():
		return nil, fmt.Errorf("nn: VerifyCost: positions %d..%d are outside the context of %d", pos, pos+maxK, b.Context())
	}
	tokens := make([]int32, maxK+1)
	for i := range tokens {
		tokens[i] = int32((i*7919 + 13) % vocab)
	}
	logits := make([]float32, (maxK+1)*vocab)
	times := make([]time.Duration, maxK+1)
	for r := 0; r < reps; r++ {
		for k := 0; k <= maxK; k++ {
			start := time.Now()
			if err := b.Forward(tokens[:k+1], pos, logits[:(k+1)*vocab]); err != nil {
				return nil, err
			}
			if d := time.Since(start); r == 0 || d < times[k] {
				times[k] = d
			}
		}
	}
	return times, nil
}
