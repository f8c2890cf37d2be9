package server

import (
	"math"

	"github.com/bitvk/bitvk/tokenizer"
)

// jsonState follows the bytes of a reply constrained to one JSON object
// (response_format json_object): a pushdown automaton over bytes, with no
// grammar. Before each token is drawn, mask sets the logits of every token
// whose bytes would take the text out of the language of JSON-object
// prefixes to −∞; the reply ends when the object closes.
//
// Strings are checked for escapes and control characters, not for valid
// UTF-8; numbers follow RFC 8259's syntax; whitespace runs are bounded (so
// that a model cannot pad forever) and so is nesting.
type jsonState struct {
	mode  jsonMode
	sub   int                // literal: bytes matched; unicode escape: hex digits left; number: its jsonNum state
	lit   string             // the literal being matched (true, false, null)
	ws    int                // whitespace bytes in a row
	depth int                // open containers
	stack [jsonMaxDepth]byte // '{' or '['
}

type jsonMode uint8

const (
	jValue      jsonMode = iota // a value is expected (the start: an object)
	jObjOpen                    // after '{': a key or '}'
	jKey                        // after ',' in an object: a key
	jColon                      // after a key: ':'
	jAfter                      // after a value: ',' or the container's close
	jArrOpen                    // after '[': a value or ']'
	jString                     // in a string value
	jKeyString                  // in a key
	jEscape                     // after a backslash in a string value
	jKeyEscape                  // after a backslash in a key
	jUnicode                    // in \uXXXX of a string value
	jKeyUnicode                 // in \uXXXX of a key
	jLiteral                    // in true, false or null
	jNumber                     // in a number
	jDone                       // the object is closed
)

const (
	jsonMaxDepth = 32
	jsonMaxWS    = 16
)

// Number states.
const (
	numMinus = iota // after '-'
	numZero         // "0"
	numInt          // 1-9 digits
	numDot          // after '.'
	numFrac         // fraction digits
	numE            // after e/E
	numESign        // after the exponent's sign
	numExp          // exponent digits
)

func newJSONState() *jsonState { return &jsonState{} }

func (s *jsonState) complete() bool { return s.mode == jDone }

// feed advances over text; false (and s undefined) when text leaves the
// language.
func (s *jsonState) feed(text string) bool {
	for i := 0; i < len(text); i++ {
		if !s.byte(text[i]) {
			return false
		}
	}
	return true
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// byte advances over one byte.
func (s *jsonState) byte(c byte) bool {
	if s.mode == jNumber {
		if s.number(c) {
			return true
		}
		// The number ended before c: c follows a value.
		if s.sub == numMinus || s.sub == numDot || s.sub == numE || s.sub == numESign {
			return false
		}
		s.mode = jAfter
	}
	switch s.mode {
	case jString, jKeyString:
		switch {
		case c == '"':
			if s.mode == jKeyString {
				s.mode = jColon
			} else {
				s.mode = jAfter
			}
		case c == '\\':
			s.mode += jEscape - jString
		case c < 0x20:
			return false
		}
		return true
	case jEscape, jKeyEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.mode -= jEscape - jString
		case 'u':
			s.mode += jUnicode - jEscape
			s.sub = 4
		default:
			return false
		}
		return true
	case jUnicode, jKeyUnicode:
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
		if s.sub--; s.sub == 0 {
			s.mode -= jUnicode - jString
		}
		return true
	case jLiteral:
		if c != s.lit[s.sub] {
			return false
		}
		if s.sub++; s.sub == len(s.lit) {
			s.mode = jAfter
		}
		return true
	}
	if isWS(c) {
		if s.ws++; s.ws > jsonMaxWS {
			return false
		}
		return true
	}
	s.ws = 0
	switch s.mode {
	case jValue, jArrOpen:
		if s.mode == jArrOpen && c == ']' {
			return s.close(']')
		}
		return s.value(c)
	case jObjOpen, jKey:
		switch {
		case c == '"':
			s.mode = jKeyString
			return true
		case c == '}' && s.mode == jObjOpen:
			return s.close('}')
		}
		return false
	case jColon:
		if c != ':' {
			return false
		}
		s.mode = jValue
		return true
	case jAfter:
		top := s.stack[s.depth-1]
		switch {
		case c == ',' && top == '{':
			s.mode = jKey
		case c == ',' && top == '[':
			s.mode = jValue
		case c == '}' && top == '{', c == ']' && top == '[':
			return s.close(c)
		default:
			return false
		}
		return true
	}
	return false // jDone: nothing follows
}

// value starts a value with c; the whole reply is one object.
func (s *jsonState) value(c byte) bool {
	if s.depth == 0 && c != '{' {
		return false
	}
	switch {
	case c == '{' || c == '[':
		if s.depth == jsonMaxDepth {
			return false
		}
		s.stack[s.depth] = c
		s.depth++
		s.mode = jObjOpen
		if c == '[' {
			s.mode = jArrOpen
		}
	case c == '"':
		s.mode = jString
	case c == 't' || c == 'f' || c == 'n':
		s.mode, s.sub, s.lit = jLiteral, 1, "null"
		if c == 't' {
			s.lit = "true"
		} else if c == 'f' {
			s.lit = "false"
		}
	case c == '-':
		s.mode, s.sub = jNumber, numMinus
	case c == '0':
		s.mode, s.sub = jNumber, numZero
	case '1' <= c && c <= '9':
		s.mode, s.sub = jNumber, numInt
	default:
		return false
	}
	return true
}

// close ends the innermost container with c.
func (s *jsonState) close(c byte) bool {
	s.depth--
	s.mode = jAfter
	if s.depth == 0 {
		s.mode = jDone
	}
	return true
}

// number advances a number over c; false when c is not part of it.
func (s *jsonState) number(c byte) bool {
	digit := '0' <= c && c <= '9'
	switch s.sub {
	case numMinus:
		switch {
		case c == '0':
			s.sub = numZero
		case digit:
			s.sub = numInt
		default:
			return false
		}
	case numZero, numInt:
		switch {
		case digit && s.sub == numInt:
		case c == '.':
			s.sub = numDot
		case c == 'e' || c == 'E':
			s.sub = numE
		default:
			return false
		}
	case numDot, numFrac:
		switch {
		case digit:
			s.sub = numFrac
		case (c == 'e' || c == 'E') && s.sub == numFrac:
			s.sub = numE
		default:
			return false
		}
	case numE:
		switch {
		case c == '+' || c == '-':
			s.sub = numESign
		case digit:
			s.sub = numExp
		default:
			return false
		}
	case numESign, numExp:
		if !digit {
			return false
		}
		s.sub = numExp
	}
	return true
}

// mask sets to −∞ the logits of the tokens that cannot come next: those
// whose bytes leave the language, control tokens, tokens with no text,
// and the end of the turn (the reply ends when the object closes).
func (s *jsonState) mask(tok *tokenizer.Tokenizer, logits []float32, isEOG func(int32) bool) {
	inf := float32(math.Inf(-1))
	for id := range logits {
		t := int32(id)
		p := tok.Piece(t)
		ty := tok.Type(t)
		if p == "" || isEOG(t) || ty != tokenizer.TypeNormal && ty != tokenizer.TypeByte && ty != tokenizer.TypeUserDefined {
			logits[id] = inf
			continue
		}
		try := *s
		if !try.feed(p) {
			logits[id] = inf
		}
	}
}
