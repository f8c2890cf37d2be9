package convert

// A strict reader of Hugging Face's safetensors format:
//
//	u64 N (little-endian) | N bytes of UTF-8 JSON header | data
//
// The header is one JSON object. "__metadata__" (optional) maps strings to
// strings; every other key names a tensor:
//
//	{"dtype": "BF16", "shape": [2560, 6912], "data_offsets": [BEGIN, END]}
//
// with the offsets relative to the start of the data. As the format's
// reference implementation requires, the tensors tile the data exactly:
// sorted by offset, the first begins at 0, each begins where the one
// before ends (no gap, no overlap), the last ends at the end of the file,
// and each spans product(shape)·size(dtype) bytes. The header may be
// padded with trailing spaces to align the data. Every rule broken is an
// error naming the file and the tensor.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/bitvk/bitvk/gguf"
)

// MaxHeader is the largest header accepted, the reference implementation's
// limit; real headers are at most a few megabytes.
const MaxHeader = 100_000_000

// DType is a safetensors element type, as the header spells it.
type DType string

// The element types of the format and their sizes in bytes. bitvk converts
// BF16, F16, F32 (floats), U8 (packed ternary weights), I8 and I32; the
// others are known so that a file holding them still validates.
var dtypeSizes = map[DType]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Size returns the bytes per element, 0 for an unknown type.
func (d DType) Size() int { return dtypeSizes[d] }

// TensorInfo is one tensor of a safetensors file.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []uint64 // outermost first (PyTorch order)
	Begin uint64   // data offsets, relative to the start of the data
	End   uint64
}

// Elements is the product of the shape (1 for a scalar).
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Safetensors is an open safetensors file.
type Safetensors struct {
	Path     string
	Metadata map[string]string
	Tensors  []TensorInfo // in data order

	index     map[string]int
	r         io.ReaderAt // where data is read when not mapped
	mapped    []byte      // the whole file, when mapped
	dataStart uint64
	closer    func() error
}

// OpenSafetensors opens and validates a safetensors file. The file is
// mapped into memory where the system allows (tensors are then views into
// it) and read tensor by tensor otherwise.
func OpenSafetensors(path string) (*Safetensors, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("safetensors: %s: not a regular file", path)
	}
	s, err := ParseSafetensors(path, fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, err
	}
	s.closer = fh.Close
	if data, unmap, ok := mapFile(fh, st.Size()); ok {
		s.mapped = data
		s.closer = func() error {
			err := unmap()
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			return err
		}
	}
	return s, nil
}

// Close releases the file.
func (s *Safetensors) Close() error {
	s.mapped = nil
	if s.closer != nil {
		c := s.closer
		s.closer = nil
		return c()
	}
	return nil
}

// Tensor returns the tensor called name.
func (s *Safetensors) Tensor(name string) (TensorInfo, bool) {
	i, ok := s.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return s.Tensors[i], true
}

// Data returns the bytes of tensor t: a view into the mapped file (do not
// modify it, nor use it after Close), or a fresh copy read from the file.
func (s *Safetensors) Data(t TensorInfo) ([]byte, error) {
	lo, hi := s.dataStart+t.Begin, s.dataStart+t.End
	if s.mapped != nil {
		return s.mapped[lo:hi:hi], nil
	}
	if hi-lo > math.MaxInt {
		return nil, fmt.Errorf("safetensors: %s: tensor %q of %d bytes is too large for this system", s.Path, t.Name, hi-lo)
	}
	buf := make([]byte, hi-lo)
	if n, err := s.r.ReadAt(buf, int64(lo)); n < len(buf) {
		return nil, fmt.Errorf("safetensors: %s: reading tensor %q: %w", s.Path, t.Name, err)
	}
	return buf, nil
}

// formatError is a problem with the file's structure.
func formatError(path, format string, a ...any) error {
	return fmt.Errorf("safetensors: %s: %s", path, fmt.Sprintf(format, a...))
}

// ParseSafetensors reads and validates the header of a safetensors file of
// size bytes read through r; name is used in errors. Tensor data is read
// through r later, on demand.
func ParseSafetensors(name string, r io.ReaderAt, size int64) (*Safetensors, error) {
	if size < 8 {
		return nil, formatError(name, "the file is %d bytes, too short for the 8-byte header length (truncated, or not a safetensors file)", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, formatError(name, "reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case n > MaxHeader:
		return nil, formatError(name, "header length %d is over the %d-byte limit (not a safetensors file?)", n, MaxHeader)
	case n > uint64(size)-8:
		return nil, formatError(name, "header length %d runs past the end of the %d-byte file (truncated download?)", n, size)
	case n < 2:
		return nil, formatError(name, "header length %d is too short for a JSON object", n)
	}
	header := make([]byte, n)
	if _, err := r.ReadAt(header, 8); err != nil {
		return nil, formatError(name, "reading the %d-byte header: %v", n, err)
	}
	s := &Safetensors{Path: name, r: r, dataStart: 8 + n, index: map[string]int{}}
	if err := s.parseHeader(header); err != nil {
		return nil, err
	}
	if err := s.checkLayout(uint64(size) - 8 - n); err != nil {
		return nil, err
	}
	return s, nil
}

// parseHeader decodes the JSON header token by token, so that duplicate
// keys, unknown fields and non-integer numbers are errors rather than
// silently taken.
func (s *Safetensors) parseHeader(header []byte) error {
	if header[0] != '{' {
		return formatError(s.Path, "the header does not start with '{' (not a safetensors file?)")
	}
	if !utf8.Valid(header) {
		return formatError(s.Path, "the header is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	bad := func(format string, a ...any) error {
		return formatError(s.Path, "header byte %d: %s", dec.InputOffset(), fmt.Sprintf(format, a...))
	}
	if _, err := dec.Token(); err != nil {
		return bad("%v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("%v", err)
		}
		key := tok.(string) // object keys are always strings
		if key == "__metadata__" {
			if s.Metadata != nil {
				return bad("__metadata__ appears twice")
			}
			if s.Metadata, err = readStringMap(dec); err != nil {
				return bad("__metadata__: %v", err)
			}
			continue
		}
		if _, dup := s.index[key]; dup {
			return bad("tensor %q appears twice", key)
		}
		t, err := readTensorInfo(dec)
		if err != nil {
			return bad("tensor %q: %v", key, err)
		}
		t.Name = key
		s.index[key] = len(s.Tensors)
		s.Tensors = append(s.Tensors, t)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return bad("%v", err)
	}
	rest := header[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return bad("data after the header's JSON object (only space padding may follow it)")
	}
	return nil
}

// readStringMap reads a JSON object whose values are all strings.
func readStringMap(dec *json.Decoder) (map[string]string, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := dec.Token()
		if err != nil {
			return nil, err
		}
		vs, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("value of %q is %s, not a string", k, describeToken(v))
		}
		if _, dup := m[k.(string)]; dup {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		m[k.(string)] = vs
	}
	_, err := dec.Token()
	return m, err
}

// readTensorInfo reads {"dtype": …, "shape": […], "data_offsets": [b, e]}:
// exactly these three fields.
func readTensorInfo(dec *json.Decoder) (TensorInfo, error) {
	var t TensorInfo
	if err := expectDelim(dec, '{'); err != nil {
		return t, err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return t, err
		}
		field := tok.(string)
		if seen[field] {
			return t, fmt.Errorf("field %q appears twice", field)
		}
		seen[field] = true
		switch field {
		case "dtype":
			v, err := dec.Token()
			if err != nil {
				return t, err
			}
			d, ok := v.(string)
			if !ok {
				return t, fmt.Errorf("dtype is %s, not a string", describeToken(v))
			}
			t.DType = DType(d)
		case "shape":
			if t.Shape, err = readUints(dec, "shape"); err != nil {
				return t, err
			}
			if t.Shape == nil {
				t.Shape = []uint64{} // a scalar
			}
		case "data_offsets":
			offs, err := readUints(dec, "data_offsets")
			if err != nil {
				return t, err
			}
			if len(offs) != 2 {
				return t, fmt.Errorf("data_offsets has %d numbers, want 2 (begin, end)", len(offs))
			}
			t.Begin, t.End = offs[0], offs[1]
		default:
			return t, fmt.Errorf("unknown field %q (a tensor has dtype, shape and data_offsets)", field)
		}
	}
	if _, err := dec.Token(); err != nil {
		return t, err
	}
	for _, f := range []string{"dtype", "shape", "data_offsets"} {
		if !seen[f] {
			return t, fmt.Errorf("field %q is missing", f)
		}
	}
	if t.DType.Size() == 0 {
		return t, fmt.Errorf("unknown dtype %q (safetensors defines %s)", t.DType, knownDTypes())
	}
	return t, nil
}

// readUints reads a JSON array of non-negative integers.
func readUints(dec *json.Decoder, what string) ([]uint64, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	var out []uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s holds %s, not a number", what, describeToken(tok))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s holds %s, not a non-negative integer below 2^64", what, num)
		}
		if len(out) == 64 {
			return nil, fmt.Errorf("%s has more than 64 numbers", what)
		}
		out = append(out, v)
	}
	_, err := dec.Token()
	return out, err
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		kind := "an object"
		if want == '[' {
			kind = "an array"
		}
		return fmt.Errorf("found %s where %s should be", describeToken(tok), kind)
	}
	return nil
}

func describeToken(tok any) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + string(v)
	case bool:
		return fmt.Sprintf("%v", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

func knownDTypes() string {
	var names []string
	for d := range dtypeSizes {
		names = append(names, string(d))
	}
	slices.Sort(names)
	return fmt.Sprint(names)
}

// checkLayout checks every tensor's size against its shape and that the
// tensors tile the data of dataLen bytes, and sorts them by offset.
func (s *Safetensors) checkLayout(dataLen uint64) error {
	for i := range s.Tensors {
		t := &s.Tensors[i]
		if t.End < t.Begin {
			return formatError(s.Path, "tensor %q: data_offsets [%d, %d] end before they begin", t.Name, t.Begin, t.End)
		}
		if t.End > dataLen {
			return formatError(s.Path, "tensor %q: data ends at byte %d of the data, beyond its %d bytes (truncated download?)", t.Name, t.End, dataLen)
		}
		want, ok := byteSize(t.Shape, t.DType.Size())
		if !ok || want != t.End-t.Begin {
			return formatError(s.Path, "tensor %q: shape %v of %s takes %s bytes, but data_offsets [%d, %d] hold %d", t.Name, t.Shape, t.DType, sizeText(want, ok), t.Begin, t.End, t.End-t.Begin)
		}
	}
	slices.SortStableFunc(s.Tensors, func(a, b TensorInfo) int {
		if a.Begin != b.Begin {
			return cmpUint(a.Begin, b.Begin)
		}
		return cmpUint(a.End, b.End)
	})
	var end uint64
	prev := "the start of the data"
	for i, t := range s.Tensors {
		switch {
		case t.Begin > end:
			return formatError(s.Path, "a gap of %d bytes between %s (byte %d) and tensor %q: the tensors must tile the data", t.Begin-end, prev, end, t.Name)
		case t.Begin < end:
			return formatError(s.Path, "tensor %q (bytes %d to %d) overlaps %s, which ends at byte %d", t.Name, t.Begin, t.End, prev, end)
		}
		end = t.End
		prev = fmt.Sprintf("tensor %q", t.Name)
		s.index[t.Name] = i
	}
	if end != dataLen {
		return formatError(s.Path, "the tensors' data ends at byte %d but the file holds %d bytes of data (%d bytes unaccounted for)", end, dataLen, dataLen-end)
	}
	return nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// byteSize is product(shape)·elemSize, false on overflow.
func byteSize(shape []uint64, elemSize int) (uint64, bool) {
	n := uint64(elemSize)
	for _, d := range shape {
		if d != 0 && n > math.MaxUint64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func sizeText(n uint64, ok bool) string {
	if !ok {
		return "more than 2^64"
	}
	return strconv.FormatUint(n, 10)
}

// Floats returns tensor t's values as float32: BF16, F16 and F32 exactly,
// the small integer types as their values.
func (s *Safetensors) Floats(t TensorInfo) ([]float32, error) {
	data, err := s.Data(t)
	if err != nil {
		return nil, err
	}
	return decodeFloats(s.Path, t, data)
}

// errNotFloat says a tensor's type has no float reading.
var errNotFloat = errors.New("not a float type")

func decodeFloats(path string, t TensorInfo, data []byte) ([]float32, error) {
	n := t.Elements()
	if n > math.MaxInt {
		return nil, formatError(path, "tensor %q has %d values, too many for this system", t.Name, n)
	}
	out := make([]float32, n)
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = gguf.F16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = gguf.BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case "I8":
		for i := range out {
			out[i] = float32(int8(data[i]))
		}
	case "U8":
		for i := range out {
			out[i] = float32(data[i])
		}
	case "I32":
		for i := range out {
			out[i] = float32(int32(binary.LittleEndian.Uint32(data[4*i:])))
		}
	default:
		return nil, fmt.Errorf("safetensors: %s: tensor %q is %s: %w (bitvk reads BF16, F16, F32, U8, I8 and I32)", path, t.Name, t.DType, errNotFloat)
	}
	return out, nil
}
