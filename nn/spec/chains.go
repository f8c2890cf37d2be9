package spec

import "github.com/bitvk/bitvk/nn"

var _ nn.Drafter = (*Chains)(nil)

// MaxKey is the most tokens at the end of a sequence that select a bucket.
const MaxKey = 3

// chainKey is a bucket key: its length n (1…MaxKey) and its tokens, the
// unused ones zero.
type chainKey [1 + MaxKey]int32

func makeKey(toks []int32) chainKey {
	var k chainKey
	k[0] = int32(len(toks))
	copy(k[1:], toks)
	return k
}

// chainIndex maps every key to the entry that drafts after it.
type chainIndex map[chainKey]uint8

// Reindex rebuilds the lookup index from Entries. ReadChains and Mine
// build it; call Reindex after changing Entries (changing them while a
// Draft runs is a data race).
func (c *Chains) Reindex() {
	ix := make(chainIndex)
	for i, e := range c.Entries {
		for n := 1; n <= MaxKey && n < len(e.Tokens); n++ {
			k := makeKey(e.Tokens[:n])
			// Entries are visited in id order, so only a strictly higher
			// confidence takes a key over: ties go to the lowest id.
			if j, ok := ix[k]; !ok || e.Confidence > c.Entries[j].Confidence {
				ix[k] = uint8(i)
			}
		}
	}
	c.index.Store(&ix)
}

// Draft implements nn.Drafter: it appends the rest of the chain of the
// bucket the end of seq selects, at most max tokens.
//
// The last 1…3 tokens of seq select the bucket, the longest match first.
// An entry matches with n key tokens when its first n tokens equal the last
// n tokens of seq and it has more than n tokens; among the matches with the
// largest n, the one with the highest confidence wins, and of equal
// confidences the lowest id. The draft is the entry's tokens after the key,
// chain[n:], cut to max. With no match nothing is drafted.
//
// Every key's winner is found once, when the index is built (see Reindex),
// so a Draft is at most three map lookups and one append: it allocates
// nothing when dst has room for max tokens. It is safe for concurrent use.
func (c *Chains) Draft(dst, seq []int32, max int) []int32 {
	if c == nil || max <= 0 || len(seq) == 0 {
		return dst
	}
	ix := c.index.Load()
	if ix == nil {
		c.Reindex() // a table built in code; races only with itself, harmlessly
		ix = c.index.Load()
	}
	for n := min(MaxKey, len(seq)); n >= 1; n-- {
		if i, ok := (*ix)[makeKey(seq[len(seq)-n:])]; ok {
			rest := c.Entries[i].Tokens[n:]
			return append(dst, rest[:min(len(rest), max)]...)
		}
	}
	return dst
}

// Filled is the number of entries that hold a chain (at least one token).
func (c *Chains) Filled() int {
	n := 0
	for _, e := range c.Entries {
		if len(e.Tokens) > 0 {
			n++
		}
	}
	return n
}
