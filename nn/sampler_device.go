// Sampling split between a device and the host. Sample is
//
//	penalize → select a candidate set → keep (top-k, top-p, min-p) → draw
//
// and the selection is the only step that reads the whole vocabulary. A
// device that holds the logits can penalize and select there (SamplePlan
// says what to select), send back the few candidates with their penalized
// logits, and SampleCandidates runs the rest: the same keepTopK or
// keepThreshold, drawFrom and one uniform draw that Sample runs, so the
// token is the one Sample would pick, by construction.
//
// The candidate set is bounded when top-k is on (exactly the k best) or,
// with top-k off, when min-p is on and top-p is off (every token within
// ln(min_p) of the best, or a superset of them). Otherwise (top-p without
// top-k, no truncation, typical sampling, Mirostat, XTC or DRY) the kept set and the draw depend on the mass of
// the whole vocabulary, summed in float64 in Sample's order, so the device
// must send the logits instead: NeedLogits.

package nn

import (
	"errors"
	"fmt"
)

// CandidateRule says which tokens a device selects for SampleCandidates.
type CandidateRule int

const (
	// NeedLogits: no bounded candidate set; the host samples the logits.
	NeedLogits CandidateRule = iota
	// TopKCandidates: exactly the K best penalized logits, ranked by logit
	// and then by lower id (−0 ties +0), NaN and −Inf never among them;
	// fewer when fewer tokens qualify.
	TopKCandidates
	// MinPCandidates: every token whose penalized logit x has
	// x − max ≥ LnMinP (in float64), max being the largest penalized logit,
	// and the best token itself; a superset is fine (a device compares in
	// float32 with a safety margin), NaN and −Inf are dropped.
	MinPCandidates
)

// SamplePlan is what a device computes for one step of a Sampler.
type SamplePlan struct {
	Rule   CandidateRule
	K      int     // TopKCandidates: how many
	LnMinP float64 // MinPCandidates: ln(MinP), ≤ 0
	// Penalties, applied by Penalize to the tokens PenaltyWindow lists
	// before the selection. Repeat 1 is off; Frequency and Presence 0 still
	// compute x − (count·0 + 0).
	Repeat, Frequency, Presence float32
}

// Plan returns what a device must select for the next step over a
// vocabulary of vocab tokens. It does not change the Sampler.
func (s *Sampler) Plan(vocab int) SamplePlan {
	p := SamplePlan{Repeat: s.repeat, Frequency: s.freq, Presence: s.presence}
	switch {
	case s.dry || len(s.biasIDs) > 0:
		// DRY's penalties come from the whole history, and the device
		// has no logit biases, even for the argmax: the host samples the
		// logits.
	case s.temp == 0:
		p.Rule, p.K = TopKCandidates, 1 // the argmax: no draw
	case s.mirostat != 0 || s.typical > 0 || s.xtcP > 0:
		// These read the softmax of the whole candidate set (and Mirostat
		// keeps state, XTC draws twice): the host samples the logits.
	case s.topK > 0 && s.topK < vocab:
		p.Rule, p.K = TopKCandidates, s.topK
	case s.minP && s.topP == 0:
		p.Rule, p.LnMinP = MinPCandidates, s.lnMinP
	}
	return p
}

// PenaltyWindow returns the distinct ids that the penalties rewrite for
// this history (its last RepeatLastN ids that lie in [0, vocab)), in order
// of first occurrence, and how often each occurs there. Both are empty when
// the penalties are off. The slices are the Sampler's own, valid until its
// next call.
func (s *Sampler) PenaltyWindow(history []int32, vocab int) (ids, counts []int32) {
	s.window(history, vocab)
	s.counts = s.counts[:0]
	for _, id := range s.touched {
		s.counts = append(s.counts, s.mark[id])
	}
	return s.touched, s.counts
}

// ErrCandidates: SampleCandidates was given a candidate set that its plan
// cannot have produced.
var ErrCandidates = errors.New("nn: sampler: bad candidate set")

// SampleCandidates returns the token Sample would return for logits whose
// penalized values and selection a device computed under Plan(vocab): ids
// and logits (penalized, as Penalize computes them) are the candidates, in
// any order. Like Sample, it consumes one draw of the stream when the
// temperature is above 0, none otherwise, and none on an error.
func (s *Sampler) SampleCandidates(vocab int, ids []int32, logits []float32) (int32, error) {
	p := s.Plan(vocab)
	switch {
	case p.Rule == NeedLogits:
		return -1, fmt.Errorf("%w: this sampler needs the logits (top-p without top-k, no truncation, typical, Mirostat, XTC or DRY)", ErrCandidates)
	case len(ids) != len(logits):
		return -1, fmt.Errorf("%w: %d ids, %d logits", ErrCandidates, len(ids), len(logits))
	case p.Rule == TopKCandidates && len(ids) > p.K:
		return -1, fmt.Errorf("%w: %d candidates for top-%d", ErrCandidates, len(ids), p.K)
	}
	if cap(s.cand) < len(ids) {
		s.cand = make([]candidate, 0, len(ids))
	}
	c := s.cand[:0]
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return -1, fmt.Errorf("%w: id %d outside the vocabulary of %d", ErrCandidates, id, vocab)
		}
		c = append(c, candidate{id, logits[i]})
	}
	s.cand = c
	if s.temp == 0 {
		return pickBest(c)
	}
	var err error
	if p.Rule == TopKCandidates {
		c, _, err = s.keepTopK(c)
	} else {
		c, _, err = s.keepThreshold(c, 0)
	}
	if err != nil {
		return -1, err
	}
	return s.drawFrom(c, s.uniform()), nil
}
