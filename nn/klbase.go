package nn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
)

// A KL-divergence base file keeps what one perplexity run saw, so that a
// later run (another backend, another head) can be compared with it
// position by position: the tokens as evaluated and the log-probabilities
// at every scored position. All fields are little-endian (docs/FORMATS.md):
//
//	magic "BITVKKLD" | version u32 (1) | vocab u32 | n_ctx u32 | chunks u32 |
//	first u32 (= n_ctx/2) | source_len u32 | source [source_len]byte |
//	tokens [chunks][n_ctx]i32 |
//	logprobs [chunks][n_ctx−1−first][vocab]f32
//
// tokens are as evaluated (each chunk's first token already replaced by
// BOS when the model adds one), so the comparing run needs no tokenizer.
// logprobs[c][k] is ln softmax of the logits at position first+k of chunk
// c, which predict tokens[c][first+k+1].
const (
	klBaseMagic   = "BITVKKLD"
	klBaseVersion = 1
	klHeaderSize  = 32
	// KLBaseMaxSource bounds the source description.
	KLBaseMaxSource = 1024
	klMaxDim        = 1 << 24 // bound on vocab, n_ctx and chunks
)

// KLBaseHeader describes a base file.
type KLBaseHeader struct {
	Vocab  int    // log-probabilities per position
	Ctx    int    // n_ctx: tokens per chunk
	Chunks int    // chunks
	Source string // what produced it (model, backend, head), for the reader to show
}

// Plan is the chunk plan of the run that wrote the file.
func (h KLBaseHeader) Plan() ChunkPlan { return ChunkPlan{Ctx: h.Ctx, Chunks: h.Chunks} }

func (h KLBaseHeader) check() error {
	switch {
	case h.Vocab < 1 || h.Vocab > klMaxDim:
		return fmt.Errorf("vocabulary of %d outside 1..%d", h.Vocab, klMaxDim)
	case h.Ctx < MinPerplexityContext || h.Ctx > klMaxDim:
		return fmt.Errorf("n_ctx of %d outside %d..%d", h.Ctx, MinPerplexityContext, klMaxDim)
	case h.Chunks < 1 || h.Chunks > klMaxDim:
		return fmt.Errorf("chunk count %d outside 1..%d", h.Chunks, klMaxDim)
	case len(h.Source) > KLBaseMaxSource:
		return fmt.Errorf("source description of %d bytes, more than %d", len(h.Source), KLBaseMaxSource)
	}
	return nil
}

// size is the file size the header implies with a source description of
// srcLen bytes, or false when it overflows.
func (h KLBaseHeader) size(srcLen int) (uint64, bool) {
	rows := uint64(h.Chunks) * uint64(h.Plan().Scored()) // < 2^48
	hi, lp := bits.Mul64(rows, uint64(h.Vocab)*4)
	tokens := uint64(h.Chunks) * uint64(h.Ctx) * 4 // < 2^50
	total := klHeaderSize + uint64(srcLen) + tokens
	sum, carry := bits.Add64(total, lp, 0)
	return sum, hi == 0 && carry == 0
}

// KLBaseWriter writes a base file to a temporary file beside the target
// and renames it into place on Commit, so an interrupted run never leaves
// a partial file under the name.
type KLBaseWriter struct {
	h          KLBaseHeader
	path       string
	tmp        *os.File
	w          *bufio.Writer
	rows, want int
	buf        []byte
	done       bool
}

// CreateKLBase starts a base file at path for a run of h's shape over
// tokens ([h.Chunks][h.Ctx], as evaluated).
func CreateKLBase(path string, h KLBaseHeader, tokens []int32) (*KLBaseWriter, error) {
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("nn: KL-divergence base %s: %w", path, err)
	}
	if len(tokens) != h.Chunks*h.Ctx {
		return nil, fmt.Errorf("nn: KL-divergence base %s: %d tokens for %d chunks of %d", path, len(tokens), h.Chunks, h.Ctx)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= h.Vocab {
			return nil, fmt.Errorf("nn: KL-divergence base %s: token %d at %d is outside the vocabulary of %d", path, t, i, h.Vocab)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	kw := &KLBaseWriter{h: h, path: path, tmp: tmp, w: bufio.NewWriterSize(tmp, 1<<20),
		want: h.Chunks * h.Plan().Scored(), buf: make([]byte, 4*h.Vocab)}
	head := make([]byte, klHeaderSize, klHeaderSize+len(h.Source)+4*len(tokens))
	copy(head, klBaseMagic)
	for i, v := range []int{klBaseVersion, h.Vocab, h.Ctx, h.Chunks, h.Plan().First(), len(h.Source)} {
		binary.LittleEndian.PutUint32(head[8+4*i:], uint32(v))
	}
	head = append(head, h.Source...)
	for _, t := range tokens {
		head = binary.LittleEndian.AppendUint32(head, uint32(t))
	}
	if _, err := kw.w.Write(head); err != nil {
		kw.Abort()
		return nil, err
	}
	return kw, nil
}

// WriteRow appends the log-probabilities [vocab] of the next scored
// position.
func (kw *KLBaseWriter) WriteRow(logprobs []float32) error {
	switch {
	case kw.done:
		return errors.New("nn: KL-divergence base: write after Commit or Abort")
	case len(logprobs) != kw.h.Vocab:
		return fmt.Errorf("nn: KL-divergence base: row of %d, want the vocabulary's %d", len(logprobs), kw.h.Vocab)
	case kw.rows >= kw.want:
		return fmt.Errorf("nn: KL-divergence base: more than the %d rows of %d chunks", kw.want, kw.h.Chunks)
	}
	for i, v := range logprobs {
		binary.LittleEndian.PutUint32(kw.buf[4*i:], math.Float32bits(v))
	}
	kw.rows++
	_, err := kw.w.Write(kw.buf)
	return err
}

// Commit checks that every row was written, syncs the file and renames it
// into place.
func (kw *KLBaseWriter) Commit() error {
	if kw.done {
		return errors.New("nn: KL-divergence base: Commit after Commit or Abort")
	}
	if kw.rows != kw.want {
		kw.Abort()
		return fmt.Errorf("nn: KL-divergence base %s: %d of %d rows written; not saved", kw.path, kw.rows, kw.want)
	}
	kw.done = true
	name := kw.tmp.Name()
	// CreateTemp makes the file private; a base is shared like a model.
	err := errors.Join(kw.w.Flush(), kw.tmp.Chmod(0o644), kw.tmp.Sync(), kw.tmp.Close())
	if err == nil {
		err = os.Rename(name, kw.path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// Abort removes the temporary file; after Commit it does nothing.
func (kw *KLBaseWriter) Abort() {
	if kw.done {
		return
	}
	kw.done = true
	kw.tmp.Close()
	os.Remove(kw.tmp.Name())
}

// KLBaseReader reads a base file: the header and tokens at once, the
// log-probabilities row by row.
type KLBaseReader struct {
	Header KLBaseHeader
	Tokens []int32 // [Chunks][Ctx], as evaluated
	name   string
	r      *bufio.Reader
	rows   int
	buf    []byte
	closer io.Closer
}

// OpenKLBase opens and checks a base file.
func OpenKLBase(path string) (*KLBaseReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	kr, err := NewKLBaseReader(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	kr.closer = f
	return kr, nil
}

// NewKLBaseReader reads the header and tokens of a base file of size bytes
// from r; name is what errors call it. Everything the header claims is
// checked against size before anything is allocated, so a truncated or
// foreign file is refused here, not halfway through a run.
func NewKLBaseReader(r io.Reader, size int64, name string) (*KLBaseReader, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...))
	}
	br := bufio.NewReaderSize(r, 1<<20)
	var hdr [klHeaderSize]byte
	if n, err := io.ReadFull(br, hdr[:]); err != nil {
		if n >= len(klBaseMagic) && string(hdr[:len(klBaseMagic)]) == klBaseMagic {
			return nil, fail("truncated: %d bytes, shorter than the %d-byte header", size, klHeaderSize)
		}
		return nil, fail("not a bitvk KL-divergence base file (%d bytes; write one with bitvk perplexity --kl-divergence-base FILE)", size)
	}
	if string(hdr[:8]) != klBaseMagic {
		return nil, fail("not a bitvk KL-divergence base file (starts with %q, want %q; llama.cpp's base files are not read)", hdr[:8], klBaseMagic)
	}
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(hdr[8+4*i:]) }
	if v := u(0); v != klBaseVersion {
		return nil, fail("format version %d; this bitvk reads version %d (rewrite the base with this bitvk)", v, klBaseVersion)
	}
	for i, what := range []string{"vocabulary size", "n_ctx", "chunk count", "first scored position", "source length"} {
		if u(1+i) > klMaxDim {
			return nil, fail("%s %d at byte %d is beyond %d", what, u(1+i), 12+4*i, klMaxDim)
		}
	}
	h := KLBaseHeader{Vocab: int(u(1)), Ctx: int(u(2)), Chunks: int(u(3))}
	first, srcLen := int(u(4)), int(u(5))
	if srcLen > KLBaseMaxSource {
		return nil, fail("source description of %d bytes at byte 28, more than %d", srcLen, KLBaseMaxSource)
	}
	if err := h.check(); err != nil {
		return nil, fail("%v", err)
	}
	if first != h.Plan().First() {
		return nil, fail("first scored position %d at byte 24, want n_ctx/2 = %d", first, h.Plan().First())
	}
	want, ok := h.size(srcLen)
	switch {
	case !ok:
		return nil, fail("the header describes more data than a file can hold")
	case uint64(size) < want:
		return nil, fail("truncated: %d bytes, but %d chunks of %d positions × %d log-probabilities need %d (was the base run interrupted?)", size, h.Chunks, h.Plan().Scored(), h.Vocab, want)
	case uint64(size) > want:
		return nil, fail("%d bytes after the %d the header describes", uint64(size)-want, want)
	}
	src := make([]byte, srcLen)
	if _, err := io.ReadFull(br, src); err != nil {
		return nil, fail("reading the source description: %v", err)
	}
	h.Source = string(src)
	tb := make([]byte, 4*h.Chunks*h.Ctx)
	if _, err := io.ReadFull(br, tb); err != nil {
		return nil, fail("reading the tokens: %v", err)
	}
	tokens := make([]int32, h.Chunks*h.Ctx)
	for i := range tokens {
		t := int32(binary.LittleEndian.Uint32(tb[4*i:]))
		if t < 0 || int(t) >= h.Vocab {
			return nil, fail("token %d (chunk %d, position %d, byte %d) is outside the vocabulary of %d", t, i/h.Ctx, i%h.Ctx, klHeaderSize+srcLen+4*i, h.Vocab)
		}
		tokens[i] = t
	}
	return &KLBaseReader{Header: h, Tokens: tokens, name: name, r: br, buf: make([]byte, 4*h.Vocab)}, nil
}

// ReadRow reads the log-probabilities of the next scored position into
// dst [vocab].
func (kr *KLBaseReader) ReadRow(dst []float32) error {
	h := kr.Header
	if len(dst) != h.Vocab {
		return fmt.Errorf("nn: KL-divergence base: row of %d, want the vocabulary's %d", len(dst), h.Vocab)
	}
	if kr.rows >= h.Chunks*h.Plan().Scored() {
		return fmt.Errorf("%s: all %d rows already read", kr.name, kr.rows)
	}
	if _, err := io.ReadFull(kr.r, kr.buf); err != nil {
		return fmt.Errorf("%s: reading row %d (chunk %d): %v (did the file change during the run?)", kr.name, kr.rows, kr.rows/h.Plan().Scored(), err)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(kr.buf[4*i:]))
	}
	kr.rows++
	return nil
}

// Close closes the file OpenKLBase opened.
func (kr *KLBaseReader) Close() error {
	if kr.closer == nil {
		return nil
	}
	return kr.closer.Close()
}
