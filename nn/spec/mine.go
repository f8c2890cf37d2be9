package spec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ScoreFunc returns the model's probability of each chain: the product of
// P(c[i] | the tokens before it) over i ≥ 1, the probability of everything
// after the chain's first token given that token (the caller decides what
// context comes before it; bitvk mine puts BOS there). Each value must lie
// in [0, 1]. It is called with batches of chains in lexicographic order
// (a chain's prefixes of two tokens or more come before it), so that
// consecutive chains share prefixes a caller can keep evaluated. The chains
// are read-only and valid only during the call.
type ScoreFunc func(chains [][]int32) ([]float64, error)

// MineOptions tune Mine; the zero value gives the defaults.
type MineOptions struct {
	MaxLen     int // the longest chain mined, 2…MaxChain (0: MaxChain)
	MinCount   int // how often a chain must occur in the corpus to be a candidate (0: 2)
	Candidates int // how many of the most frequent chains the model scores, with their prefixes (0: 4096)
	Batch      int // chains per ScoreFunc call (0: 256)
	// Progress, when set, is called after each chain length is counted and
	// after each batch is scored.
	Progress func(MineProgress)
}

// MineProgress says how far Mine is.
type MineProgress struct {
	Stage string // "counting" or "scoring"
	// Counting: chain lengths counted (Done) of all (Total); scoring: chains
	// scored of all to score (the candidates and their prefixes).
	Done, Total int
}

// Default mining settings.
const (
	DefaultMinCount   = 2
	DefaultCandidates = 4096
	DefaultScoreBatch = 256
)

func (o *MineOptions) defaults() error {
	if o.MaxLen == 0 {
		o.MaxLen = MaxChain
	}
	if o.MinCount == 0 {
		o.MinCount = DefaultMinCount
	}
	if o.Candidates == 0 {
		o.Candidates = DefaultCandidates
	}
	if o.Batch == 0 {
		o.Batch = DefaultScoreBatch
	}
	switch {
	case o.MaxLen < 2 || o.MaxLen > MaxChain:
		return fmt.Errorf("spec: MaxLen %d is outside 2…%d", o.MaxLen, MaxChain)
	case o.MinCount < 1:
		return fmt.Errorf("spec: MinCount %d is not positive", o.MinCount)
	case o.Candidates < 1 || o.Batch < 1:
		return fmt.Errorf("spec: Candidates (%d) and Batch (%d) must be positive", o.Candidates, o.Batch)
	}
	return nil
}

// candidate is a chain found in the corpus.
type candidate struct {
	tokens []int32 // a slice of the corpus
	count  int     // occurrences in the corpus
	prob   float64 // the model's probability of tokens[1:] given tokens[0] (1 for one token)
	// prefix[j] is the index of the candidate tokens[:j], j = 1…len(tokens).
	prefix [MaxChain + 1]int32
}

// frequency is how a candidate ranks before the model sees it: the tokens
// its occurrences could have drafted.
func (c *candidate) frequency() int { return c.count * (len(c.tokens) - 1) }

// Mine builds a table of chains for drafting from a tokenized corpus.
// Negative ids in tokens separate documents: no chain spans one.
//
// Counting. It counts the n-grams of 2…MaxLen tokens (by a 64-bit hash of
// their tokens, in a sorted array of (hash, position) pairs per length, so
// that its memory is about 25 bytes per corpus token whatever the
// vocabulary) and keeps the Candidates n-grams with the largest
// count · (length − 1), the tokens their occurrences could draft. An n-gram
// is extended to the next length only while its count could still make the
// cut, as in Apriori. The candidates' prefixes join them.
//
// Scoring. The model gives every candidate c its probability P(c) of
// c[1:] after c[0] (score). Drafted after its key k = c[:n] (n = 1…3, see
// Draft), c's tokens up to c[:j] are accepted with the probability
// estimated as the geometric mean of the corpus's and the model's
//
//	a(k, j) = √( count(c[:j])/count(k) · P(c[:j])/P(k) )   (P of one token: 1)
//
// so that the chain's gain on key k, the tokens it drafts correctly each
// time the key occurs, summed over the corpus, is
//
//	gain(c, k) = count(k) · Σ_{j = n+1…len(c)} a(k, j).
//
// Packing. The table is a prefix tree of the chains, filled greedily: the
// next chain is the one with the largest gain summed over the keys it would
// serve that no chosen chain serves yet (gains only shrink as keys are
// taken, so they are recomputed lazily). A chain never takes a key from a
// chosen one: one whose confidence beats a chosen chain's on a shared key is
// skipped, as is a chain that serves no new key (a prefix of a chosen chain
// with the same key adds nothing). Its confidence is P(c), the probability
// of what it drafts after a one-token key (a lower bound for a longer key).
// Entries are in the order chosen, best first; empty entries fill the rest
// of the 256. The same input always gives the same table.
//
// Mine fails when the corpus has no chain that occurs MinCount times.
func Mine(ctx context.Context, tokens []int32, score ScoreFunc, opts MineOptions) (*Chains, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if countTokens(tokens) < 2 {
		return nil, errors.New("spec: the corpus is empty: there are no chains to mine in fewer than 2 tokens")
	}
	cands, err := countCandidates(ctx, tokens, opts)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("spec: no sequence of 2…%d tokens occurs %d times in the corpus's %d tokens: give a longer text", opts.MaxLen, opts.MinCount, countTokens(tokens))
	}
	cands = addPrefixes(tokens, cands, opts.MaxLen)
	if err := scoreCandidates(ctx, cands, score, opts); err != nil {
		return nil, err
	}
	c := pack(cands)
	c.Reindex()
	return c, nil
}

func countTokens(tokens []int32) int {
	n := 0
	for _, t := range tokens {
		if t >= 0 {
			n++
		}
	}
	return n
}

// hashToken mixes token t into h (splitmix64's finalizer over h and t).
func hashToken(h uint64, t int32) uint64 {
	h ^= uint64(uint32(t)) + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// occurrence is one n-gram occurrence: its hash and where it starts.
type occurrence struct {
	hash uint64
	pos  int32
}

// countCandidates counts n-grams length by length and returns the
// candidates ranked by frequency, at most opts.Candidates.
func countCandidates(ctx context.Context, tokens []int32, opts MineOptions) ([]candidate, error) {
	if len(tokens) > math.MaxInt32 {
		return nil, fmt.Errorf("spec: a corpus of %d tokens is beyond the 2³¹ the miner counts", len(tokens))
	}
	// hash[i] is the hash of the n-gram at i, alive[i] whether it is still
	// extended: its count could put an extension among the candidates.
	hash := make([]uint64, len(tokens))
	alive := make([]bool, len(tokens))
	for i, t := range tokens {
		alive[i] = t >= 0
		hash[i] = hashToken(0, t)
	}
	var pool []candidate
	occ := make([]occurrence, 0, len(tokens))
	for n := 2; n <= opts.MaxLen; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		occ = occ[:0]
		for i := 0; i+n <= len(tokens); i++ {
			if !alive[i] {
				continue
			}
			if t := tokens[i+n-1]; t >= 0 {
				hash[i] = hashToken(hash[i], t)
				occ = append(occ, occurrence{hash[i], int32(i)})
			} else {
				alive[i] = false
			}
		}
		for i := max(len(tokens)-n+1, 0); i < len(tokens); i++ {
			alive[i] = false // too near the end for n tokens
		}
		slices.SortFunc(occ, func(a, b occurrence) int {
			if c := cmp.Compare(a.hash, b.hash); c != 0 {
				return c
			}
			return cmp.Compare(a.pos, b.pos)
		})
		// Runs of one hash are the occurrences of one n-gram, the first
		// one first.
		runs := func(yield func(run []occurrence) bool) {
			for i := 0; i < len(occ); {
				j := i + 1
				for j < len(occ) && occ[j].hash == occ[i].hash {
					j++
				}
				if !yield(occ[i:j]) {
					return
				}
				i = j
			}
		}
		bar := 0 // the frequency an n-gram needs to be kept
		if len(pool) >= opts.Candidates {
			bar = pool[len(pool)-1].frequency()
		}
		for run := range runs {
			if len(run) >= opts.MinCount && len(run)*(n-1) >= bar {
				p := int(run[0].pos)
				pool = append(pool, candidate{tokens: tokens[p : p+n : p+n], count: len(run)})
			}
		}
		slices.SortFunc(pool, byFrequency)
		pool = pool[:min(len(pool), opts.Candidates)]
		// An n-gram seen k times has extensions seen at most k times, of
		// frequency at most k·(MaxLen−1): below the bar, none can join.
		bar = 0
		if len(pool) >= opts.Candidates {
			bar = pool[len(pool)-1].frequency()
		}
		for run := range runs {
			keep := len(run) >= opts.MinCount && len(run)*(opts.MaxLen-1) >= bar
			for _, o := range run {
				alive[o.pos] = alive[o.pos] && keep
			}
		}
		if opts.Progress != nil {
			opts.Progress(MineProgress{Stage: "counting", Done: n - 1, Total: opts.MaxLen - 1})
		}
	}
	return pool, nil
}

// byFrequency orders candidates by frequency, then longer first, then by
// their tokens.
func byFrequency(a, b candidate) int {
	if c := cmp.Compare(b.frequency(), a.frequency()); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.tokens), len(a.tokens)); c != 0 {
		return c
	}
	return slices.Compare(a.tokens, b.tokens)
}

// scoreCandidates asks the model for the probability of each candidate of
// two tokens or more, in batches in lexicographic order.
func scoreCandidates(ctx context.Context, cands []candidate, score ScoreFunc, opts MineOptions) error {
	var order []int
	for i := range cands {
		if len(cands[i].tokens) >= 2 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return slices.Compare(cands[a].tokens, cands[b].tokens) })
	batch := make([][]int32, 0, opts.Batch)
	for start := 0; start < len(order); start += opts.Batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		idx := order[start:min(start+opts.Batch, len(order))]
		batch = batch[:0]
		for _, i := range idx {
			batch = append(batch, cands[i].tokens)
		}
		probs, err := score(batch)
		if err != nil {
			return err
		}
		if len(probs) != len(batch) {
			return fmt.Errorf("spec: the scorer returned %d probabilities for %d chains", len(probs), len(batch))
		}
		for k, i := range idx {
			p := probs[k]
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("spec: the scorer gave chain %v the probability %v, outside [0, 1]", cands[i].tokens, p)
			}
			cands[i].prob = p
		}
		if opts.Progress != nil {
			opts.Progress(MineProgress{Stage: "scoring", Done: start + len(idx), Total: len(order)})
		}
	}
	return nil
}
