package spec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
)

// The CHNB format: a table of 256 token chains for drafting. All numbers
// are little-endian.
//
//	header, 12 bytes:
//	  "CHNB"        magic
//	  u16 version   = 1
//	  u16 entries   = 256
//	  u16 max chain = 8 (tokens per entry at most)
//	  u16 reserved  = 0
//	256 entries, ids 0…255 in order, each:
//	  u8  id
//	  u8  reserved  = 0
//	  u16 count     ≤ max chain
//	  count × i32   token ids
//	  f32 confidence, in [0, 1]
//	u32 CRC-32 (IEEE) of every byte before it
//
// A file is thus 12 + 256·8 + 4·(tokens) + 4 bytes: 2,064 bytes empty and
// 10,256 bytes full.
const (
	CHNBMagic   = "CHNB"
	CHNBVersion = 1
	Entries     = 256 // entries in a table
	MaxChain    = 8   // tokens in an entry at most

	chnbHeaderSize = 12
	chnbEntryFixed = 8 // id, reserved, count, confidence
	// MaxCHNBSize is the size of a table whose every chain is full.
	MaxCHNBSize = chnbHeaderSize + Entries*(chnbEntryFixed+4*MaxChain) + 4
)

// Chain is one entry of a table: a token sequence and the model's
// probability of the tokens it drafts (see Mine).
type Chain struct {
	Tokens     []int32 // 0…MaxChain token ids
	Confidence float32 // in [0, 1]
}

// Chains is a CHNB table: the entry with id i is Entries[i]. It drafts
// (see Draft); its lookup index is built when the table is read or mined,
// or at the first Draft. After changing Entries, call Reindex.
type Chains struct {
	Entries [Entries]Chain
	index   atomic.Pointer[chainIndex]
}

// ReadChains reads a CHNB table from r, which must hold the table and
// nothing after it. vocab is the model's vocabulary size: a token id at or
// beyond it is an error; 0 skips that check.
func ReadChains(r io.Reader, vocab int) (*Chains, error) {
	// A table is at most MaxCHNBSize bytes; one byte more shows trailing
	// data without reading an endless stream.
	data, err := io.ReadAll(io.LimitReader(r, MaxCHNBSize+1))
	if err != nil {
		return nil, fmt.Errorf("chnb: %w", err)
	}
	return ParseChains(data, vocab)
}

// LoadChains reads the CHNB file at path (see ReadChains).
func LoadChains(path string, vocab int) (*Chains, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := ReadChains(f, vocab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// chnbReader walks a table's bytes, remembering where it is for errors.
type chnbReader struct {
	data []byte
	off  int
}

func (r *chnbReader) need(n int, what string) ([]byte, error) {
	if len(r.data)-r.off < n {
		return nil, fmt.Errorf("chnb: truncated: %s needs bytes %d…%d, but the data is only %d bytes long", what, r.off, r.off+n-1, len(r.data))
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b, nil
}

// ParseChains parses a CHNB table held in data (see ReadChains).
func ParseChains(data []byte, vocab int) (*Chains, error) {
	if vocab < 0 {
		return nil, fmt.Errorf("chnb: vocabulary size %d is negative", vocab)
	}
	r := &chnbReader{data: data}
	if n := min(len(data), len(CHNBMagic)); string(data[:n]) != CHNBMagic[:n] {
		return nil, fmt.Errorf("chnb: not a CHNB file: it starts with %q, not the magic %q", data[:n], CHNBMagic)
	}
	h, err := r.need(chnbHeaderSize, "the header")
	if err != nil {
		return nil, err
	}
	version := binary.LittleEndian.Uint16(h[4:])
	count := binary.LittleEndian.Uint16(h[6:])
	maxChain := binary.LittleEndian.Uint16(h[8:])
	reserved := binary.LittleEndian.Uint16(h[10:])
	switch {
	case version != CHNBVersion:
		return nil, fmt.Errorf("chnb: byte 4: version %d; this bitvk reads version %d", version, CHNBVersion)
	case count != Entries:
		return nil, fmt.Errorf("chnb: byte 6: entry count %d; a table has exactly %d", count, Entries)
	case maxChain != MaxChain:
		return nil, fmt.Errorf("chnb: byte 8: maximum chain length %d; version %d tables have %d", maxChain, CHNBVersion, MaxChain)
	case reserved != 0:
		return nil, fmt.Errorf("chnb: byte 10: reserved header field is %d, not 0", reserved)
	}
	c := new(Chains)
	for i := range Entries {
		at := r.off
		e, err := r.need(4, fmt.Sprintf("entry %d's header", i))
		if err != nil {
			return nil, err
		}
		id, res, n := e[0], e[1], binary.LittleEndian.Uint16(e[2:])
		switch {
		case int(id) != i:
			return nil, fmt.Errorf("chnb: byte %d: entry %d has id %d: ids must run 0…%d in order", at, i, id, Entries-1)
		case res != 0:
			return nil, fmt.Errorf("chnb: byte %d: entry %d's reserved byte is %d, not 0", at+1, i, res)
		case n > MaxChain:
			return nil, fmt.Errorf("chnb: byte %d: entry %d holds %d tokens, more than the maximum chain length %d", at+2, i, n, MaxChain)
		}
		b, err := r.need(4*int(n)+4, fmt.Sprintf("entry %d's %d tokens and confidence", i, n))
		if err != nil {
			return nil, err
		}
		var toks []int32
		if n > 0 {
			toks = make([]int32, n)
		}
		for j := range toks {
			t := int32(binary.LittleEndian.Uint32(b[4*j:]))
			if t < 0 || (vocab > 0 && int(t) >= vocab) {
				return nil, fmt.Errorf("chnb: byte %d: entry %d's token %d is id %d, outside the vocabulary of %s (a table mined for another model?)", at+4+4*j, i, j, t, vocabDesc(vocab))
			}
			toks[j] = t
		}
		conf := math.Float32frombits(binary.LittleEndian.Uint32(b[4*n:]))
		if !(conf >= 0 && conf <= 1) {
			return nil, fmt.Errorf("chnb: byte %d: entry %d's confidence is %v, not a probability in [0, 1]", at+4+4*int(n), i, conf)
		}
		c.Entries[i] = Chain{Tokens: toks, Confidence: conf}
	}
	body := r.off
	sum, err := r.need(4, "the CRC-32")
	if err != nil {
		return nil, err
	}
	if extra := len(data) - r.off; extra > 0 {
		if len(data) > MaxCHNBSize {
			return nil, fmt.Errorf("chnb: %d trailing bytes after the table's CRC-32 at byte %d (or more: the data goes beyond the largest table, %d bytes)", extra, body, MaxCHNBSize)
		}
		return nil, fmt.Errorf("chnb: %d trailing bytes after the table's CRC-32 at byte %d", extra, body)
	}
	want, got := binary.LittleEndian.Uint32(sum), crc32.ChecksumIEEE(data[:body])
	if want != got {
		return nil, fmt.Errorf("chnb: CRC-32 mismatch: the file says %08x, its %d bytes sum to %08x (a damaged file)", want, body, got)
	}
	c.Reindex()
	return c, nil
}

func vocabDesc(vocab int) string {
	if vocab == 0 {
		return "non-negative ids"
	}
	return fmt.Sprintf("%d tokens", vocab)
}

// check reports why c cannot be written, or nil.
func (c *Chains) check() error {
	if c == nil {
		return errNoTable
	}
	for i, e := range c.Entries {
		if len(e.Tokens) > MaxChain {
			return fmt.Errorf("chnb: entry %d has %d tokens, more than the maximum chain length %d", i, len(e.Tokens), MaxChain)
		}
		for j, t := range e.Tokens {
			if t < 0 {
				return fmt.Errorf("chnb: entry %d's token %d is the negative id %d", i, j, t)
			}
		}
		if !(e.Confidence >= 0 && e.Confidence <= 1) {
			return fmt.Errorf("chnb: entry %d's confidence is %v, not a probability in [0, 1]", i, e.Confidence)
		}
	}
	return nil
}

// MarshalBinary returns the table in the CHNB format.
func (c *Chains) MarshalBinary() ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, MaxCHNBSize)
	b = append(b, CHNBMagic...)
	b = binary.LittleEndian.AppendUint16(b, CHNBVersion)
	b = binary.LittleEndian.AppendUint16(b, Entries)
	b = binary.LittleEndian.AppendUint16(b, MaxChain)
	b = binary.LittleEndian.AppendUint16(b, 0)
	for i, e := range c.Entries {
		b = append(b, byte(i), 0)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Tokens)))
		for _, t := range e.Tokens {
			b = binary.LittleEndian.AppendUint32(b, uint32(t))
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(e.Confidence))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// WriteTo writes the table to w in the CHNB format. It writes nothing when
// the table cannot be written (a chain too long, a negative token id, a
// confidence outside [0, 1]).
func (c *Chains) WriteTo(w io.Writer) (int64, error) {
	b, err := c.MarshalBinary()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}

// Save writes the table to path: to a temporary file beside it first,
// renamed into place only once complete, so that a failed write leaves an
// existing file as it was.
func (c *Chains) Save(path string) (err error) {
	b, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// IsCHNB reports whether data starts with the CHNB magic.
func IsCHNB(data []byte) bool { return bytes.HasPrefix(data, []byte(CHNBMagic)) }

// errNoTable is returned by methods called on a nil *Chains.
var errNoTable = errors.New("chnb: no table (nil *Chains)")
