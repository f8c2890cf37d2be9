package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// SentencePiece BPE (tokenizer.ggml.model = llama), as LLaMA-2's vocabulary
// and 1bitLLM's models use it, the way llama.cpp's llm_tokenizer_spm runs it:
//
//  1. a space is put before the text (the "add_space_prefix" convention:
//     "Hello" is tokenized as " Hello") and every space becomes ▁ (U+2581);
//  2. each UTF-8 character (or invalid byte) is a symbol;
//  3. the adjacent pair whose concatenation is the token with the highest
//     score is merged (leftmost first on ties), until no pair is a token;
//  4. a symbol that is not a token falls back to its bytes, as <0xNN>.

const spaceMark = "\u2581" // ▁, SentencePiece's visible space

// spmSym is one symbol: the bytes [start, end) of the escaped text.
type spmSym struct {
	start, end int32
	prev, next int32
}

// spmBigram is a candidate merge of adjacent symbols left and right whose
// text, size bytes long, is a token with the given score.
type spmBigram struct {
	score       float32
	left, right int32
	size        int32
}

func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

type spmHeap = minHeap[spmBigram]

// encodeSPM appends the tokens of a run of plain text; prefix says whether
// it starts the text or follows a special token (where the space prefix goes).
func (t *Tokenizer) encodeSPM(text string, prefix bool, out []int32) []int32 {
	if prefix && t.addSpacePrefix {
		text = " " + text
	}
	text = strings.ReplaceAll(text, " ", spaceMark)
	if text == "" {
		return out
	}
	syms := make([]spmSym, 0, len(text))
	var cuts []int32 // symbols that start a word (see wordSafe)
	for i := 0; i < len(text); {
		// A byte that is not part of a valid character is a symbol of its
		// own. (llama.cpp takes the length its first byte announces, which
		// can swallow the start of the next ▁ and break the round trip;
		// valid text splits the same either way.)
		_, n := utf8.DecodeRuneInString(text[i:])
		k := int32(len(syms))
		if t.spmWordSafe && k > 0 && text[i:i+n] == spaceMark && text[syms[k-1].start:syms[k-1].end] != spaceMark {
			cuts = append(cuts, k)
		}
		syms = append(syms, spmSym{start: int32(i), end: int32(i + n), prev: k - 1, next: k + 1})
		i += n
	}
	cuts = append(cuts, int32(len(syms)))
	var h spmHeap
	start := int32(0)
	for _, end := range cuts {
		syms[start].prev, syms[end-1].next = -1, -1
		h = t.mergeSPM(text, syms, start, end, h[:0])
		for i := start; i >= 0; i = syms[i].next {
			out = t.appendSPMPiece(out, text[syms[i].start:syms[i].end])
		}
		start = end
	}
	return out
}

// mergeSPM merges the symbols syms[start:end], a word (or the whole text).
//
// When no token has a ▁ after anything but ▁ (true of LLaMA's vocabulary),
// no token can span the start of a word, so merging word by word gives the
// result of merging the whole text at once: merges in different words never
// touch, and within a word they come in the same order. Small heaps are
// several times faster than one as long as the text.
func (t *Tokenizer) mergeSPM(text string, syms []spmSym, start, end int32, h spmHeap) spmHeap {
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		piece := text[syms[l].start:syms[r].end]
		if id, ok := t.ids[piece]; ok {
			h.push(spmBigram{score: t.score(id), left: l, right: r, size: int32(len(piece))})
		}
	}
	for i := start + 1; i < end; i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		// Stale if either side is gone or has grown since it was pushed.
		if l.end == l.start || r.end == r.start || r.end-l.start != b.size || l.next != b.right {
			continue
		}
		l.end = r.end
		r.start, r.end = 0, 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
	return h
}

// appendSPMPiece appends a final symbol: its token, or its bytes as <0xNN>
// tokens (the unknown token for a byte without one).
func (t *Tokenizer) appendSPMPiece(out []int32, piece string) []int32 {
	if id, ok := t.ids[piece]; ok {
		return append(out, id)
	}
	for j := 0; j < len(piece); j++ {
		if id := t.byteTok[piece[j]]; id >= 0 {
			out = append(out, id)
		} else if t.unk >= 0 {
			out = append(out, t.unk)
		}
	}
	return out
}

// wordSafe reports whether every ▁ inside a token follows another ▁, so
// that a ▁ after any other character starts a new word (see mergeSPM).
func wordSafe(tokens []string) bool {
	for _, tok := range tokens {
		for i := 1; i < len(tok); i++ {
			j := strings.Index(tok[i:], spaceMark)
			if j < 0 {
				break
			}
			i += j
			if i < len(spaceMark) || tok[i-len(spaceMark):i] != spaceMark {
				return false
			}
		}
	}
	return true
}

func (t *Tokenizer) score(id int32) float32 {
	if t.scores == nil {
		return 0
	}
	return t.scores[id]
}
