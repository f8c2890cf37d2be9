// Package gguf reads and writes GGUF files, the container llama.cpp and
// bitnet.cpp store models in, and holds the ggml tensor type table and the
// block codecs bitvk needs.
//
// Layout of a GGUF file (all little-endian):
//
//	magic "GGUF" | version u32 | tensor_count u64 | kv_count u64
//	kv_count × (key string, value type u32, value)
//	tensor_count × (name string, n_dims u32, dims u64[n_dims], type u32, offset u64)
//	padding to general.alignment (default 32)
//	tensor data, each tensor at data_start + offset, offsets aligned
//
// Strings are a u64 byte length followed by the bytes. Dimensions are in ggml
// order: dims[0] is the innermost (contiguous) one, the input width of a weight.
//
// Every file is treated as hostile: counts and lengths are bounded by the bytes
// left before anything is allocated, and every tensor's data range is checked.
package gguf

import (
	"fmt"
	"os"
	"unsafe"
)

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

// Limits that no real file comes near; they keep a hostile file from making
// the parser recurse or loop without bound.
const (
	maxDims       = 4  // ggml tensors have at most 4 dimensions
	maxArrayDepth = 16 // arrays of arrays nest at most this deep
)

// KV is one metadata entry, in file order.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor: its name, type, shape and where its data is.
type TensorInfo struct {
	Name   string
	Type   Type
	Dims   []uint64 // ggml order: Dims[0] is the contiguous (input) dimension
	Offset uint64   // from the start of the data section
	Size   uint64   // bytes of data, from the type table
}

// Elements is the number of values in the tensor.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Tensor data is a view into the file's bytes
// (memory-mapped where possible): it stays valid until Close.
type File struct {
	Version   uint32
	Meta      []KV // in file order
	Tensors   []TensorInfo
	Alignment uint64
	DataStart uint64 // file offset of the data section
	Size      uint64 // file size in bytes

	dataEnd uint64 // end of the last tensor's data, or of the tensor infos when there are none

	data  []byte
	index map[string]int // metadata key → index in Meta
	byNam map[string]int // tensor name → index in Tensors
	unmap func() error
}

// Open reads a GGUF file read-only, memory-mapping it where the system allows
// and reading it into memory where it does not.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s: not a regular file", path)
	}
	data, unmap, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// Close releases the file's memory. Tensor data slices are invalid after it.
func (f *File) Close() error {
	f.data = nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		return u()
	}
	return nil
}

// Bytes returns the whole file.
func (f *File) Bytes() []byte { return f.data }

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.index[key]
	if !ok {
		return Value{}, false
	}
	return f.Meta[i].Value, true
}

func (f *File) get(key string) (Value, error) {
	v, ok := f.Get(key)
	if !ok {
		return Value{}, &KeyError{Key: key, Msg: "missing"}
	}
	return v, nil
}

// keyErr wraps an accessor's complaint about a value with its key.
func keyErr(key string, err error) error { return &KeyError{Key: key, Msg: err.Error()} }

// Uint returns an integer metadata value as uint64.
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	u, err := v.Uint()
	if err != nil {
		return 0, keyErr(key, err)
	}
	return u, nil
}

// Int returns an integer metadata value as int64.
func (f *File) Int(key string) (int64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	i, err := v.Int()
	if err != nil {
		return 0, keyErr(key, err)
	}
	return i, nil
}

// Float returns a float metadata value as float64.
func (f *File) Float(key string) (float64, error) {
	v, err := f.get(key)
	if err != nil {
		return 0, err
	}
	x, err := v.Float()
	if err != nil {
		return 0, keyErr(key, err)
	}
	return x, nil
}

// Bool returns a bool metadata value.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.get(key)
	if err != nil {
		return false, err
	}
	b, err := v.Bool()
	if err != nil {
		return false, keyErr(key, err)
	}
	return b, nil
}

// String returns a string metadata value.
func (f *File) String(key string) (string, error) {
	v, err := f.get(key)
	if err != nil {
		return "", err
	}
	s, err := v.Str()
	if err != nil {
		return "", keyErr(key, err)
	}
	return s, nil
}

// Strings returns an array-of-strings metadata value.
func (f *File) Strings(key string) ([]string, error) {
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	s, err := v.Strings()
	if err != nil {
		return nil, keyErr(key, err)
	}
	return s, nil
}

// Tensor returns the tensor with the given name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.byNam[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of a tensor: a view into the file.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataStart + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

// Release tells the system that the process no longer needs the file pages
// under b (a view into this file, such as tensor data it has copied
// elsewhere), so that they leave its resident memory. The bytes stay
// readable: a later access reads them from the file again. Only whole pages
// inside b are released; it does nothing where the file was read into
// memory rather than mapped.
func (f *File) Release(b []byte) {
	if f.unmap == nil || len(b) == 0 || len(f.data) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(&f.data[0]))
	start := uintptr(unsafe.Pointer(&b[0]))
	if start < base || start-base+uintptr(len(b)) > uintptr(len(f.data)) {
		return // not a view into this file
	}
	off := int(start - base)
	page := os.Getpagesize()
	lo := (off + page - 1) / page * page
	hi := (off + len(b)) / page * page
	if lo < hi {
		releasePages(f.data[lo:hi])
	}
}
