package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Byte-level BPE (tokenizer.ggml.model = gpt2), as GPT-2 defined it and
// LLaMA-3 uses it:
//
//  1. the pre-tokenizer cuts the text into words;
//  2. each byte of a word becomes one symbol, spelled with GPT-2's
//     byte-to-unicode map (printable bytes stand for themselves, the rest
//     move to U+0100 and up, so a space is "Ġ" and a newline "Ċ");
//  3. the adjacent pair with the lowest merge rank is merged, again and
//     again, until no pair has a rank; the symbols left are the tokens.
//
// Merges are applied with a priority queue (rank, then leftmost first), not
// by rescanning the word. Symbols are ids: every token is one, and a merge
// whose halves or result are not tokens gets an id past the vocabulary (a
// "virtual piece"), so the merge table is a map from a pair of ids.

// byteRune is GPT-2's byte-to-unicode map; runeByte inverts it.
var byteRune, runeByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n) // unprintable bytes, in byte order
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// merge is the rank of a pair of symbols and the symbol it makes.
type merge struct {
	rank   int32
	result int32
}

// bpe is the merge table of a byte-level BPE vocabulary.
type bpe struct {
	merges  map[uint64]merge
	byteSym [256]int32 // the symbol of each byte
	virtual [][]byte   // bytes of symbol n+i, for the virtual pieces
	missing int        // bytes with no token of their own
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newBPE builds the merge table. ids maps token text to id.
func newBPE(tokens []string, ids map[string]int32, merges []string) (*bpe, error) {
	m := &bpe{merges: make(map[uint64]merge, len(merges))}
	n := int32(len(tokens))
	virtualIDs := map[string]int32{}
	intern := func(piece string) int32 {
		if id, ok := ids[piece]; ok {
			return id
		}
		if id, ok := virtualIDs[piece]; ok {
			return id
		}
		id := n + int32(len(m.virtual))
		virtualIDs[piece] = id
		m.virtual = append(m.virtual, decodeGPT2(piece))
		return id
	}
	for b := 0; b < 256; b++ {
		s := string(byteRune[b])
		if _, ok := ids[s]; !ok {
			m.missing++
		}
		m.byteSym[b] = intern(s)
	}
	for i, line := range merges {
		sp := strings.IndexByte(line, ' ')
		if sp == 0 && len(line) > 1 { // llama.cpp looks for the space from the second byte on
			sp = strings.IndexByte(line[1:], ' ') + 1
		}
		if sp <= 0 || sp == len(line)-1 {
			return nil, fmt.Errorf("tokenizer: merge %d %q is not two tokens separated by a space", i, line)
		}
		left, right := line[:sp], line[sp+1:]
		if strings.IndexByte(right, ' ') >= 0 {
			return nil, fmt.Errorf("tokenizer: merge %d %q is not two tokens", i, line)
		}
		key := pairKey(intern(left), intern(right))
		if _, dup := m.merges[key]; dup {
			continue // the first (lowest) rank wins, as in llama.cpp
		}
		m.merges[key] = merge{rank: int32(i), result: intern(left + right)}
	}
	return m, nil
}

// decodeGPT2 turns text in GPT-2's byte-to-unicode spelling back into bytes.
// A rune outside the map (a vocabulary that did not byte-encode a token)
// stands for its own UTF-8 bytes.
func decodeGPT2(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// bpeSym is one symbol of a word being merged: a doubly linked list over
// the word's bytes, as merges join neighbours.
type bpeSym struct {
	id         int32
	prev, next int32
}

// bigram is a candidate merge of symbols left and right (adjacent when
// pushed), holding their ids so that a stale entry is recognized.
type bigram struct {
	rank        int32
	left, right int32
	idL, idR    int32
}

func (a bigram) before(b bigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

// bigramHeap is a binary min-heap by (rank, left).
type bigramHeap = minHeap[bigram]

// scratch holds buffers reused across the words of one Encode call.
type scratch struct {
	cps  []cpt
	ends []int
	enc  []byte
	syms []bpeSym
	heap bigramHeap
}

// encodeWord appends the tokens of one pre-tokenized word.
func (t *Tokenizer) encodeWord(word string, s *scratch, out []int32) []int32 {
	m := t.bpe
	if t.ignoreMerges {
		// LLaMA-3's tokenizer takes a word that is a token whole, whatever
		// the merges would make of it.
		s.enc = s.enc[:0]
		for i := 0; i < len(word); i++ {
			s.enc = utf8.AppendRune(s.enc, byteRune[word[i]])
		}
		if id, ok := t.ids[string(s.enc)]; ok {
			return append(out, id)
		}
	}
	if len(word) == 1 {
		return t.appendSym(out, m.byteSym[word[0]])
	}
	syms := s.syms[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, bpeSym{id: m.byteSym[word[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	h := s.heap[:0]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		if mg, ok := m.merges[pairKey(syms[l].id, syms[r].id)]; ok {
			h.push(bigram{rank: mg.rank, left: l, right: r, idL: syms[l].id, idR: syms[r].id})
		}
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		// Stale if either side has merged since: symbols only grow, so
		// unchanged ids and adjacency mean unchanged text.
		if l.id != b.idL || r.id != b.idR || l.next != b.right {
			continue
		}
		l.id = m.merges[pairKey(b.idL, b.idR)].result
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		r.id = -1
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = t.appendSym(out, syms[i].id)
	}
	s.syms, s.heap = syms, h
	return out
}

// appendSym appends a symbol: a token as itself, a virtual piece as the
// tokens of its bytes. A byte with no token becomes the unknown token when
// there is one and is dropped otherwise (as llama.cpp drops it).
func (t *Tokenizer) appendSym(out []int32, id int32) []int32 {
	n := int32(len(t.tokens))
	if id < n {
		return append(out, id)
	}
	for _, b := range t.bpe.virtual[id-n] {
		if sym := t.bpe.byteSym[b]; sym < n {
			out = append(out, sym)
		} else if t.unk >= 0 {
			out = append(out, t.unk)
		}
	}
	return out
}

// encodeBPE appends the tokens of a run of plain text.
func (t *Tokenizer) encodeBPE(text string, s *scratch, out []int32) []int32 {
	var ends []int
	s.cps, ends = split(t.preKind, text, s.cps, s.ends)
	start := 0
	for _, end := range ends {
		out = t.encodeWord(text[start:end], s, out)
		start = end
	}
	s.ends = ends
	return out
}
