package spec

import (
	"container/heap"
	"math"
	"slices"
)

// chainHash is the hash countCandidates gives the n-gram toks.
func chainHash(toks []int32) uint64 {
	h := uint64(0)
	for _, t := range toks {
		h = hashToken(h, t)
	}
	return h
}

// addPrefixes adds to the candidates their prefixes that are not
// candidates themselves (single tokens included: the one-token keys),
// counts every one in the corpus, and links each candidate to its
// prefixes.
func addPrefixes(tokens []int32, cands []candidate, maxLen int) []candidate {
	index := make(map[uint64]int32, 2*len(cands)) // chain hash → index in cands
	for i := range cands {
		index[chainHash(cands[i].tokens)] = int32(i)
	}
	for i, n := 0, len(cands); i < n; i++ {
		c := cands[i].tokens
		for j := 1; j < len(c); j++ {
			if h := chainHash(c[:j]); !has(index, h) {
				index[h] = int32(len(cands))
				cands = append(cands, candidate{tokens: c[:j:j]})
			}
		}
	}
	for i := range cands {
		c := &cands[i]
		c.count, c.prob = 0, 1
		for j := 1; j <= len(c.tokens); j++ {
			c.prefix[j] = index[chainHash(c.tokens[:j])]
		}
	}
	// The set is closed under prefixes, so a scan stops at the first
	// n-gram not in it.
	for i := range tokens {
		h := uint64(0)
		for n := 1; n <= maxLen && i+n <= len(tokens) && tokens[i+n-1] >= 0; n++ {
			h = hashToken(h, tokens[i+n-1])
			k, ok := index[h]
			if !ok {
				break
			}
			cands[k].count++
		}
	}
	return cands
}

func has(m map[uint64]int32, h uint64) bool {
	_, ok := m[h]
	return ok
}

// gain is the tokens chain c drafts correctly after its key c[:n], summed
// over the corpus (see Mine).
func gain(cands []candidate, c *candidate, n int) float64 {
	key := &cands[c.prefix[n]]
	if key.count == 0 || key.prob == 0 {
		return 0
	}
	g := 0.0
	for j := n + 1; j <= len(c.tokens); j++ {
		p := &cands[c.prefix[j]]
		g += math.Sqrt(float64(p.count) / float64(key.count) * p.prob / key.prob)
	}
	return float64(key.count) * g
}

// pack chooses the table's chains from the scored candidates (see Mine):
// a lazy greedy over the gains on keys no chosen chain serves.
func pack(cands []candidate) *Chains {
	// owner[k] is the confidence of the chosen chain that drafts after key
	// k: the highest of those with that key.
	owner := make(map[chainKey]float32)
	// marginal is what c adds to the table: its gains on the keys it would
	// serve first; 0 when it would take a key from a chosen chain.
	marginal := func(c *candidate) float64 {
		conf := float32(c.prob)
		if len(c.tokens) < 2 || conf == 0 {
			return 0 // one token drafts nothing; a draft the model never writes
		}
		m := 0.0
		for n := 1; n <= MaxKey && n < len(c.tokens); n++ {
			if o, ok := owner[makeKey(c.tokens[:n])]; !ok {
				m += gain(cands, c, n)
			} else if conf > o {
				// Chosen earlier, the owner has the lower id and wins ties;
				// a higher confidence would take its key.
				return 0
			}
		}
		return m
	}
	h := &gainHeap{cands: cands}
	for i := range cands {
		if g := marginal(&cands[i]); g > 0 {
			h.items = append(h.items, gainItem{g, int32(i)})
		}
	}
	heap.Init(h)
	t := new(Chains)
	n := 0
	for h.Len() > 0 && n < Entries {
		it := heap.Pop(h).(gainItem)
		c := &cands[it.i]
		g := marginal(c)
		if g <= 0 {
			continue
		}
		if h.Len() > 0 && h.less(h.items[0], gainItem{g, it.i}) {
			heap.Push(h, gainItem{g, it.i}) // no longer the best: look again later
			continue
		}
		conf := float32(c.prob)
		for k := 1; k <= MaxKey && k < len(c.tokens); k++ {
			if key := makeKey(c.tokens[:k]); owner[key] < conf {
				owner[key] = conf
			}
		}
		t.Entries[n] = Chain{Tokens: slices.Clone(c.tokens), Confidence: conf}
		n++
	}
	return t
}

// gainItem is a candidate and its gain when last computed, an upper bound
// on its gain now.
type gainItem struct {
	gain float64
	i    int32
}

// gainHeap pops the largest gain first; of equal gains, the candidate first
// by frequency (so the order is total and the table deterministic).
type gainHeap struct {
	items []gainItem
	cands []candidate
}

func (h *gainHeap) less(a, b gainItem) bool {
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	return byFrequency(h.cands[a.i], h.cands[b.i]) < 0
}

func (h *gainHeap) Len() int           { return len(h.items) }
func (h *gainHeap) Less(a, b int) bool { return h.less(h.items[a], h.items[b]) }
func (h *gainHeap) Swap(a, b int)      { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *gainHeap) Push(x any)         { h.items = append(h.items, x.(gainItem)) }
func (h *gainHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
