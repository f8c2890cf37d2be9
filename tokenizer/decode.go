package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decoding maps each token to its bytes (its "piece") and joins them. A
// token can hold part of a UTF-8 character (byte-level BPE splits emoji
// across tokens; SentencePiece falls back to <0xNN> bytes), so the Decoder
// holds back an incomplete character until the tokens that complete it
// arrive, and every string it returns is valid UTF-8. Bytes that can never
// form a character become U+FFFD, one per byte, as Go's range over a string
// reads them; Decode(ids) is exactly what a Decoder returns for ids, joined.
//
// Control, unknown and unused tokens add no text (Piece still shows them).
// SentencePiece's space prefix is taken off the first piece of text, so
// that Decode(Encode(s)) == s.

// buildPieces decodes every token once.
func (t *Tokenizer) buildPieces() {
	t.pieces = make([]string, len(t.tokens))
	t.hidden = make([]bool, len(t.tokens))
	for id, tok := range t.tokens {
		switch t.types[id] {
		case TypeNormal:
			if t.kind == kindBPE {
				t.pieces[id] = string(decodeGPT2(tok))
			} else {
				t.pieces[id] = strings.ReplaceAll(tok, spaceMark, " ")
			}
		case TypeByte:
			if b, ok := parseByteToken(tok); ok {
				t.pieces[id] = string([]byte{b})
			} else {
				t.pieces[id] = tok
			}
		case TypeUserDefined:
			t.pieces[id] = tok
		default: // control, unknown, unused, undefined
			t.pieces[id] = tok
			t.hidden[id] = true
		}
	}
}

// parseByteToken reads "<0xNN>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(s[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// Piece is what a token stands for, for display: its bytes (which may be
// part of a UTF-8 character) for a text token, its text for a control token
// such as "<|eot_id|>". It is "" for an id out of range.
func (t *Tokenizer) Piece(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.pieces[id]
}

// Containing returns, in id order, the tokens whose Piece contains any of
// subs (empty strings are skipped): the tokens that hold a sequence
// breaker of DRY sampling, for instance.
func (t *Tokenizer) Containing(subs []string) []int32 {
	var ids []int32
	for id, p := range t.pieces {
		for _, sub := range subs {
			if sub != "" && strings.Contains(p, sub) {
				ids = append(ids, int32(id))
				break
			}
		}
	}
	return ids
}

// Decode returns the text of ids, leaving out control tokens. It is what a
// fresh Decoder returns for ids, joined, then flushed.
func (t *Tokenizer) Decode(ids []int32) string {
	d := t.NewDecoder()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Next(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

// Decoder turns a stream of ids into text one id at a time, never returning
// half a UTF-8 character. The zero value is not usable: call NewDecoder.
type Decoder struct {
	t       *Tokenizer
	pending []byte // the start of a character not yet complete
	started bool   // text has been seen (SentencePiece's prefix space is gone)
}

// NewDecoder returns a decoder for a sequence that starts with its first id
// (so the SentencePiece space prefix of the first text is dropped). To
// stream only the continuation of a prompt, feed the prompt to Prime first.
func (t *Tokenizer) NewDecoder() *Decoder { return &Decoder{t: t} }

// Prime feeds ids whose text the caller already has (a prompt): the decoder
// takes them into account but their text is not returned.
func (d *Decoder) Prime(ids []int32) {
	for _, id := range ids {
		d.Next(id)
	}
}

// Next returns the text that id completes: possibly "", possibly the end of
// a character begun by earlier ids. Ids out of range add nothing.
func (d *Decoder) Next(id int32) string {
	t := d.t
	if !t.valid(id) || t.hidden[id] {
		return ""
	}
	p := t.pieces[id]
	if p == "" {
		return ""
	}
	if !d.started {
		d.started = true
		if t.kind == kindSPM && t.addSpacePrefix && p[0] == ' ' {
			p = p[1:]
		}
	}
	if len(d.pending) == 0 && utf8.ValidString(p) {
		return p // the common case: whole characters
	}
	d.pending = append(d.pending, p...)
	return d.take(false)
}

// Flush returns what the decoder still holds (an incomplete character, as
// U+FFFD per byte) and empties it; call it when the stream ends.
func (d *Decoder) Flush() string { return d.take(true) }

// take returns the longest prefix of pending made of decided characters:
// complete ones, and bytes that can start no character (as U+FFFD). With
// all, an incomplete tail is decided too.
func (d *Decoder) take(all bool) string {
	var b strings.Builder
	p := d.pending
	for len(p) > 0 {
		if !all && !utf8.FullRune(p) {
			break
		}
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.Write(p[:size])
		}
		p = p[size:]
	}
	d.pending = append(d.pending[:0], p...)
	return b.String()
}
