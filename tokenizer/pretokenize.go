package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Pre-tokenizers cut text into words before byte-level BPE merges within
// each word. The models define them as regular expressions with lookahead
// (\s+(?!\S)), which Go's regexp cannot express, so each is written here as
// a scan over code points, following the regex alternatives in order. They
// reproduce llama.cpp's splitting, including its character classes:
// \p{L} = unicode.IsLetter, \p{N} = unicode.IsNumber, \p{P} = unicode.IsPunct,
// \s = the Unicode White_Space property.

// Names of tokenizer.ggml.pre that bitvk knows, grouped by the splitting
// they use (llama.cpp maps the same names onto the same regexes).
var preTokenizers = map[string]preKind{
	"llama3":    preLlama3,
	"llama-v3":  preLlama3,
	"llama-bpe": preLlama3,
	"falcon3":   preLlama3, // Falcon3 kept LLaMA-3's split
	"falcon_e":  preLlama3, // Falcon-E, as Microsoft's bitnet.cpp fork names it
	"falcon-e":  preLlama3,
	"default":   preDefault,
	"gpt-2":     preGPT2,
}

type preKind int

const (
	preDefault preKind = iota
	preLlama3
	preGPT2
)

// cpt is one code point of the text being split. An invalid UTF-8 byte is a
// code point of its own, classed like U+FFFD (a symbol), so that the bytes
// of any input survive splitting unchanged.
type cpt struct {
	r   rune
	fl  uint8
	end int32 // byte offset just past this code point
}

// Character-class bits of a code point. cpValid is set on every real code
// point, so a zero value means "past the end" (llama.cpp's empty flags).
const (
	cpLetter uint8 = 1 << iota
	cpNumber
	cpSpace
	cpPunct // \p{P} or one of $+<=>^~| (the default pre-tokenizer's first class)
	cpDigit // ASCII 0-9
	cpValid
)

// asciiClass holds the class bits of the 128 ASCII code points.
var asciiClass = func() (t [128]uint8) {
	for r := rune(0); r < 128; r++ {
		t[r] = classOf(r)
	}
	return t
}()

func classOf(r rune) uint8 {
	f := cpValid
	switch {
	case unicode.IsLetter(r):
		f |= cpLetter
	case unicode.IsNumber(r):
		f |= cpNumber
		if r >= '0' && r <= '9' {
			f |= cpDigit
		}
	case unicode.Is(unicode.White_Space, r):
		f |= cpSpace
	}
	if unicode.IsPunct(r) || r == '$' || r == '+' || r == '<' || r == '=' || r == '>' || r == '^' || r == '~' || r == '|' {
		f |= cpPunct
	}
	return f
}

// codepoints decodes s into dst (reused), one entry per code point.
func codepoints(dst []cpt, s string) []cpt {
	dst = dst[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			dst = append(dst, cpt{r: rune(c), fl: asciiClass[c], end: int32(i)})
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		fl := classOf(r) // an invalid byte decodes as U+FFFD: a symbol
		dst = append(dst, cpt{r: r, fl: fl, end: int32(i)})
	}
	return dst
}

// splitter appends word ends (indices into cps, exclusive, increasing,
// ending at len(cps)) for the code points cps[lo:hi].
type splitter struct {
	cps  []cpt
	ends []int
	hi   int
}

func (s *splitter) flags(i int) uint8 {
	if i < s.hi {
		return s.cps[i].fl
	}
	return 0
}

func (s *splitter) rune(i int) rune {
	if i < s.hi {
		return s.cps[i].r
	}
	return -1
}

// emit ends a word at end unless that word would be empty.
func (s *splitter) emit(end int) {
	if len(s.ends) == 0 || s.ends[len(s.ends)-1] < end {
		s.ends = append(s.ends, end)
	}
}

// contraction reports the length of 's 't 're 've 'm 'll 'd at pos (0 for
// none); fold lowercases the letters first, as (?i:...) does.
func (s *splitter) contraction(pos int, fold bool) int {
	if s.rune(pos) != '\'' || pos+1 >= s.hi {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	a := lower(s.rune(pos + 1))
	if a == 's' || a == 't' || a == 'm' || a == 'd' {
		return 2
	}
	if pos+2 < s.hi {
		b := lower(s.rune(pos + 2))
		if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
			return 3
		}
	}
	return 0
}

// whitespace handles the trailing alternatives shared by both regexes at a
// whitespace code point: \s*[\r\n]+ (llama3 only), \s+(?!\S), \s+. It
// returns the new position, or pos when no whitespace starts there.
func (s *splitter) whitespace(pos int, newlines bool) int {
	n, lastNL := 0, 0
	for s.flags(pos+n)&cpSpace != 0 {
		if r := s.rune(pos + n); r == '\r' || r == '\n' {
			lastNL = pos + n + 1
		}
		n++
	}
	switch {
	case newlines && lastNL > 0: // \s*[\r\n]+
		return lastNL
	case n > 1 && pos+n < s.hi: // \s+(?!\S): leave the last space to the next word
		return pos + n - 1
	default: // \s+
		return pos + n
	}
}

// llama3 splits cps[lo:hi] by LLaMA-3's regex
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func (s *splitter) llama3(lo, hi int) {
	s.hi = hi
	for pos := lo; pos < hi; {
		r, f := s.cps[pos].r, s.cps[pos].fl
		if n := s.contraction(pos, true); n > 0 {
			pos += n
			s.emit(pos)
			continue
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if r != '\r' && r != '\n' && f&cpNumber == 0 && (f&cpLetter != 0 || s.flags(pos+1)&cpLetter != 0) {
			pos++
			for s.flags(pos)&cpLetter != 0 {
				pos++
			}
			s.emit(pos)
			continue
		}
		// \p{N}{1,3}
		if f&cpNumber != 0 {
			start := pos
			for s.flags(pos)&cpNumber != 0 {
				pos++
				if pos-start == 3 {
					s.emit(pos)
					start = pos
				}
			}
			s.emit(pos)
			continue
		}
		//  ?[^\s\p{L}\p{N}]+[\r\n]*
		f2 := f
		if r == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&(cpSpace|cpLetter|cpNumber) == 0 {
			if r == ' ' {
				pos++
			}
			for f2 = s.flags(pos); f2 != 0 && f2&(cpSpace|cpLetter|cpNumber) == 0; f2 = s.flags(pos) {
				pos++
			}
			for r2 := s.rune(pos); r2 == '\r' || r2 == '\n'; r2 = s.rune(pos) {
				pos++
			}
			s.emit(pos)
			continue
		}
		if next := s.whitespace(pos, true); next > pos {
			pos = next
		} else {
			pos++ // no alternative matched: a word of its own
		}
		s.emit(pos)
	}
}

// gpt2 splits cps[lo:hi] by GPT-2's regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func (s *splitter) gpt2(lo, hi int) {
	s.hi = hi
	for pos := lo; pos < hi; {
		r, f := s.cps[pos].r, s.cps[pos].fl
		if n := s.contraction(pos, false); n > 0 {
			pos += n
			s.emit(pos)
			continue
		}
		f2 := f
		if r == ' ' {
			f2 = s.flags(pos + 1)
		}
		var class func(uint8) bool
		switch {
		case f2&cpLetter != 0:
			class = func(f uint8) bool { return f&cpLetter != 0 }
		case f2&cpNumber != 0:
			class = func(f uint8) bool { return f&cpNumber != 0 }
		case f2 != 0 && f2&(cpSpace|cpLetter|cpNumber) == 0:
			class = func(f uint8) bool { return f != 0 && f&(cpSpace|cpLetter|cpNumber) == 0 }
		}
		if class != nil {
			if r == ' ' {
				pos++
			}
			for class(s.flags(pos)) {
				pos++
			}
			s.emit(pos)
			continue
		}
		if next := s.whitespace(pos, false); next > pos {
			pos = next
		} else {
			pos++
		}
		s.emit(pos)
	}
}

// runs splits each word of s.ends (starting at lo) further, cutting out the
// maximal runs of code points for which in is true: what a regex like
// [class]+ does to the text between its matches.
func (s *splitter) runs(lo int, ends []int, in func(uint8) bool) []int {
	out := ends[:0:0]
	start := lo
	for _, end := range ends {
		for i := start + 1; i < end; i++ {
			if in(s.cps[i].fl) != in(s.cps[i-1].fl) {
				out = append(out, i)
			}
		}
		out = append(out, end)
		start = end
	}
	return out
}

// triples cuts each word at the leftmost non-overlapping matches of
// [0-9][0-9][0-9].
func (s *splitter) triples(lo int, ends []int) []int {
	out := ends[:0:0]
	start := lo
	for _, end := range ends {
		last := start
		for i := start; i+3 <= end; {
			if s.cps[i].fl&s.cps[i+1].fl&s.cps[i+2].fl&cpDigit != 0 {
				if i > last {
					out = append(out, i)
				}
				out = append(out, i+3)
				i += 3
				last = i
				continue
			}
			i++
		}
		if last < end {
			out = append(out, end)
		}
		start = end
	}
	return out
}

// byDefault applies llama.cpp's default BPE pre-tokenizer, four regexes in
// turn, each splitting the pieces the previous one left:
// [\p{P}\$\+<=>\^~\|]+, then GPT-2's regex, then \p{N}+, then [0-9]{3}.
func (s *splitter) byDefault(lo, hi int) {
	first := s.runs(lo, []int{hi}, func(f uint8) bool { return f&cpPunct != 0 })
	s.ends = s.ends[:0]
	start := lo
	for _, end := range first {
		s.gpt2(start, end)
		start = end
	}
	ends := s.runs(lo, s.ends, func(f uint8) bool { return f&cpNumber != 0 })
	s.ends = s.triples(lo, ends)
}

// split returns the byte offsets where the words of text end.
func split(kind preKind, text string, cps []cpt, ends []int) ([]cpt, []int) {
	cps = codepoints(cps, text)
	s := splitter{cps: cps, ends: ends[:0]}
	switch kind {
	case preLlama3:
		s.llama3(0, len(cps))
	case preGPT2:
		s.gpt2(0, len(cps))
	default:
		s.byDefault(0, len(cps))
	}
	for i, e := range s.ends {
		s.ends[i] = int(cps[e-1].end)
	}
	return cps, s.ends
}
