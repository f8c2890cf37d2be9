package gguf

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// TensorSpec is one tensor to write: its data either in Data or produced by
// Fill, which must write exactly the tensor's size in bytes.
type TensorSpec struct {
	Name string
	Type Type
	Dims []uint64 // ggml order: Dims[0] is the contiguous (input) dimension
	Data []byte
	Fill func(w io.Writer) error
}

// Builder describes a GGUF file to write. Tensors are laid out in order, each
// at the next multiple of the alignment, as ggml and gguf-py do, so a file
// written by them reads back and writes out byte-identical.
type Builder struct {
	Version uint32 // 0 means 3
	Meta    []KV
	Tensors []TensorSpec

	// NoTrailingPad leaves out the padding after the last tensor's data (or,
	// with no tensors, after the tensor infos). gguf-py and ggml write it;
	// some llama.cpp vocabulary files lack it, so FromFile keeps what it finds.
	NoTrailingPad bool
}

// FromFile returns a Builder that writes f back out, its tensor data read
// from f (so f must stay open until the write is done).
func FromFile(f *File) *Builder {
	b := &Builder{Version: f.Version, Meta: append([]KV(nil), f.Meta...), NoTrailingPad: f.Size == f.dataEnd}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		b.Tensors = append(b.Tensors, TensorSpec{Name: t.Name, Type: t.Type, Dims: t.Dims, Data: f.TensorData(t)})
	}
	return b
}

// alignment returns the data alignment the metadata asks for.
func (b *Builder) alignment() (uint64, error) {
	for _, kv := range b.Meta {
		if kv.Key == KeyAlignment {
			a, ok := kv.Value.Any().(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return 0, fmt.Errorf("gguf: %s must be a u32 power of two", KeyAlignment)
			}
			return uint64(a), nil
		}
	}
	return DefaultAlignment, nil
}

// WriteFile writes the file to a temporary name beside path and renames it
// into place only once it is complete, so a failed write never destroys an
// existing file.
func (b *Builder) WriteFile(path string) error {
	return b.WriteFileContext(context.Background(), path)
}

// WriteFileContext is WriteFile that stops when ctx ends (a user's Ctrl-C
// during a write of gigabytes), removing the temporary file: nothing is
// left behind and an existing file at path is kept.
func (b *Builder) WriteFileContext(ctx context.Context, path string) (err error) {
	if err := ctx.Err(); err != nil {
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
	w := bufio.NewWriterSize(ctxWriter{ctx, tmp}, 1<<20)
	if _, err = b.WriteTo(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
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

// ctxWriter is w until ctx ends, then fails every write with ctx's error.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// WriteTo writes the file to out.
func (b *Builder) WriteTo(out io.Writer) (int64, error) {
	align, err := b.alignment()
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: out}
	e := encoder{w: cw}
	version := b.Version
	if version == 0 {
		version = 3
	}
	e.raw([]byte(Magic))
	e.u32(version)
	e.u64(uint64(len(b.Tensors)))
	e.u64(uint64(len(b.Meta)))
	seen := make(map[string]bool, len(b.Meta))
	for _, kv := range b.Meta {
		if seen[kv.Key] {
			return cw.n, fmt.Errorf("gguf: metadata key %q given twice", kv.Key)
		}
		seen[kv.Key] = true
		if !kv.Value.valid() {
			return cw.n, fmt.Errorf("gguf: metadata key %q has no value", kv.Key)
		}
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	sizes := make([]uint64, len(b.Tensors))
	offset := uint64(0)
	names := make(map[string]bool, len(b.Tensors))
	for i, t := range b.Tensors {
		if names[t.Name] {
			return cw.n, fmt.Errorf("gguf: tensor %q given twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Dims) == 0 || len(t.Dims) > maxDims {
			return cw.n, fmt.Errorf("gguf: tensor %q has %d dimensions (1 to %d allowed)", t.Name, len(t.Dims), maxDims)
		}
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if bs := uint64(t.Type.BlockSize()); bs == 0 || t.Dims[0]%bs != 0 {
			return cw.n, fmt.Errorf("gguf: tensor %q: %s needs dim 0 to be a multiple of %d, got %d", t.Name, t.Type, bs, t.Dims[0])
		}
		if sizes[i], err = DataSize(t.Type, n); err != nil {
			return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if t.Fill == nil && uint64(len(t.Data)) != sizes[i] {
			return cw.n, fmt.Errorf("gguf: tensor %q: %s %v takes %d bytes, got %d", t.Name, t.Type, t.Dims, sizes[i], len(t.Data))
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(offset)
		offset = alignUp(offset+sizes[i], align)
	}
	if e.err != nil {
		return cw.n, e.err
	}
	if len(b.Tensors) > 0 || !b.NoTrailingPad {
		e.pad(align)
	}
	for i, t := range b.Tensors {
		if e.err != nil {
			return cw.n, e.err
		}
		start := cw.n
		if t.Fill != nil {
			if err := t.Fill(cw); err != nil {
				return cw.n, fmt.Errorf("gguf: writing tensor %q: %w", t.Name, err)
			}
		} else {
			e.raw(t.Data)
		}
		if e.err == nil && uint64(cw.n-start) != sizes[i] {
			return cw.n, fmt.Errorf("gguf: tensor %q: wrote %d bytes, want %d", t.Name, cw.n-start, sizes[i])
		}
		if i < len(b.Tensors)-1 || !b.NoTrailingPad {
			e.pad(align)
		}
	}
	return cw.n, e.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes little-endian fields and keeps the first error.
type encoder struct {
	w   *countWriter
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
	}
}

func (e *encoder) u8(v uint8)   { e.buf[0] = v; e.raw(e.buf[:1]) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.raw(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.raw(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.raw(e.buf[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) pad(align uint64) {
	if n := alignUp(uint64(e.w.n), align) - uint64(e.w.n); n > 0 {
		e.raw(make([]byte, n))
	}
}

func (e *encoder) bool(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value writes v's payload (its type tag is written by the caller).
func (e *encoder) value(v Value) {
	switch x := v.v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		e.bool(x)
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	default:
		e.array(v)
	}
}

func (e *encoder) array(v Value) {
	e.u32(uint32(v.elem))
	e.u64(uint64(v.Len()))
	switch a := v.v.(type) {
	case []uint8:
		e.raw(a)
	case []Value:
		for _, x := range a {
			e.array(x)
		}
	default:
		for i := 0; i < v.Len(); i++ {
			e.value(v.Index(i))
		}
	}
}
