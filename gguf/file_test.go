package gguf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testdataDir = "../../shared/testdata"

// allValues is one metadata entry of every value type, arrays of every
// element type, an empty array and arrays of arrays.
func allValues(t testing.TB) []KV {
	nested, err := ArrayOfArrays([]Value{Array([]uint32{1, 2}), Array([]string{"a", "bc"}), Array([]float64{})})
	if err != nil {
		t.Fatal(err)
	}
	deeper, err := ArrayOfArrays([]Value{nested, nested})
	if err != nil {
		t.Fatal(err)
	}
	return []KV{
		{"general.architecture", Str("bitnet-b1.58")},
		{"t.u8", U8(200)}, {"t.i8", I8(-100)}, {"t.u16", U16(60000)}, {"t.i16", I16(-30000)},
		{"t.u32", U32(4000000000)}, {"t.i32", I32(-2000000000)}, {"t.f32", F32(1e-5)},
		{"t.bool", Bool(true)}, {"t.false", Bool(false)}, {"t.string", Str("héllo\x00world")},
		{"t.u64", U64(math.MaxUint64)}, {"t.i64", I64(math.MinInt64)}, {"t.f64", F64(math.Pi)},
		{"a.u8", Array([]uint8{1, 2, 3})}, {"a.i8", Array([]int8{-1, 0, 1})},
		{"a.u16", Array([]uint16{1, 65535})}, {"a.i16", Array([]int16{-32768, 7})},
		{"a.u32", Array([]uint32{7})}, {"a.i32", Array([]int32{-7, 8})},
		{"a.f32", Array([]float32{1.5, float32(math.Inf(-1))})}, {"a.bool", Array([]bool{true, false})},
		{"a.string", Array([]string{"", "x", "Ġthe"})}, {"a.u64", Array([]uint64{1 << 63})},
		{"a.i64", Array([]int64{-1})}, {"a.f64", Array([]float64{2.5})},
		{"a.empty", Array([]int32{})}, {"a.nested", nested}, {"a.deeper", deeper},
	}
}

// smallFile returns a valid file with every value type and three tensors,
// the last of which ends on an alignment boundary, so that every strict
// prefix of the file is missing something.
func smallFile(t testing.TB) []byte {
	i2s := make([]byte, 2*128/4+32)
	for i := range 2 * 128 / 4 {
		i2s[i] = 0x55 // every code 1: all zeros
	}
	binary.LittleEndian.PutUint32(i2s[64:], math.Float32bits(0.5))
	b := &Builder{
		Meta: allValues(t),
		Tensors: []TensorSpec{
			{Name: "token_embd.weight", Type: TypeF16, Dims: []uint64{4, 3}, Data: make([]byte, 24)},
			{Name: "blk.0.attn_q.weight", Type: TypeI2_S, Dims: []uint64{128, 2}, Data: i2s},
			{Name: "output_norm.weight", Type: TypeF32, Dims: []uint64{8}, Data: bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 8)},
		},
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustParse(t testing.TB, data []byte) *File {
	t.Helper()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func writeBytes(t testing.TB, b *Builder) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripAllValueTypes(t *testing.T) {
	data := smallFile(t)
	f := mustParse(t, data)
	want := allValues(t)
	if len(f.Meta) != len(want) {
		t.Fatalf("read %d keys, wrote %d", len(f.Meta), len(want))
	}
	for i, kv := range want {
		got := f.Meta[i]
		if got.Key != kv.Key || !reflect.DeepEqual(got.Value, kv.Value) {
			t.Errorf("key %d: read %q = %#v, wrote %q = %#v", i, got.Key, got.Value, kv.Key, kv.Value)
		}
	}
	if len(f.Tensors) != 3 {
		t.Fatalf("read %d tensors, want 3", len(f.Tensors))
	}
	q, ok := f.Tensor("blk.0.attn_q.weight")
	if !ok || q.Type != TypeI2_S || !reflect.DeepEqual(q.Dims, []uint64{128, 2}) || q.Size != 96 || q.Offset%32 != 0 {
		t.Errorf("attn_q read as %+v", q)
	}
	if got := f.TensorData(q)[64:68]; !bytes.Equal(got, []byte{0, 0, 0, 0x3f}) {
		t.Errorf("attn_q scale bytes %x", got)
	}
	if again := writeBytes(t, FromFile(f)); !bytes.Equal(again, data) {
		t.Errorf("rewriting the file changed it: %d bytes → %d", len(data), len(again))
	}
}

func TestRoundTripTestdata(t *testing.T) {
	for _, name := range []string{"vocab-llama3-bpe.gguf", "ggml-vocab-llama-spm.gguf"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(testdataDir, name)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("shared test data absent (%v): this test needs ../shared/testdata beside the repository", err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tokens, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(tokens) < 32000 {
				t.Fatalf("tokens: %d, %v", len(tokens), err)
			}
			if got := writeBytes(t, FromFile(f)); !bytes.Equal(got, raw) {
				t.Errorf("read-write round trip is not byte-identical: %d bytes → %d", len(raw), len(got))
			}
		})
	}
}

func TestOpenAndReadFallback(t *testing.T) {
	data := smallFile(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Bytes(), data) {
		t.Error("mapped bytes differ from the file")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got, _, err := readFile(fh, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("readFile fallback: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("opening a missing file succeeded")
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("opening a directory succeeded")
	}
}

// asFormatError checks err is a *FormatError and returns it.
func asFormatError(t *testing.T, err error, what string) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: got %v, want a *FormatError", what, err)
	}
	return fe
}

func TestEveryPrefixIsRejected(t *testing.T) {
	data := smallFile(t)
	for n := 0; n < len(data); n++ {
		_, err := Parse(data[:n:n])
		if err == nil {
			t.Fatalf("prefix of %d of %d bytes parsed without error", n, len(data))
		}
		asFormatError(t, err, "prefix")
	}
}

func TestTruncatedTensorNamesTheTensor(t *testing.T) {
	data := smallFile(t)
	_, err := Parse(data[:len(data)-8])
	fe := asFormatError(t, err, "truncated")
	if !strings.Contains(fe.Field, `"output_norm.weight"`) || !strings.Contains(fe.Msg, "beyond the file size") {
		t.Errorf("error %q does not name the tensor running past the end", err)
	}
}

// fieldAt finds the byte offset of a field that follows a length-prefixed
// name in the file: the offset just past the name.
func afterName(t *testing.T, data []byte, name string) int {
	t.Helper()
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(name)))
	i := bytes.Index(data, append(prefix[:], name...))
	if i < 0 {
		t.Fatalf("%q not found", name)
	}
	return i + 8 + len(name)
}

func TestCorruptFieldsAreRejected(t *testing.T) {
	base := smallFile(t)
	q := afterName(t, base, "blk.0.attn_q.weight") // n_dims u32, dims 2×u64, type u32, offset u64
	str := afterName(t, base, "t.string") + 4      // string length u64
	arr := afterName(t, base, "a.string") + 8      // array count u64
	nest := afterName(t, base, "a.nested") + 4     // element type u32
	put32 := func(off int, v uint32) func([]byte) {
		return func(d []byte) { binary.LittleEndian.PutUint32(d[off:], v) }
	}
	put64 := func(off int, v uint64) func([]byte) {
		return func(d []byte) { binary.LittleEndian.PutUint64(d[off:], v) }
	}
	cases := []struct {
		name  string
		patch func([]byte)
		want  string // in the error
	}{
		{"magic", func(d []byte) { copy(d, "GGML") }, "not a GGUF file"},
		{"version 1", put32(4, 1), "version 1 is unsupported"},
		{"big-endian", put32(4, 3<<24), "big-endian"},
		{"version 99", put32(4, 99), "unsupported GGUF version"},
		{"tensor count huge", put64(8, 1<<40), "cannot fit"},
		{"tensor count max", put64(8, math.MaxUint64), "cannot fit"},
		{"tensor count +1", put64(8, 4), "tensor"},
		{"kv count huge", put64(16, 1<<50), "cannot fit"},
		{"kv count +1", put64(16, uint64(len(allValues(t))+1)), ""},
		{"key length huge", put64(24, 1<<62), "past the end"},
		{"string length huge", put64(str, math.MaxUint64), "past the end"},
		{"array count huge", put64(arr, 1<<60), "cannot fit"},
		{"array elem type", put32(nest, 77), "unknown metadata value type"},
		{"value type", put32(afterName(t, base, "t.u8"), 13), "unknown metadata value type"},
		{"n_dims 0", put32(q, 0), "dimensions"},
		{"n_dims 5", put32(q, 5), "dimensions"},
		{"dim overflow", put64(q+12, 1<<62), "overflows"},
		{"dim huge", put64(q+12, 1<<40), "beyond the file size"},
		{"dim not a block", put64(q+4, 100), "multiple of 128"},
		{"type unknown", put32(q+20, 99), "unknown ggml tensor type 99"},
		{"type removed id", put32(q+20, 4), "unknown ggml tensor type 4"},
		{"offset unaligned", func(d []byte) { binary.LittleEndian.PutUint64(d[q+24:], binary.LittleEndian.Uint64(d[q+24:])+1) }, "not a multiple of the alignment"},
		{"offset huge", put64(q+24, 1<<63), "beyond the file size"},
		{"offset overlaps", put64(q+24, 0), "overlaps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := append([]byte(nil), base...)
			c.patch(d)
			_, err := Parse(d)
			fe := asFormatError(t, err, c.name)
			if !strings.Contains(fe.Error(), c.want) {
				t.Errorf("error %q does not say %q", fe, c.want)
			}
		})
	}
}

func TestAlignment(t *testing.T) {
	b := &Builder{
		Meta:    []KV{{KeyAlignment, U32(64)}},
		Tensors: []TensorSpec{{Name: "a", Type: TypeF32, Dims: []uint64{3}, Data: make([]byte, 12)}, {Name: "b", Type: TypeF32, Dims: []uint64{1}, Data: make([]byte, 4)}},
	}
	f := mustParse(t, writeBytes(t, b))
	if f.Alignment != 64 || f.DataStart%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("alignment %d, data start %d, second offset %d", f.Alignment, f.DataStart, f.Tensors[1].Offset)
	}
	for _, bad := range []Value{U32(0), U32(48), U64(64), Str("32")} {
		b.Meta[0].Value = bad
		if _, err := b.WriteTo(&bytes.Buffer{}); err == nil {
			t.Errorf("writer accepted alignment %v", bad.Any())
		}
		b2 := &Builder{Meta: []KV{{KeyAlignment, bad}}}
		raw := writeBytesUnchecked(b2)
		if _, err := Parse(raw); err == nil {
			t.Errorf("reader accepted alignment %v", bad.Any())
		}
	}
}

// writeBytesUnchecked writes the header and metadata of b without the
// writer's own checks, to make files the writer refuses to make.
func writeBytesUnchecked(b *Builder) []byte {
	var buf bytes.Buffer
	e := encoder{w: &countWriter{w: &buf}}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(0)
	e.u64(uint64(len(b.Meta)))
	for _, kv := range b.Meta {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type()))
		e.value(kv.Value)
	}
	return buf.Bytes()
}

func TestDuplicatesAreRejected(t *testing.T) {
	dupKey := writeBytesUnchecked(&Builder{Meta: []KV{{"k", U8(1)}, {"k", U8(2)}}})
	if _, err := Parse(dupKey); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("duplicate key: %v", err)
	}
	if _, err := (&Builder{Meta: []KV{{"k", U8(1)}, {"k", U8(2)}}}).WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("writer accepted a duplicate key")
	}
	two := &Builder{Tensors: []TensorSpec{{Name: "a", Type: TypeF32, Dims: []uint64{1}, Data: make([]byte, 4)}, {Name: "b", Type: TypeF32, Dims: []uint64{1}, Data: make([]byte, 4)}}}
	data := writeBytes(t, two)
	i := afterName(t, data, "b")
	copy(data[i-1:], "a")
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "name appears twice") {
		t.Errorf("duplicate tensor: %v", err)
	}
}

func TestBadBoolByte(t *testing.T) {
	data := writeBytesUnchecked(&Builder{Meta: []KV{{"b", Bool(true)}}})
	data[len(data)-1] = 2
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "bool") {
		t.Errorf("bool byte 2: %v", err)
	}
}

func TestDeepNestingIsRejected(t *testing.T) {
	v := Array([]uint8{1})
	for i := 0; i < maxArrayDepth+1; i++ {
		var err error
		if v, err = ArrayOfArrays([]Value{v}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Parse(writeBytesUnchecked(&Builder{Meta: []KV{{"deep", v}}})); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestTypedAccessors(t *testing.T) {
	f := mustParse(t, smallFile(t))
	if v, err := f.Uint("t.u32"); err != nil || v != 4000000000 {
		t.Errorf("Uint: %d, %v", v, err)
	}
	if v, err := f.Int("t.i16"); err != nil || v != -30000 {
		t.Errorf("Int: %d, %v", v, err)
	}
	if v, err := f.Float("t.f32"); err != nil || float32(v) != 1e-5 {
		t.Errorf("Float: %g, %v", v, err)
	}
	if v, err := f.Bool("t.bool"); err != nil || !v {
		t.Errorf("Bool: %v, %v", v, err)
	}
	if v, err := f.String("general.architecture"); err != nil || v != "bitnet-b1.58" {
		t.Errorf("String: %q, %v", v, err)
	}
	if v, err := f.Strings("a.string"); err != nil || len(v) != 3 || v[2] != "Ġthe" {
		t.Errorf("Strings: %q, %v", v, err)
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"missing", func() error { _, err := f.Uint("nope"); return err }, `"nope": missing`},
		{"string as uint", func() error { _, err := f.Uint("t.string"); return err }, "not an integer"},
		{"negative as uint", func() error { _, err := f.Uint("t.i8"); return err }, "negative"},
		{"u64 max as int", func() error { _, err := f.Int("t.u64"); return err }, "does not fit"},
		{"int as float", func() error { _, err := f.Float("t.u8"); return err }, "not a float"},
		{"int as bool", func() error { _, err := f.Bool("t.u8"); return err }, "not a bool"},
		{"array as string", func() error { _, err := f.String("a.string"); return err }, "not a string"},
		{"ints as strings", func() error { _, err := f.Strings("a.i32"); return err }, "not an array of strings"},
	} {
		err := c.call()
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a KeyError saying %q", c.name, err, c.want)
		}
	}
	v, _ := f.Get("a.i8")
	if ints, err := v.Ints(); err != nil || !reflect.DeepEqual(ints, []int64{-1, 0, 1}) {
		t.Errorf("Ints: %v, %v", ints, err)
	}
	v, _ = f.Get("a.f32")
	if fl, err := v.Floats(); err != nil || fl[0] != 1.5 || !math.IsInf(fl[1], -1) {
		t.Errorf("Floats: %v, %v", fl, err)
	}
	v, _ = f.Get("a.deeper")
	if arr, err := v.Arrays(); err != nil || len(arr) != 2 || arr[0].Len() != 3 {
		t.Errorf("Arrays: %v, %v", arr, err)
	}
	if (Value{}).Index(0).Any() != nil {
		t.Error("Index of a zero Value is not the zero Value")
	}
}

func TestWriterRejectsBadTensors(t *testing.T) {
	for _, c := range []struct {
		name string
		spec TensorSpec
	}{
		{"no dims", TensorSpec{Name: "x", Type: TypeF32, Data: nil}},
		{"5 dims", TensorSpec{Name: "x", Type: TypeF32, Dims: []uint64{1, 1, 1, 1, 1}, Data: make([]byte, 4)}},
		{"short data", TensorSpec{Name: "x", Type: TypeF32, Dims: []uint64{2}, Data: make([]byte, 4)}},
		{"I2_S row of 100", TensorSpec{Name: "x", Type: TypeI2_S, Dims: []uint64{100, 1}, Data: make([]byte, 57)}},
		{"unknown type", TensorSpec{Name: "x", Type: Type(99), Dims: []uint64{1}, Data: make([]byte, 4)}},
		{"fill writes too little", TensorSpec{Name: "x", Type: TypeF32, Dims: []uint64{2}, Fill: func(w io.Writer) error { _, err := w.Write(make([]byte, 4)); return err }}},
	} {
		if _, err := (&Builder{Tensors: []TensorSpec{c.spec}}).WriteTo(&bytes.Buffer{}); err == nil {
			t.Errorf("%s: writer accepted it", c.name)
		}
	}
}

func TestWriteFileKeepsOldFileOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := &Builder{Tensors: []TensorSpec{{Name: "x", Type: TypeF32, Dims: []uint64{2}, Fill: func(w io.Writer) error { return errors.New("disk on fire") }}}}
	if err := bad.WriteFile(path); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("WriteFile: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "precious" {
		t.Errorf("failed write changed the existing file to %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("failed write left %d files behind", len(entries))
	}
	good := &Builder{Meta: []KV{{"k", Str("v")}}}
	if err := good.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s, _ := f.String("k"); s != "v" {
		t.Errorf("rewritten file holds %q", s)
	}
}

// A write cancelled midway (Ctrl-C) removes its temporary file and keeps
// the file it would have replaced.
func TestWriteFileContextCancelled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	big := make([]byte, 4<<20) // several flushes of the 1 MiB buffer
	tensor := func(name string, fill func(w io.Writer) error) TensorSpec {
		return TensorSpec{Name: name, Type: TypeF32, Dims: []uint64{uint64(len(big) / 4)}, Fill: fill}
	}
	b := &Builder{Tensors: []TensorSpec{
		tensor("a", func(w io.Writer) error { _, err := w.Write(big); return err }),
		tensor("b", func(w io.Writer) error {
			cancel() // the user interrupts while the second tensor is written
			_, err := w.Write(big)
			return err
		}),
	}}
	if err := b.WriteFileContext(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteFileContext after cancel: %v; want context.Canceled", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "precious" {
		t.Errorf("a cancelled write changed the existing file to %d bytes", len(got))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a cancelled write left %d files behind", len(entries))
	}
	if err := b.WriteFileContext(ctx, filepath.Join(dir, "new.gguf")); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFileContext with an ended context: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a write with an ended context left %d files", len(entries))
	}
}

func TestRelease(t *testing.T) {
	data := make([]byte, 3<<16)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b := &Builder{Tensors: []TensorSpec{{Name: "w", Type: TypeF32, Dims: []uint64{uint64(len(data) / 4)}, Data: data}}}
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("w")
	td := f.TensorData(ti)
	f.Release(td)
	f.Release(data) // not a view into the file: ignored
	f.Release(nil)
	if !bytes.Equal(td, data) {
		t.Error("tensor data changed after Release: released pages must read back from the file")
	}
}
