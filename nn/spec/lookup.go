package spec

import (
	"slices"

	"github.com/bitvk/bitvk/nn"
)

// Lookup drafts from the sequence itself, as llama.cpp's prompt lookup
// decoding does: it finds the most recent earlier occurrence of the last n
// tokens (n from MaxN down to MinN, so the longest match wins) and drafts
// the tokens that followed it. It needs no file and pays off whenever the
// output repeats its input: quoting, editing, summarizing, code.
type Lookup struct {
	MinN, MaxN int // lengths of the suffix matched; 0 means 1 and 3
}

// Draft implements nn.Drafter.
func (l Lookup) Draft(dst, seq []int32, max int) []int32 {
	lo, hi := l.MinN, l.MaxN
	if lo <= 0 {
		lo = 1
	}
	if hi <= 0 {
		hi = 3
	}
	if max <= 0 {
		return dst
	}
	for n := min(hi, len(seq)-1); n >= lo; n-- {
		key := seq[len(seq)-n:]
		last := key[n-1]
		// Scan back for the key's last token first: one comparison per
		// position for the common miss.
		for i := len(seq) - 2; i >= n-1; i-- {
			if seq[i] != last || !slices.Equal(seq[i-n+1:i+1], key) {
				continue
			}
			return append(dst, seq[i+1:min(i+1+max, len(seq))]...)
		}
	}
	return dst
}

// First drafts with the first of its drafters that drafts anything.
type First []nn.Drafter

// Draft implements nn.Drafter.
func (f First) Draft(dst, seq []int32, max int) []int32 {
	n := len(dst)
	for _, d := range f {
		if dst = d.Draft(dst, seq, max); len(dst) > n {
			return dst
		}
	}
	return dst
}

// Auto is what --draft auto runs: a prompt lookup of two or three tokens
// (a long match in the context is the surest guess), then the chain
// buckets when there are any (nil: none), then a lookup of the last token
// alone.
func Auto(chains nn.Drafter) nn.Drafter {
	f := First{Lookup{MinN: 2, MaxN: 3}}
	if chains != nil {
		f = append(f, chains)
	}
	return append(f, Lookup{MinN: 1, MaxN: 1})
}
