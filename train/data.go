package train

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/bitvk/bitvk/tokenizer"
)

// Data is a tokenized text: one stream of token ids (no BOS) and the
// positions a training sample may start at (line starts: the KJV corpus
// has one verse per line, and a prompt starts like a verse).
type Data struct {
	Tokens []int32
	Starts []int
	BOS    int32
}

// Text is one input file's name and contents.
type Text struct {
	Name string
	Body []byte
}

// Tokenize encodes texts with tok. A text that is empty or not UTF-8 is an
// error naming it (and the byte offset of the first bad sequence).
func Tokenize(tok *tokenizer.Tokenizer, texts []Text) (*Data, error) {
	if len(texts) == 0 {
		return nil, fmt.Errorf("no text to tokenize")
	}
	d := &Data{BOS: tok.BOS()}
	if d.BOS < 0 {
		return nil, fmt.Errorf("the vocabulary has no BOS token, which every training sequence starts with")
	}
	for _, t := range texts {
		if len(strings.TrimSpace(string(t.Body))) == 0 {
			return nil, fmt.Errorf("%s: the text is empty", t.Name)
		}
		if off, ok := tokenizer.InvalidUTF8(t.Body); !ok {
			return nil, fmt.Errorf("%s: not UTF-8 text (invalid byte 0x%02x at offset %d)", t.Name, t.Body[off], off)
		}
		ids := tok.Encode(string(t.Body), tokenizer.EncodeOptions{NoBOS: true})
		base := len(d.Tokens)
		d.Starts = append(d.Starts, base)
		for i := range ids {
			if i > 0 && strings.HasSuffix(tok.Piece(ids[i-1]), "\n") {
				d.Starts = append(d.Starts, base+i)
			}
		}
		d.Tokens = append(d.Tokens, ids...)
	}
	return d, nil
}

// Hash identifies the token stream, so a checkpoint is resumed on the same
// data.
func (d *Data) Hash() string {
	h := sha256.New()
	var b [4]byte
	for _, t := range d.Tokens {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Batch fills tokens and targets ([b][t]) with b samples for step: sample
// i is BOS then the t−1 tokens from a line start drawn with a generator
// seeded by (seed, step), so a resumed run draws the same batches. The
// targets are the inputs shifted by one.
func (d *Data) Batch(tokens, targets []int32, b, t int, seed uint64, step int) error {
	limit := len(d.Tokens) - t // a start s needs tokens s … s+t−1
	n := 0
	for n < len(d.Starts) && d.Starts[n] <= limit {
		n++
	}
	if n == 0 {
		return fmt.Errorf("the text has %d tokens, too few for one sequence of %d", len(d.Tokens), t)
	}
	r := rand.New(rand.NewPCG(seed, uint64(step)))
	for i := 0; i < b; i++ {
		s := d.Starts[r.IntN(n)]
		row, trow := tokens[i*t:(i+1)*t], targets[i*t:(i+1)*t]
		row[0] = d.BOS
		copy(row[1:], d.Tokens[s:s+t-1])
		copy(trow, d.Tokens[s:s+t])
	}
	return nil
}

// Windows cuts the stream into consecutive sequences of BOS and t−1
// tokens (the last, shorter one dropped), for a validation loss that is
// the same at every evaluation. It returns at most max windows (0: all).
func (d *Data) Windows(t, max int) (tokens, targets []int32, count int) {
	for s := 0; s+t <= len(d.Tokens) && (max == 0 || count < max); s += t - 1 {
		tokens = append(tokens, d.BOS)
		tokens = append(tokens, d.Tokens[s:s+t-1]...)
		targets = append(targets, d.Tokens[s:s+t]...)
		count++
	}
	return tokens, targets, count
}
