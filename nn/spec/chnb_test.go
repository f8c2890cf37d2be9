package spec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallTable is the hand-made table the golden bytes below spell out.
func smallTable() *Chains {
	c := new(Chains)
	c.Entries[0] = Chain{Tokens: []int32{1, 2, 3}, Confidence: 0.5}
	c.Entries[1] = Chain{Tokens: []int32{4095}, Confidence: 1}
	c.Entries[2] = Chain{Tokens: []int32{0, 70000}, Confidence: 0.25}
	return c
}

// smallGolden is smallTable in the CHNB format, written field by field.
func smallGolden(t *testing.T) []byte {
	t.Helper()
	s := "" +
		"43484e42" + // "CHNB"
		"0100" + // version 1
		"0001" + // 256 entries
		"0800" + // chains of at most 8 tokens
		"0000" + // reserved
		// entry 0: id, reserved, 3 tokens: 1 2 3, confidence 0.5 (0x3f000000)
		"00" + "00" + "0300" + "01000000" + "02000000" + "03000000" + "0000003f" +
		// entry 1: 1 token: 4095 (0xfff), confidence 1 (0x3f800000)
		"01" + "00" + "0100" + "ff0f0000" + "0000803f" +
		// entry 2: 2 tokens: 0 70000 (0x11170), confidence 0.25 (0x3e800000)
		"02" + "00" + "0200" + "00000000" + "70110100" + "0000803e"
	for id := 3; id < 256; id++ {
		s += fmt.Sprintf("%02x", id) + "00" + "0000" + "00000000" // empty, confidence 0
	}
	s += "bba87288" // CRC-32 0x8872a8bb of all the above (Python's zlib.crc32)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCHNBGolden(t *testing.T) {
	want := smallGolden(t)
	if len(want) != 2088 {
		t.Fatalf("golden table is %d bytes, want 12 + 256·8 + 6·4 + 4 = 2088", len(want))
	}
	got, err := smallTable().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("written bytes differ from the golden ones:\n got %x\nwant %x", got, want)
	}
	var buf bytes.Buffer
	if n, err := smallTable().WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes, %v; want the golden %d bytes", n, err, len(want))
	}
	for _, vocab := range []int{0, 70001} {
		c, err := ReadChains(bytes.NewReader(want), vocab)
		if err != nil {
			t.Fatalf("vocab %d: %v", vocab, err)
		}
		for i, e := range c.Entries {
			w := smallTable().Entries[i]
			if !equalTokens(e.Tokens, w.Tokens) || e.Confidence != w.Confidence {
				t.Errorf("entry %d reads back as %v %v, want %v %v", i, e.Tokens, e.Confidence, w.Tokens, w.Confidence)
			}
		}
		if c.Filled() != 3 {
			t.Errorf("Filled() = %d, want 3", c.Filled())
		}
	}
}

func equalTokens(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fullTable has every entry at the maximum length, with varied ids and
// confidences.
func fullTable() *Chains {
	c := new(Chains)
	x := uint32(7)
	for i := range c.Entries {
		toks := make([]int32, i%(MaxChain+1))
		for j := range toks {
			x = x*1664525 + 1013904223
			toks[j] = int32(x >> 1)
		}
		x = x*1664525 + 1013904223
		c.Entries[i] = Chain{Tokens: toks, Confidence: float32(x>>8) / (1 << 24)}
	}
	return c
}

func TestCHNBRoundTrip(t *testing.T) {
	for name, c := range map[string]*Chains{"empty": new(Chains), "small": smallTable(), "full": fullTable()} {
		b, err := c.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := ParseChains(b, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := back.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s: writing the table read back gave different bytes (%v)", name, err)
		}
	}
	full := new(Chains)
	for i := range full.Entries {
		full.Entries[i].Tokens = make([]int32, MaxChain)
	}
	if b, _ := full.MarshalBinary(); len(b) != MaxCHNBSize {
		t.Errorf("a full table is %d bytes, want MaxCHNBSize = %d", len(b), MaxCHNBSize)
	}
}

// setCRC rewrites the last four bytes as the CRC-32 of the rest, so that a
// corruption is caught by its own check rather than by the CRC.
func setCRC(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
	return b
}

func TestCHNBCorruptions(t *testing.T) {
	// Byte offsets in the golden table.
	const (
		entry0 = 12                  // id 0 at 12, reserved 13, count 14, tokens 16…27, confidence 28
		entry1 = entry0 + 4 + 12 + 4 // 32: token 36, confidence 40
		entry2 = entry1 + 4 + 4 + 4  // 44: tokens 48 and 52, confidence 56
		entry3 = entry2 + 4 + 8 + 4  // 60: the first empty entry
	)
	put16 := func(off int, v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint16(b[off:], v); return setCRC(b) }
	}
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return setCRC(b) }
	}
	cut := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }
	for _, c := range []struct {
		name  string
		edit  func([]byte) []byte
		vocab int
		want  string
	}{
		{"magic", func(b []byte) []byte { b[3] = 'X'; return setCRC(b) }, 0, `not a CHNB file: it starts with "CHNX"`},
		{"gguf", func([]byte) []byte { return []byte("GGUF\x03\x00\x00\x00") }, 0, `not a CHNB file: it starts with "GGUF"`},
		{"version", put16(4, 2), 0, "byte 4: version 2; this bitvk reads version 1"},
		{"entry count", put16(6, 255), 0, "byte 6: entry count 255; a table has exactly 256"},
		{"chain length", put16(8, 16), 0, "byte 8: maximum chain length 16; version 1 tables have 8"},
		{"header reserved", put16(10, 1), 0, "byte 10: reserved header field is 1, not 0"},
		{"id order", func(b []byte) []byte { b[entry1] = 2; return setCRC(b) }, 0, "byte 32: entry 1 has id 2: ids must run 0…255 in order"},
		{"entry reserved", func(b []byte) []byte { b[entry2+1] = 9; return setCRC(b) }, 0, "byte 45: entry 2's reserved byte is 9, not 0"},
		{"count", put16(entry3+2, MaxChain+1), 0, "byte 62: entry 3 holds 9 tokens, more than the maximum chain length 8"},
		{"vocab", func(b []byte) []byte { return b }, 70000, "byte 52: entry 2's token 1 is id 70000, outside the vocabulary of 70000 tokens"},
		{"negative token", put32(entry0+8, 0xffffffff), 0, "byte 20: entry 0's token 1 is id -1, outside the vocabulary of non-negative ids"},
		{"confidence", put32(entry1+8, math.Float32bits(1.5)), 0, "byte 40: entry 1's confidence is 1.5, not a probability"},
		{"NaN confidence", put32(entry0+16, 0x7fc00000), 0, "byte 28: entry 0's confidence is NaN, not a probability"},
		{"empty", cut(0), 0, "truncated: the header needs bytes 0…11, but the data is only 0 bytes long"},
		{"in magic", cut(2), 0, "truncated: the header needs bytes 0…11, but the data is only 2 bytes long"},
		{"in header", cut(10), 0, "truncated: the header needs bytes 0…11, but the data is only 10 bytes long"},
		{"in entry header", cut(entry1 + 2), 0, "truncated: entry 1's header needs bytes 32…35"},
		{"in tokens", cut(entry2 + 9), 0, "truncated: entry 2's 2 tokens and confidence needs bytes 48…59"},
		{"no CRC", cut(2084), 0, "truncated: the CRC-32 needs bytes 2084…2087, but the data is only 2084 bytes long"},
		{"half CRC", cut(2086), 0, "truncated: the CRC-32 needs bytes 2084…2087"},
		{"trailing", func(b []byte) []byte { return append(b, 0) }, 0, "1 trailing bytes after the table's CRC-32 at byte 2084"},
		{"CRC", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, 0, "CRC-32 mismatch: the file says 8972a8bb, its 2084 bytes sum to 8872a8bb"},
		{"damaged confidence", func(b []byte) []byte { b[entry0+16] ^= 1; return b }, 0, "CRC-32 mismatch"},
	} {
		data := c.edit(smallGolden(t))
		got, err := ParseChains(data, c.vocab)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "chnb: ") {
			t.Errorf("%s: got %v; want an error saying %q", c.name, err, c.want)
		}
		if got != nil {
			t.Errorf("%s: a table came back with the error", c.name)
		}
		if _, err := ReadChains(bytes.NewReader(data), c.vocab); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ReadChains: got %v; want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := ParseChains(smallGolden(t), -1); err == nil || !strings.Contains(err.Error(), "vocabulary size -1") {
		t.Errorf("negative vocab: %v", err)
	}
	// An endless stream is read only up to the largest table.
	endless := bytes.NewReader(append(smallGolden(t), make([]byte, 1<<20)...))
	if _, err := ReadChains(endless, 0); err == nil || !strings.Contains(err.Error(), "trailing bytes") {
		t.Errorf("endless stream: %v", err)
	}
}

func TestCHNBWriteRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		e    Chain
		want string
	}{
		{"long", Chain{Tokens: make([]int32, MaxChain+1)}, "entry 5 has 9 tokens, more than the maximum chain length 8"},
		{"negative", Chain{Tokens: []int32{3, -2}}, "entry 5's token 1 is the negative id -2"},
		{"above one", Chain{Tokens: []int32{3}, Confidence: 1.25}, "entry 5's confidence is 1.25"},
		{"NaN", Chain{Confidence: float32(math.NaN())}, "entry 5's confidence is NaN"},
	} {
		tab := smallTable()
		tab.Entries[5] = c.e
		var buf bytes.Buffer
		if _, err := tab.WriteTo(&buf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v; want %q", c.name, err, c.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: %d bytes written for a table that cannot be", c.name, buf.Len())
		}
	}
	var nilTable *Chains
	if _, err := nilTable.MarshalBinary(); err == nil {
		t.Error("a nil table marshalled")
	}
}

func TestCHNBSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.chnb")
	if err := smallTable().Save(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, smallGolden(t)) {
		t.Fatal("Save wrote other bytes than the golden ones")
	}
	c, err := LoadChains(path, 0)
	if err != nil || !equalTokens(c.Entries[0].Tokens, []int32{1, 2, 3}) {
		t.Fatalf("LoadChains: %v", err)
	}
	if _, err := LoadChains(path, 4096); err == nil || !strings.Contains(err.Error(), path+": chnb: byte 52") {
		t.Errorf("LoadChains with too small a vocabulary: %v", err)
	}
	if _, err := LoadChains(filepath.Join(dir, "none.chnb"), 0); err == nil || !os.IsNotExist(err) {
		t.Errorf("LoadChains of a missing file: %v", err)
	}

	// A table that cannot be written leaves the file as it was, and no
	// temporary file beside it.
	bad := fullTable()
	bad.Entries[9].Confidence = 2
	if err := bad.Save(path); err == nil {
		t.Error("Save wrote an invalid table")
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, smallGolden(t)) {
		t.Error("a failed Save changed the existing file")
	}
	if err := fullTable().Save(filepath.Join(dir, "no", "such", "dir.chnb")); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
	// Replacing works once the new table is complete.
	if err := fullTable().Save(path); err != nil {
		t.Fatal(err)
	}
	want, _ := fullTable().MarshalBinary()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, want) {
		t.Error("Save did not replace the file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d files after the saves, want 1 (no temporary files left)", len(ents))
	}
}

func FuzzReadCHNB(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add([]byte("CHNB"), uint32(0))
	for _, c := range []*Chains{new(Chains), smallTable(), fullTable()} {
		b, err := c.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint32(0))
		f.Add(b, uint32(70001))
		f.Add(b[:len(b)-5], uint32(0))
		g := append([]byte(nil), b...)
		g[14] = MaxChain + 1
		f.Add(setCRC(g), uint32(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, vocab uint32) {
		c, err := ParseChains(data, int(vocab%(1<<24)))
		if err != nil {
			if c != nil {
				t.Fatal("a table came back with an error")
			}
			if !strings.HasPrefix(err.Error(), "chnb: ") {
				t.Fatalf("error without the chnb: prefix: %v", err)
			}
			return
		}
		back, err := c.MarshalBinary()
		if err != nil {
			t.Fatalf("an accepted table cannot be written: %v", err)
		}
		if !bytes.Equal(back, data) {
			t.Fatal("an accepted table re-writes to different bytes")
		}
		var dst [MaxChain]int32
		for _, e := range c.Entries {
			if d := c.Draft(dst[:0], e.Tokens, MaxChain); len(d) > MaxChain {
				t.Fatalf("drafted %d tokens, more than asked", len(d))
			}
		}
	})
}
