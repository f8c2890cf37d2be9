// Token sampling: one decoding step's logits in, one token id out, with the
// behaviour of llama.cpp's default sampler chain, in its order:
//
//	logit bias → penalties → DRY → top-k → typical → top-p → min-p → XTC
//	→ temperature → draw
//
// or, with Mirostat on, llama.cpp's logit bias → penalties → DRY →
// temperature → Mirostat. Logit biases and DRY rewrite a few logits as
// the penalties do (penalize, dryPenalize); typical, XTC (keepSorted) and
// Mirostat (sampleMirostat) sort the candidates they read: rarely used
// modes that the fast paths below leave out.
//
//  1. Penalties rewrite the logits of the tokens that occur in the last
//     RepeatLastN ids of the history (on a private copy of those few
//     logits; the caller's slice is never written):
//     x ← x/r if x > 0 else x·r (repeat penalty r), then
//     x ← x − count·FrequencyPenalty − PresencePenalty.
//  2. Temperature ≤ 0 stops here: the token is the argmax of the penalized
//     logits (ties → lowest id). Truncations cannot change an argmax.
//  3. top-k keeps the k best candidates, found with a bounded min-heap
//     (O(V log k)) and then sorted (O(k log k)).
//  4. top-p keeps the shortest best-first prefix whose probability mass,
//     softmax at temperature 1 over the candidates still kept, is ≥ p.
//  5. min-p keeps the candidates with p_i ≥ min_p·p_max, i.e.
//     x_i − x_max ≥ ln(min_p), which needs no normalizer.
//  6. Temperature T divides the kept logits; the draw is one uniform
//     u ∈ [0,1) from a PCG stream, and the token is the first kept candidate,
//     in descending probability order, whose cumulative weight
//     Σ exp((x_j − x_max)/T) exceeds u·Σ_kept.
//
// The vocabulary is never sorted as a whole. With top-k on, only the k kept
// are sorted. With top-k off, min-p (when on) bounds the kept set by a logit
// threshold, so one pass collects it and only it is sorted. Otherwise (top-p
// alone, or no truncation at all) the mass over the whole vocabulary is
// needed anyway: one pass computes the softmax terms and, at once, a
// histogram of the mass over logit bins (binsPerNat bins per nat below the
// max). The ordering of bins is the ordering of their tokens, so walking the
// bins best first finds the one bin in which the cumulative mass crosses its
// target (p·Z for top-p, u·Z_T for the draw); only that bin's tokens are then
// collected and sorted. Cost: O(V) exps plus the sort of one or two bins.
//
// Sample is penalize → select candidates → keep → draw; a device may do the
// first two and the host the rest over the candidates (SampleCandidates, in
// sampler_device.go): the same code, so the same token.
//
// Candidates are ordered by logit, then by lower id, so every step and tie is
// deterministic. NaN and −Inf logits are never candidates; if any logit is
// +Inf, the +Inf tokens are the only candidates and share the mass equally.

package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Errors of Sample; NewSampler's errors name the bad field instead.
var (
	// ErrNoLogits: Sample was given an empty logits slice.
	ErrNoLogits = errors.New("nn: sampler: empty logits")
	// ErrNoCandidate: after penalties every logit is NaN or −Inf, so no token
	// has a probability (a broken forward pass, usually).
	ErrNoCandidate = errors.New("nn: sampler: every logit is NaN or -Inf")
)

// SamplerConfig configures a Sampler. Zero values mean "off" except where
// noted; the defaults of a llama.cpp user are Temperature 0.8, TopK 40,
// TopP 0.95, MinP 0.05, RepeatPenalty 1.
type SamplerConfig struct {
	Temperature      float32 // <= 0: greedy (argmax; ties → lowest id)
	TopK             int     // <= 0: off
	TopP             float32 // >= 1 or <= 0: off
	MinP             float32 // <= 0: off; at most 1
	RepeatPenalty    float32 // 0 or 1: off. Tokens in the window: x/r if x > 0, x·r otherwise (llama.cpp's rule)
	RepeatLastN      int     // window of history the penalties look at; 0 means 64; -1 means all of it
	FrequencyPenalty float32 // OpenAI: x -= count(token in window)·FrequencyPenalty
	PresencePenalty  float32 // OpenAI: x -= PresencePenalty if the token is in the window
	Seed             uint64  // seeds the PCG stream of draws
	// TypicalP is locally typical sampling (llama.cpp's typical_p), between
	// top-k and top-p; >= 1 or <= 0: off.
	TypicalP float32
	// Mirostat is 1 or 2 for Mirostat (v1) or Mirostat 2.0 in place of
	// top-k, typical, top-p and min-p, as llama.cpp does; 0: off.
	Mirostat    int
	MirostatTau float32 // Mirostat's target surprise in bits; 0 means 5
	MirostatEta float32 // Mirostat's learning rate; 0 means 0.1
	// XTCProbability is how often XTC ("exclude top choices", after min-p)
	// drops the likeliest tokens: all but the least likely of those with
	// probability >= XTCThreshold, when there are two or more; <= 0: off.
	XTCProbability float32
	XTCThreshold   float32 // 0 means 0.1; above 0.5 XTC never acts
	// DRY ("don't repeat yourself", after the penalties): a token that
	// would extend a sequence repeated from earlier in the history, L
	// tokens long with L >= DRYAllowedLength, loses
	// DRYMultiplier·DRYBase^(L − DRYAllowedLength) from its logit. A
	// repeat never reaches back past a token of DRYBreakers (ids whose
	// text contains a sequence breaker, e.g. a newline), and those tokens
	// are never penalized. (llama.cpp also matches a breaker of several
	// characters split over tokens; these are single tokens, which covers
	// its default breakers, one character each.) DRYMultiplier <= 0: off.
	DRYMultiplier    float32
	DRYBase          float32 // 0 means 1.75; at least 1
	DRYAllowedLength int     // 0 means 2
	DRYLastN         int     // how much of the history DRY looks at; 0 or -1: all of it
	DRYBreakers      []int32
	// LogitBias is added to the logits of its tokens before anything else
	// (OpenAI's logit_bias); −Inf bans a token. Ids outside the vocabulary
	// are ignored.
	LogitBias map[int32]float32
}

const (
	defaultRepeatLastN = 64 // llama.cpp's default penalty_last_n
	// llama.cpp's Mirostat defaults (mirostat_tau, mirostat_eta) and the
	// number of best tokens Mirostat (v1) estimates its Zipf exponent from.
	defaultMirostatTau = 5.0
	defaultMirostatEta = 0.1
	mirostatM          = 100
	// The mass histogram (top-k off): bin b holds the tokens with
	// b ≤ (x_max − x)·binsPerNat/max(1,T) < b+1, the last bin everything
	// further down. 64 nats at T ≤ 1 reach weights of e^-64 ≈ 1.6e-28, far
	// below any p or u a float can tell apart from 1.
	binsPerNat = 16
	nBins      = 1024
	// pcgStream is the second 64-bit word of the PCG state; the first is the
	// seed. Any constant works; this one (2^64/φ) keeps seed 0 away from the
	// all-zero state.
	pcgStream = 0x9e3779b97f4a7c15
	// maxPrealloc bounds the penalty buffers allocated up front.
	maxPrealloc = 1024
)

// candidate is a token with its (penalized) logit.
type candidate struct {
	id    int32
	logit float32
}

// Sampler draws token ids from logits. It keeps its scratch buffers between
// calls, so steady-state decoding allocates nothing; it is therefore not safe
// for concurrent use: give each sequence its own Sampler.
type Sampler struct {
	temp      float64 // > 0; 0 means greedy
	topK      int     // > 0, or 0 for off
	topP      float64 // in (0,1), or 0 for off
	minP      bool
	lnMinP    float64 // ln(MinP) when minP
	repeat    float32 // 1 means off
	freq      float32
	presence  float32
	lastN     int // >= 0, or -1 for the whole history
	penalties bool
	typical   float64 // in (0,1), or 0 for off
	mirostat  int     // 0 (off), 1 or 2
	tau, eta  float64 // Mirostat's target surprise (bits) and learning rate
	mu        float64 // Mirostat's running surprise bound, 2·tau at first
	xtcP      float64 // XTC's probability in (0,1], or 0 for off
	xtcT      float64 // XTC's threshold
	dry       bool
	dryMult   float64
	dryBase   float64
	dryMinLen int // DRYAllowedLength
	dryLastN  int // > 0, or 0 for the whole history
	dryBreak  map[int32]bool
	dryZ      []int32 // the Z-array of the reversed window
	dryLen    []int32 // [vocab] the longest repeat each token would extend (0: none)
	dryIDs    []int32 // the tokens with dryLen > 0
	biasIDs   []int32 // LogitBias's tokens, in id order
	bias      []float32

	pcg *rand.PCG

	// Penalty state of the current call: mark[id] counts id's occurrences in
	// the window (−1 for a token only a logit bias or DRY rewrites, zero for
	// untouched ids; reset through touched at the next call), touched lists
	// the rewritten ids, pen their new logits.
	mark    []int32
	touched []int32
	pen     []float32

	counts []int32 // PenaltyWindow's counts, parallel to touched

	cand []candidate // heap, then sorted kept candidates (or one bin's)
	w    []float64   // draw weights of the kept candidates
	// Typical sampling's order of the candidates and the ones it keeps.
	order []int
	kept  []candidate

	// Mass histogram of the top-k-off paths: per bin, the mass at
	// temperature 1 (m1) and T (mT), Σ exp((x − mx)/t), and the token count.
	// The kept set is every bin below cutBin plus the best cutLen tokens of
	// bin cutBin (cutBin = nBins: every bin). candBin is the bin whose sorted
	// tokens s.cand holds, or -1.
	m1, mT   [nBins]float64
	n        [nBins]int32
	mx       float64 // the largest penalized logit
	topID    int32   // its id
	binScale float64 // bins per unit of logit
	cutBin   int
	cutLen   int
	candBin  int
}

// NewSampler validates c and returns a Sampler. Every error names the field
// and its value.
func NewSampler(c SamplerConfig) (*Sampler, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("nn: sampler config: %s = %v, want %s", field, v, want)
	}
	nan := func(x float32) bool { return x != x }
	inf := func(x float32) bool { return math.IsInf(float64(x), 0) }
	switch {
	case nan(c.Temperature) || math.IsInf(float64(c.Temperature), 1):
		return nil, bad("Temperature", c.Temperature, "a finite number (<= 0 for greedy)")
	case nan(c.TopP):
		return nil, bad("TopP", c.TopP, "a number (<= 0 or >= 1 for off)")
	case nan(c.MinP) || c.MinP > 1:
		return nil, bad("MinP", c.MinP, "at most 1 (<= 0 for off)")
	case nan(c.RepeatPenalty) || c.RepeatPenalty < 0 || inf(c.RepeatPenalty):
		return nil, bad("RepeatPenalty", c.RepeatPenalty, "a finite number >= 0 (0 or 1 for off)")
	case c.RepeatLastN < -1:
		return nil, bad("RepeatLastN", c.RepeatLastN, ">= -1 (0 for 64, -1 for the whole history)")
	case nan(c.FrequencyPenalty) || inf(c.FrequencyPenalty):
		return nil, bad("FrequencyPenalty", c.FrequencyPenalty, "a finite number")
	case nan(c.PresencePenalty) || inf(c.PresencePenalty):
		return nil, bad("PresencePenalty", c.PresencePenalty, "a finite number")
	case nan(c.TypicalP):
		return nil, bad("TypicalP", c.TypicalP, "a number (<= 0 or >= 1 for off)")
	case c.Mirostat < 0 || c.Mirostat > 2:
		return nil, bad("Mirostat", c.Mirostat, "0 (off), 1 or 2")
	case nan(c.MirostatTau) || c.MirostatTau < 0 || inf(c.MirostatTau):
		return nil, bad("MirostatTau", c.MirostatTau, "a finite number >= 0 (0 for 5)")
	case nan(c.MirostatEta) || c.MirostatEta < 0 || inf(c.MirostatEta):
		return nil, bad("MirostatEta", c.MirostatEta, "a finite number >= 0 (0 for 0.1)")
	case nan(c.XTCProbability) || c.XTCProbability > 1:
		return nil, bad("XTCProbability", c.XTCProbability, "at most 1 (<= 0 for off)")
	case nan(c.XTCThreshold) || c.XTCThreshold < 0 || c.XTCThreshold > 1:
		return nil, bad("XTCThreshold", c.XTCThreshold, "between 0 and 1 (0 for 0.1)")
	case nan(c.DRYMultiplier) || inf(c.DRYMultiplier):
		return nil, bad("DRYMultiplier", c.DRYMultiplier, "a finite number (<= 0 for off)")
	case nan(c.DRYBase) || inf(c.DRYBase) || c.DRYBase != 0 && c.DRYBase < 1:
		return nil, bad("DRYBase", c.DRYBase, "a finite number >= 1 (0 for 1.75)")
	case c.DRYAllowedLength < 0:
		return nil, bad("DRYAllowedLength", c.DRYAllowedLength, ">= 0 (0 for 2)")
	case c.DRYLastN < -1:
		return nil, bad("DRYLastN", c.DRYLastN, ">= -1 (0 or -1 for the whole history)")
	}
	for id, b := range c.LogitBias {
		if nan(b) || math.IsInf(float64(b), 1) {
			return nil, bad(fmt.Sprintf("LogitBias[%d]", id), b, "a number below +Inf (-Inf bans the token)")
		}
	}
	s := &Sampler{
		repeat:   1,
		freq:     c.FrequencyPenalty,
		presence: c.PresencePenalty,
		lastN:    c.RepeatLastN,
		pcg:      rand.NewPCG(c.Seed, pcgStream),
	}
	if c.Temperature > 0 {
		s.temp = float64(c.Temperature)
	}
	if c.TopK > 0 {
		s.topK = c.TopK
	}
	if c.TopP > 0 && c.TopP < 1 {
		s.topP = float64(c.TopP)
	}
	if c.MinP > 0 {
		s.minP = true
		s.lnMinP = math.Log(float64(c.MinP))
	}
	if c.RepeatPenalty != 0 && c.RepeatPenalty != 1 {
		s.repeat = c.RepeatPenalty
	}
	if s.lastN == 0 {
		s.lastN = defaultRepeatLastN
	}
	if c.TypicalP > 0 && c.TypicalP < 1 {
		s.typical = float64(c.TypicalP)
	}
	s.mirostat = c.Mirostat
	s.tau, s.eta = float64(c.MirostatTau), float64(c.MirostatEta)
	if s.tau == 0 {
		s.tau = defaultMirostatTau
	}
	if s.eta == 0 {
		s.eta = defaultMirostatEta
	}
	s.mu = 2 * s.tau
	s.xtcT = float64(c.XTCThreshold)
	if s.xtcT == 0 {
		s.xtcT = 0.1
	}
	if c.XTCProbability > 0 && s.xtcT <= 0.5 { // above 0.5 only one token can qualify
		s.xtcP = float64(c.XTCProbability)
	}
	for id := range c.LogitBias {
		s.biasIDs = append(s.biasIDs, id)
	}
	slices.Sort(s.biasIDs)
	for _, id := range s.biasIDs {
		s.bias = append(s.bias, c.LogitBias[id])
	}
	if c.DRYMultiplier > 0 {
		s.dry, s.dryMult, s.dryBase, s.dryMinLen = true, float64(c.DRYMultiplier), float64(c.DRYBase), c.DRYAllowedLength
		if s.dryBase == 0 {
			s.dryBase = 1.75
		}
		if s.dryMinLen == 0 {
			s.dryMinLen = 2
		}
		s.dryLastN = max(c.DRYLastN, 0)
		s.SetDRYBreakers(c.DRYBreakers)
	}
	s.penalties = s.repeat != 1 || s.freq != 0 || s.presence != 0
	if s.penalties && s.lastN > 0 {
		n := min(s.lastN, maxPrealloc)
		s.touched = make([]int32, 0, n)
		s.pen = make([]float32, 0, n)
	}
	return s, nil
}

// SetDRYBreakers replaces the sampler's DRYBreakers: the caller that made
// it before the model's vocabulary was at hand gives them once it is.
func (s *Sampler) SetDRYBreakers(ids []int32) {
	s.dryBreak = make(map[int32]bool, len(ids))
	for _, id := range ids {
		s.dryBreak[id] = true
	}
}

// Reseed restarts the stream of draws as if the Sampler had been made with
// Seed = seed.
func (s *Sampler) Reseed(seed uint64) { s.pcg.Seed(seed, pcgStream) }

// Greedy reports whether Sample is a plain argmax of the logits (temperature
// 0, no penalties), which a Picker backend can compute on its device.
func (s *Sampler) Greedy() bool {
	return s.temp == 0 && !s.penalties && !s.dry && len(s.biasIDs) == 0
}

// Sample returns the next token id for one step's logits (one per vocabulary
// entry) given the ids generated so far (history, oldest first; ids outside
// [0, len(logits)) are ignored). It never writes logits or history. A
// non-greedy call consumes exactly one draw of the stream (two with XTC
// on); a greedy one none.
func (s *Sampler) Sample(logits []float32, history []int32) (int32, error) {
	if len(logits) == 0 {
		return -1, ErrNoLogits
	}
	if len(logits) > math.MaxInt32 {
		return -1, fmt.Errorf("nn: sampler: %d logits, more than int32 ids can name", len(logits))
	}
	s.penalize(logits, history)
	if s.temp == 0 {
		return pickBest(s.selectTop(logits, 1))
	}
	if s.mirostat != 0 {
		return s.sampleMirostat(logits)
	}
	c, binned, err := s.truncate(logits)
	if err != nil {
		return -1, err
	}
	u := s.uniform()
	if binned {
		return s.drawBinned(logits, u), nil
	}
	return s.drawFrom(c, u), nil
}

// uniform returns a float64 uniform in [0,1): the top 53 bits of one PCG
// output, times 2^-53.
func (s *Sampler) uniform() float64 { return float64(s.pcg.Uint64()>>11) * 0x1p-53 }

// penalize fills touched/pen/mark with the penalized logits of the tokens in
// the window (see window and Penalize).
func (s *Sampler) penalize(logits []float32, history []int32) {
	s.window(history, len(logits))
	for _, id := range s.touched {
		x := logits[id]
		if j, ok := slices.BinarySearch(s.biasIDs, id); ok {
			x += s.bias[j] // the bias first, as in llama.cpp's chain
		}
		s.pen = append(s.pen, s.Penalize(x, s.mark[id]))
	}
	if len(s.biasIDs) > 0 {
		if len(s.mark) < len(logits) {
			s.mark = make([]int32, len(logits))
		}
		v := int32(len(logits))
		for j, id := range s.biasIDs {
			if id >= 0 && id < v && s.mark[id] == 0 { // biased, not in the penalty window
				s.mark[id] = -1
				s.touched = append(s.touched, id)
				s.pen = append(s.pen, logits[id]+s.bias[j])
			}
		}
	}
	if s.dry {
		s.dryPenalize(logits, history)
	}
}

// dryPenalize subtracts DRY's penalties from the logits of the tokens that
// would extend a repeat (into pen, as the other penalties: a token that
// only DRY penalizes is marked −1). The repeats come from the Z-array of
// the reversed window w: z[k] is how many tokens ending at w[n−1−k] equal
// the last z[k] tokens of w, so w[n−k] would extend a repeat of that
// length. Repeats are cut at the last breaker token, as the window's own
// suffix cannot run across it.
func (s *Sampler) dryPenalize(logits []float32, history []int32) {
	for _, id := range s.dryIDs {
		s.dryLen[id] = 0
	}
	s.dryIDs = s.dryIDs[:0]
	w := history
	if s.dryLastN > 0 && len(w) > s.dryLastN {
		w = w[len(w)-s.dryLastN:]
	}
	n := len(w)
	if n <= s.dryMinLen {
		return
	}
	limit := n // the longest repeat: the tokens after the last breaker
	for i := range n {
		if s.dryBreak[w[n-1-i]] {
			limit = i
			break
		}
	}
	if limit < s.dryMinLen {
		return
	}
	if cap(s.dryZ) < n {
		s.dryZ = make([]int32, n)
	}
	z := s.dryZ[:n]
	rev := func(k int) int32 { return w[n-1-k] }
	z[0] = int32(n)
	for k, l, r := 1, 0, 0; k < n; k++ { // the Z-algorithm: O(n)
		m := 0
		if k < r {
			m = min(r-k, int(z[k-l]))
		}
		for k+m < n && rev(m) == rev(k+m) {
			m++
		}
		z[k] = int32(m)
		if k+m > r {
			l, r = k, k+m
		}
	}
	if len(s.dryLen) < len(logits) {
		s.dryLen = make([]int32, len(logits))
	}
	v := int32(len(logits))
	for k := 1; k < n; k++ {
		m := min(int(z[k]), limit)
		t := w[n-k]
		if m < s.dryMinLen || t < 0 || t >= v || s.dryBreak[t] {
			continue
		}
		if s.dryLen[t] == 0 {
			s.dryIDs = append(s.dryIDs, t)
		}
		s.dryLen[t] = max(s.dryLen[t], int32(m))
	}
	if len(s.dryIDs) == 0 {
		return
	}
	if len(s.mark) < len(logits) {
		s.mark = make([]int32, len(logits))
	}
	// base^e overflows float32 past e = ln(MaxFloat32)/ln(base): clamp.
	maxExp := math.Inf(1)
	if s.dryBase > 1 {
		maxExp = math.Floor(math.Log(math.MaxFloat32) / math.Log(s.dryBase))
	}
	for _, t := range s.dryIDs {
		e := min(float64(int(s.dryLen[t])-s.dryMinLen), maxExp)
		p := float32(s.dryMult * math.Pow(s.dryBase, e))
		if s.mark[t] != 0 {
			j := slices.Index(s.touched, t)
			s.pen[j] -= p
			continue
		}
		s.mark[t] = -1
		s.touched = append(s.touched, t)
		s.pen = append(s.pen, logits[t]-p)
	}
}

// window fills touched and mark with the distinct ids of the penalty window
// of history (the last RepeatLastN ids; those outside [0, vocab) are
// skipped but keep their place) and their counts; it empties pen. Nothing
// is touched when the penalties are off.
func (s *Sampler) window(history []int32, vocab int) {
	for _, id := range s.touched {
		s.mark[id] = 0
	}
	s.touched, s.pen = s.touched[:0], s.pen[:0]
	if !s.penalties {
		return
	}
	win := history
	if s.lastN >= 0 && len(win) > s.lastN {
		win = win[len(win)-s.lastN:]
	}
	if len(win) == 0 {
		return
	}
	if len(s.mark) < vocab {
		s.mark = make([]int32, vocab)
	}
	v := int32(vocab)
	for _, id := range win {
		if id < 0 || id >= v {
			continue
		}
		if s.mark[id] == 0 {
			s.touched = append(s.touched, id)
		}
		s.mark[id]++
	}
}

// Penalize returns the logit x of a token that occurs count > 0 times in
// the penalty window, penalized as Sample does, in float32 as llama.cpp
// does: x ← x/r if x > 0 else x·r; x ← x − (count·freq + presence). Each
// operation is rounded on its own (the conversion stops a fused
// multiply-add), so a device that rounds each IEEE operation correctly
// computes the same bits.
func (s *Sampler) Penalize(x float32, count int32) float32 {
	if s.repeat != 1 {
		if x > 0 {
			x /= s.repeat
		} else {
			x *= s.repeat
		}
	}
	return x - (float32(float32(count)*s.freq) + s.presence)
}

// isPenalized reports whether logits[i] is superseded by a penalized value
// (then the scans skip it and visit s.pen instead). The heap scan calls it
// only on its rare accept path.
func (s *Sampler) isPenalized(i int) bool { return len(s.touched) > 0 && s.mark[i] != 0 }

// pickBest returns the id of the best of c (the largest penalized logit,
// the lowest id on ties): the greedy token. Sample's c is the heap scan with
// k = 1 (a plain running-max loop over the logits compiles to a conditional
// move whose dependency chain makes it twice as slow); a device's is its
// top-1.
func pickBest(c []candidate) (int32, error) {
	if len(c) == 0 {
		return -1, ErrNoCandidate
	}
	best := c[0]
	for _, e := range c[1:] {
		if worse(best, e) {
			best = e
		}
	}
	return best.id, nil
}

// truncate applies top-k, top-p and min-p. It returns the kept candidates,
// best first, or binned = true when the kept set is described by the mass
// histogram (cutBin, cutLen) instead. The top-k and min-p paths select a
// candidate set from the logits and hand it to keepTopK or keepThreshold,
// the same code that finishes a device's candidate set (SampleCandidates).
func (s *Sampler) truncate(logits []float32) (c []candidate, binned bool, err error) {
	if s.typical > 0 || s.xtcP > 0 {
		return s.keepSorted(logits)
	}
	if s.topK > 0 && s.topK < len(logits) {
		return s.keepTopK(s.selectTop(logits, s.topK))
	}
	top := s.selectTop(logits, 1)
	if len(top) == 0 {
		return nil, false, ErrNoCandidate
	}
	if math.IsInf(float64(top[0].logit), 1) {
		return s.keepThreshold(s.collectInf(logits), 0)
	}
	mx := float64(top[0].logit)
	s.topID = top[0].id
	switch {
	case s.minP:
		// min-p bounds the kept set by a logit threshold: collect it in one
		// pass and sort only it. top-p then needs the full normalizer.
		z := 0.0
		if s.topP > 0 {
			z = s.expSum(logits, mx)
		}
		return s.keepThreshold(s.collectMinP(logits, mx), z)
	case s.topP > 0:
		s.fillBins(logits, mx, true)
		s.cutTopPBinned(logits)
	default:
		s.fillBins(logits, mx, false)
		s.cutBin, s.cutLen = nBins, 0
	}
	return nil, true, nil
}

// keepTopK applies top-p and min-p to c, the top-k candidates in any order
// (exactly the set selectTop returns), and returns the kept ones, best
// first.
func (s *Sampler) keepTopK(c []candidate) ([]candidate, bool, error) {
	if len(c) == 0 {
		return nil, false, ErrNoCandidate
	}
	slices.SortFunc(c, cmpBestFirst)
	c = infRun(c)
	// As in llama.cpp, top-p after top-k normalizes over the k kept.
	z := 0.0
	if s.topP > 0 {
		x0 := float64(c[0].logit)
		for _, e := range c {
			z += math.Exp(float64(e.logit) - x0)
		}
	}
	return c[:s.cut(c, z)], false, nil
}

// keepThreshold applies min-p (and top-p, given z = Σ exp(x − max) over the
// whole vocabulary) with top-k off, and returns the kept candidates, best
// first. c, in any order, must hold the best token and every token that
// min-p keeps (every candidate when min-p is off); it may hold more, NaN
// and −Inf included, which are dropped here. If the best is +Inf, only the
// +Inf tokens are kept, and they share the mass equally (see infRun).
func (s *Sampler) keepThreshold(c []candidate, z float64) ([]candidate, bool, error) {
	negInf := float32(math.Inf(-1))
	var best candidate
	found := false
	for _, e := range c {
		if e.logit > negInf && (!found || worse(best, e)) {
			best, found = e, true
		}
	}
	if !found {
		return nil, false, ErrNoCandidate
	}
	kept := c[:0]
	switch x0 := float64(best.logit); {
	case math.IsInf(x0, 1):
		for _, e := range c {
			if math.IsInf(float64(e.logit), 1) {
				kept = append(kept, candidate{e.id, 0})
			}
		}
		z = float64(len(kept))
	case s.minP:
		for _, e := range c {
			if float64(e.logit)-x0 >= s.lnMinP {
				kept = append(kept, e)
			}
		}
	default:
		for _, e := range c {
			if e.logit > negInf {
				kept = append(kept, e)
			}
		}
	}
	slices.SortFunc(kept, cmpBestFirst)
	return kept[:s.cut(kept, z)], false, nil
}

// cut returns how many of the best-first candidates c survive top-p and
// min-p. z is Σ exp(x − x_0) over the distribution top-p normalizes over
// (used only when top-p is on), so p_i = exp(x_i − x_0)/z.
func (s *Sampler) cut(c []candidate, z float64) int {
	n := len(c)
	x0 := float64(c[0].logit)
	if s.topP > 0 {
		target, cum := s.topP*z, 0.0
		for i, e := range c {
			cum += math.Exp(float64(e.logit) - x0)
			if cum >= target {
				n = i + 1
				break
			}
		}
	}
	if s.minP {
		m := 1
		for m < n && float64(c[m].logit)-x0 >= s.lnMinP {
			m++
		}
		n = m
	}
	return n
}

// worse reports whether a ranks below b: a lower logit, or the same logit and
// a higher id. It is a strict total order on distinct ids.
func worse(a, b candidate) bool {
	return a.logit < b.logit || (a.logit == b.logit && a.id > b.id)
}

// cmpBestFirst orders candidates best first, for slices.SortFunc.
func cmpBestFirst(a, b candidate) int {
	switch {
	case worse(b, a):
		return -1
	case worse(a, b):
		return 1
	}
	return 0
}

func siftUp(h []candidate, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []candidate, i int) {
	for {
		m := 2*i + 1
		if m >= len(h) {
			return
		}
		if r := m + 1; r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// selectTop returns the min(k, #candidates) best candidates, best first. A
// min-heap of size k holds the best seen so far with the worst at its root;
// an element enters only if it beats the root, so the scan is O(V log k) and
// mostly one comparison per logit. The scan visits ids in increasing order,
// so a logit equal to the root's never beats it (the root's id is lower) and
// `x > threshold` is exact. Penalized ids are skipped in the scan and offered
// afterwards with their new logits, with the full comparison.
func (s *Sampler) selectTop(logits []float32, k int) []candidate {
	k = min(k, len(logits))
	if cap(s.cand) < k {
		s.cand = make([]candidate, 0, k)
	}
	h := s.cand[:0]
	thr := float32(math.Inf(-1)) // until the heap is full: rejects NaN and −Inf only
	// Blocks of 8 with one predictable branch chain each: nearly every block
	// is rejected whole, and the loop overhead is paid once per 8 logits.
	i := 0
	for ; i+8 <= len(logits); i += 8 {
		b := logits[i : i+8 : i+8]
		if !(b[0] > thr || b[1] > thr || b[2] > thr || b[3] > thr ||
			b[4] > thr || b[5] > thr || b[6] > thr || b[7] > thr) {
			continue
		}
		for j, x := range b {
			if x > thr && !s.isPenalized(i+j) {
				h, thr = pushTop(h, k, candidate{int32(i + j), x})
			}
		}
	}
	for ; i < len(logits); i++ {
		if x := logits[i]; x > thr && !s.isPenalized(i) {
			h, thr = pushTop(h, k, candidate{int32(i), x})
		}
	}
	for j, id := range s.touched {
		e := candidate{id, s.pen[j]}
		switch {
		case !(e.logit > float32(math.Inf(-1))):
			// NaN or −Inf: no probability.
		case len(h) < k:
			h = append(h, e)
			siftUp(h, len(h)-1)
		case worse(h[0], e):
			h[0] = e
			siftDown(h, 0)
		}
	}
	slices.SortFunc(h, cmpBestFirst)
	s.cand = h
	return h
}

// pushTop adds c, known to beat the root of the heap h when h is full, and
// returns the new admission threshold: −Inf until h holds k, then the root's.
func pushTop(h []candidate, k int, c candidate) ([]candidate, float32) {
	if len(h) < k {
		h = append(h, c)
		siftUp(h, len(h)-1)
		if len(h) < k {
			return h, float32(math.Inf(-1))
		}
	} else {
		h[0] = c
		siftDown(h, 0)
	}
	return h, h[0].logit
}

// infRun handles +Inf logits in a best-first list: if the best is +Inf, only
// the +Inf run is kept, with logit 0 so that its members share the mass
// equally (exp(+Inf − +Inf) would be NaN).
func infRun(c []candidate) []candidate {
	if !math.IsInf(float64(c[0].logit), 1) {
		return c
	}
	n := 0
	for n < len(c) && math.IsInf(float64(c[n].logit), 1) {
		c[n].logit = 0
		n++
	}
	return c[:n]
}

// collectAll returns every candidate with a penalized logit above −Inf
// (NaN dropped), in no particular order.
func (s *Sampler) collectAll(logits []float32) []candidate {
	negInf := float32(math.Inf(-1))
	c := s.cand[:0]
	for i, x := range logits {
		if x > negInf && !s.isPenalized(i) {
			c = append(c, candidate{int32(i), x})
		}
	}
	for j, id := range s.touched {
		if x := s.pen[j]; x > negInf {
			c = append(c, candidate{id, x})
		}
	}
	s.cand = c
	return c
}

// candidatesBestFirst returns the top-k candidates (top-k on) or all of
// them, best first; when the best is +Inf, the +Inf run alone, its logits
// 0 (see infRun), and inf = true.
func (s *Sampler) candidatesBestFirst(logits []float32, k int) (c []candidate, inf bool, err error) {
	if k > 0 && k < len(logits) {
		c = s.selectTop(logits, k)
	} else {
		c = s.collectAll(logits)
	}
	if len(c) == 0 {
		return nil, false, ErrNoCandidate
	}
	slices.SortFunc(c, cmpBestFirst)
	inf = math.IsInf(float64(c[0].logit), 1)
	return infRun(c), inf, nil
}

// keepSorted is truncate with typical sampling or XTC on, in llama.cpp's
// order: top-k; typical over the softmax (temperature 1) of what top-k
// kept; top-p and min-p over what typical kept; XTC over what they kept.
// It sorts every candidate top-k leaves (keepTypical, keepXTC).
func (s *Sampler) keepSorted(logits []float32) ([]candidate, bool, error) {
	c, _, err := s.candidatesBestFirst(logits, s.topK)
	if err != nil {
		return nil, false, err
	}
	if s.typical > 0 {
		c = s.keepTypical(c)
	}
	// As after top-k, top-p normalizes over the tokens kept so far.
	z := 0.0
	if s.topP > 0 {
		x0 := float64(c[0].logit)
		for _, e := range c {
			z += math.Exp(float64(e.logit) - x0)
		}
	}
	c = c[:s.cut(c, z)]
	if s.xtcP > 0 {
		c = s.keepXTC(c)
	}
	return c, false, nil
}

// keepTypical applies typical sampling to the best-first candidates c and
// returns the kept ones, best first. Typical keeps the tokens whose
// surprise −ln p is closest to the entropy H = −Σ p ln p (p: the softmax
// of c), closest first (ties: the better token), until their probability
// exceeds TypicalP; at least one.
func (s *Sampler) keepTypical(c []candidate) []candidate {
	if cap(s.w) < 2*len(c) {
		s.w = make([]float64, 2*len(c))
	}
	p, score := s.w[:len(c)], s.w[len(c):2*len(c)]
	x0, z := float64(c[0].logit), 0.0
	for i, e := range c {
		p[i] = math.Exp(float64(e.logit) - x0)
		z += p[i]
	}
	h := 0.0
	for i := range p {
		if p[i] /= z; p[i] > 0 {
			h -= p[i] * math.Log(p[i])
		}
	}
	for i := range p {
		score[i] = math.Abs(-math.Log(p[i]) - h) // +Inf for p = 0: last
	}
	// Order by score; c is best first, so a stable sort breaks ties by
	// rank.
	order := s.order[:0]
	for i := range c {
		order = append(order, i)
	}
	s.order = order
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case score[a] < score[b]:
			return -1
		case score[a] > score[b]:
			return 1
		}
		return 0
	})
	n, cum := len(order), 0.0
	for i, j := range order {
		if cum += p[j]; cum > s.typical {
			n = i + 1
			break
		}
	}
	kept := s.kept[:0]
	for _, j := range order[:n] {
		kept = append(kept, c[j])
	}
	s.kept = kept
	slices.SortFunc(kept, cmpBestFirst)
	return kept
}

// keepXTC applies XTC ("exclude top choices") to the best-first
// candidates c, as llama.cpp does: with probability XTCProbability (one
// draw of the stream, every call), when at least two candidates have a
// probability (softmax of c, temperature 1) of XTCThreshold or more, all
// of those but the least likely are dropped.
func (s *Sampler) keepXTC(c []candidate) []candidate {
	if s.uniform() >= s.xtcP || len(c) < 2 {
		return c
	}
	x0, z := float64(c[0].logit), 0.0
	for _, e := range c {
		z += math.Exp(float64(e.logit) - x0)
	}
	last := 0 // the last candidate at or above the threshold
	for i, e := range c {
		if math.Exp(float64(e.logit)-x0)/z < s.xtcT {
			break
		}
		last = i
	}
	return c[last:]
}

// sampleMirostat draws with Mirostat in place of the truncations, as
// llama.cpp's chain temperature → mirostat does: over the softmax p of
// the penalized logits divided by the temperature, Mirostat 2.0 keeps the
// tokens with surprise −log₂ p ≤ μ (at least the best); Mirostat (v1)
// estimates the Zipf exponent ŝ of the best 100 tokens and keeps the top
// k = ((ŝ−1)·2^μ / (1 − V^(1−ŝ)))^(1/ŝ). Both renormalize over the kept
// tokens, draw one, and move μ by −η·(its surprise − τ).
func (s *Sampler) sampleMirostat(logits []float32) (int32, error) {
	var c []candidate
	var inf bool
	var err error
	switch {
	case s.mirostat == 1:
		if c, inf, err = s.candidatesBestFirst(logits, mirostatM); err != nil || inf {
			break // the +Inf tokens share the mass: no truncation
		}
		k := s.mirostatK(c, len(logits))
		if k > len(c) {
			if c, _, err = s.candidatesBestFirst(logits, k); err != nil {
				break
			}
		}
		c = c[:min(k, len(c))]
	default:
		if c, inf, err = s.candidatesBestFirst(logits, 0); err != nil || inf {
			break
		}
		// p_i ≥ 2^−μ ⟺ (x_i − x_0)/T ≥ ln z − μ·ln 2, z = Σ exp((x_j − x_0)/T).
		x0, z := float64(c[0].logit), 0.0
		for _, e := range c {
			z += math.Exp((float64(e.logit) - x0) / s.temp)
		}
		floor := math.Log(z) - s.mu*math.Ln2
		n := 1
		for n < len(c) && (float64(c[n].logit)-x0)/s.temp >= floor {
			n++
		}
		c = c[:n]
	}
	if err != nil {
		return -1, err
	}
	y := s.drawFrom(c, s.uniform())
	// The drawn token's probability among the kept: drawFrom's weights.
	total, wy := 0.0, 0.0
	for i, w := range s.w[:len(c)] {
		total += w
		if c[i].id == y {
			wy = w
		}
	}
	s.mu -= s.eta * (-math.Log2(wy/total) - s.tau)
	return y, nil
}

// mirostatK is Mirostat (v1)'s k for the best-first candidates c (up to
// mirostatM of them) of a vocabulary of v tokens, as llama.cpp computes it,
// at least 1 and at most v.
func (s *Sampler) mirostatK(c []candidate, v int) int {
	var sumTB, sumTT float64
	for i := 0; i+1 < len(c) && i < mirostatM-1; i++ {
		t := math.Log(float64(i+2) / float64(i+1))
		b := (float64(c[i].logit) - float64(c[i+1].logit)) / s.temp // ln(p_i/p_{i+1})
		sumTB += t * b
		sumTT += t * t
	}
	sHat := sumTB / sumTT
	eps := sHat - 1
	k := math.Pow(eps*math.Exp2(s.mu)/(1-math.Pow(float64(v), -eps)), 1/sHat)
	switch {
	case !(k >= 1): // NaN too (a flat top: ŝ = 0)
		return 1
	case k >= float64(v):
		return v
	}
	return int(k)
}

// collectInf returns the tokens whose penalized logit is +Inf, in no
// particular order, for keepThreshold.
func (s *Sampler) collectInf(logits []float32) []candidate {
	inf := float32(math.Inf(1))
	c := s.cand[:0]
	for i, x := range logits {
		if x == inf && !s.isPenalized(i) {
			c = append(c, candidate{int32(i), x})
		}
	}
	for j, id := range s.touched {
		if s.pen[j] == inf {
			c = append(c, candidate{id, inf})
		}
	}
	s.cand = c
	return c
}

// collectMinP returns, in no particular order, the candidates with
// x − mx ≥ ln(min_p), mx being the largest logit: exactly the min-p set
// (p_i ≥ min_p·p_max). NaN and −Inf fail the comparison.
func (s *Sampler) collectMinP(logits []float32, mx float64) []candidate {
	c := s.cand[:0]
	for i, x := range logits {
		if float64(x)-mx >= s.lnMinP && !s.isPenalized(i) {
			c = append(c, candidate{int32(i), x})
		}
	}
	for j, id := range s.touched {
		if x := s.pen[j]; float64(x)-mx >= s.lnMinP {
			c = append(c, candidate{id, x})
		}
	}
	s.cand = c
	return c
}

// expSum returns Σ exp(x − mx) over every penalized logit: the softmax
// normalizer at temperature 1, in float64, with the max subtracted so no term
// exceeds 1. −Inf contributes 0; NaN is skipped.
func (s *Sampler) expSum(logits []float32, mx float64) float64 {
	sum := 0.0
	for i, x := range logits {
		if x != x || s.isPenalized(i) {
			continue
		}
		sum += expNonPos(float64(x) - mx)
	}
	for _, x := range s.pen {
		if x == x {
			sum += expNonPos(float64(x) - mx)
		}
	}
	return sum
}

// binOf returns the histogram bin of a token d = mx − x below the max.
// Rounding is monotone, so a better token never lands in a later bin.
func binOf(d, scale float64) int {
	if f := d * scale; f < nBins-1 {
		return int(f)
	}
	return nBins - 1
}

// fillBins computes the mass histogram over every candidate (NaN and −Inf
// excluded): per bin the count, the mass at T, and, with t1, at temperature 1.
// The bins are 1/binsPerNat nat wide at T ≤ 1 and T times wider above, so
// that the mass at T spreads over them as it does at T = 1.
func (s *Sampler) fillBins(logits []float32, mx float64, t1 bool) {
	s.mx, s.binScale, s.candBin = mx, binsPerNat/max(1, s.temp), -1
	clear(s.m1[:])
	clear(s.mT[:])
	clear(s.n[:])
	for i, x := range logits {
		if !(x > float32(math.Inf(-1))) || s.isPenalized(i) {
			continue
		}
		s.addToBins(float64(x), t1)
	}
	for _, x := range s.pen {
		if x > float32(math.Inf(-1)) {
			s.addToBins(float64(x), t1)
		}
	}
}

// addToBins adds the token of logit x to its bin. Its exponentials are
// expNonPos's (ExpSum's), within a few parts in 10¹⁶ of math.Exp's at a
// quarter of the cost: over a whole vocabulary, the sampling paths without
// top-k spent 80% of their time in math.Exp (5 ms a token of a 128,256
// vocabulary on the Intel Xeon VM).
func (s *Sampler) addToBins(x float64, t1 bool) {
	d := s.mx - x
	b := binOf(d, s.binScale)
	s.n[b]++
	if s.temp == 1 {
		e := expNonPos(-d)
		s.mT[b] += e
		s.m1[b] += e
		return
	}
	s.mT[b] += expNonPos(-d / s.temp)
	if t1 {
		s.m1[b] += expNonPos(-d)
	}
}

// collectBin returns the tokens of histogram bin b, best first.
func (s *Sampler) collectBin(logits []float32, b int) []candidate {
	c := s.cand[:0]
	mx, scale := s.mx, s.binScale
	for i, x := range logits {
		if x > float32(math.Inf(-1)) && binOf(mx-float64(x), scale) == b && !s.isPenalized(i) {
			c = append(c, candidate{int32(i), x})
		}
	}
	for j, id := range s.touched {
		if x := s.pen[j]; x > float32(math.Inf(-1)) && binOf(mx-float64(x), scale) == b {
			c = append(c, candidate{id, x})
		}
	}
	slices.SortFunc(c, cmpBestFirst)
	s.cand, s.candBin = c, b
	return c
}

// cutTopPBinned finds the top-p cut over the whole vocabulary from the
// histogram: whole bins while their cumulative mass stays below p·Z, then
// the crossing bin sorted and walked token by token. If rounding keeps the
// walk short of p·Z, everything is kept.
func (s *Sampler) cutTopPBinned(logits []float32) {
	z := 0.0
	for _, m := range s.m1 {
		z += m
	}
	target, cum := s.topP*z, 0.0
	for b := range nBins {
		if s.n[b] == 0 {
			continue
		}
		if cum+s.m1[b] < target {
			cum += s.m1[b]
			continue
		}
		for j, e := range s.collectBin(logits, b) {
			cum += math.Exp(float64(e.logit) - s.mx)
			if cum >= target {
				s.cutBin, s.cutLen = b, j+1
				return
			}
		}
	}
	s.cutBin, s.cutLen = nBins, 0
}

// drawBinned draws from the kept set described by the histogram: target =
// u·W_T, W_T the kept mass at T; whole bins are skipped while the cumulative
// weight stays ≤ target, and the bin that crosses it is sorted and walked.
func (s *Sampler) drawBinned(logits []float32, u float64) int32 {
	w := func(e candidate) float64 { return math.Exp((float64(e.logit) - s.mx) / s.temp) }
	var part []candidate // the kept best of the cut bin, sorted
	total := 0.0
	for b := range s.cutBin {
		total += s.mT[b]
	}
	if s.cutBin < nBins {
		part = s.cand[:s.cutLen] // truncate left bin cutBin in s.cand
		for _, e := range part {
			total += w(e)
		}
	}
	target, cum := u*total, 0.0
	for b := range s.cutBin {
		if s.n[b] == 0 {
			continue
		}
		if cum+s.mT[b] <= target {
			cum += s.mT[b]
			continue
		}
		for _, e := range s.collectBin(logits, b) {
			if cum += w(e); cum > target {
				return e.id
			}
		}
	}
	if s.cutBin < nBins {
		if s.candBin != s.cutBin {
			part = s.collectBin(logits, s.cutBin)[:s.cutLen]
		}
		for _, e := range part {
			if cum += w(e); cum > target {
				return e.id
			}
		}
	}
	// Rounding left cum ≤ target: the last kept token with weight.
	for b := min(s.cutBin, nBins-1); b >= 0; b-- {
		if s.n[b] == 0 {
			continue
		}
		c := s.collectBin(logits, b)
		if b == s.cutBin {
			c = c[:s.cutLen]
		}
		for i := len(c) - 1; i >= 0; i-- {
			if w(c[i]) > 0 {
				return c[i].id
			}
		}
	}
	return s.topID // unreachable: the max, in bin 0, has weight 1
}

// drawFrom applies the temperature to the kept candidates c (best first) and
// draws: w_i = exp((x_i − x_0)/T), and the token is the first whose
// cumulative weight exceeds u·Σw.
func (s *Sampler) drawFrom(c []candidate, u float64) int32 {
	if cap(s.w) < len(c) {
		s.w = make([]float64, len(c))
	}
	w := s.w[:len(c)]
	x0 := float64(c[0].logit)
	total := 0.0
	for i, e := range c {
		w[i] = math.Exp((float64(e.logit) - x0) / s.temp)
		total += w[i]
	}
	target, cum := u*total, 0.0
	for i, wi := range w {
		cum += wi
		if cum > target {
			return c[i].id
		}
	}
	// u·total rounded up to total: the last candidate with weight.
	for i := len(w) - 1; i > 0; i-- {
		if w[i] > 0 {
			return c[i].id
		}
	}
	return c[0].id
}
