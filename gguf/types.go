// The ggml tensor-type table.
//
// Every ggml type stores its values in fixed-size blocks: BlockSize values
// take BlockBytes bytes, so a tensor of n values (n a multiple of
// BlockSize) takes n/BlockSize·BlockBytes bytes. Scalar types are blocks of
// one value.
//
// I2_S (Microsoft's BitNet fork of ggml) is the exception: its per-tensor
// scale is not part of any block but sits in a 32-byte trailer after the
// packed 2-bit codes, so its size is n/4 + 32 bytes. We describe it as
// blocks of 128 values in 32 bytes (the unit its x86 packing interleaves)
// and add the trailer in DataSize.
//
// Ids 36..39 follow Microsoft's fork (I2_S, I8_S, TL1, TL2), which is what
// BitNet b1.58 GGUF files use. Upstream ggml does not assign these ids the
// same way, so a non-BitNet file using them would be misnamed here; BitNet
// files are the ones this engine targets.
package gguf

import (
	"fmt"
	"math"
	"strings"
)

// Type is a ggml tensor type id as stored in a GGUF tensor info.
type Type uint32

// The ggml tensor types. Ids 4, 5, 31, 32, 33 (removed from ggml) and
// anything >= 40 are unknown.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeI2_S    Type = 36
	TypeI8_S    Type = 37
	TypeTL1     Type = 38
	TypeTL2     Type = 39
)

// i2sTrailer is the number of bytes after I2_S's packed codes; the first 4
// hold the float32 scale, the rest are never read.
const i2sTrailer = 32

// typeInfo is one row of the type table.
type typeInfo struct {
	name       string
	blockSize  int // values per block
	blockBytes int // bytes per block
	decode     bool
}

// typeTable is indexed by Type; rows with an empty name are unknown ids.
var typeTable = [...]typeInfo{
	TypeF32:     {"F32", 1, 4, true},
	TypeF16:     {"F16", 1, 2, true},
	TypeQ4_0:    {"Q4_0", 32, 18, true},
	TypeQ4_1:    {"Q4_1", 32, 20, false},
	TypeQ5_0:    {"Q5_0", 32, 22, false},
	TypeQ5_1:    {"Q5_1", 32, 24, false},
	TypeQ8_0:    {"Q8_0", 32, 34, true},
	TypeQ8_1:    {"Q8_1", 32, 36, false},
	TypeQ2_K:    {"Q2_K", 256, 84, false},
	TypeQ3_K:    {"Q3_K", 256, 110, false},
	TypeQ4_K:    {"Q4_K", 256, 144, false},
	TypeQ5_K:    {"Q5_K", 256, 176, false},
	TypeQ6_K:    {"Q6_K", 256, 210, true},
	TypeQ8_K:    {"Q8_K", 256, 292, false},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66, false},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74, false},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98, false},
	TypeIQ1_S:   {"IQ1_S", 256, 50, false},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18, false},
	TypeIQ3_S:   {"IQ3_S", 256, 110, false},
	TypeIQ2_S:   {"IQ2_S", 256, 82, false},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136, false},
	TypeI8:      {"I8", 1, 1, false},
	TypeI16:     {"I16", 1, 2, false},
	TypeI32:     {"I32", 1, 4, false},
	TypeI64:     {"I64", 1, 8, false},
	TypeF64:     {"F64", 1, 8, false},
	TypeIQ1_M:   {"IQ1_M", 256, 56, false},
	TypeBF16:    {"BF16", 1, 2, true},
	TypeTQ1_0:   {"TQ1_0", 256, 54, true},
	TypeTQ2_0:   {"TQ2_0", 256, 66, true},
	TypeI2_S:    {"I2_S", 128, 32, true},
	TypeI8_S:    {"I8_S", 1, 1, false},
	TypeTL1:     {"TL1", 1, 1, false},
	TypeTL2:     {"TL2", 1, 1, false},
}

// typeByName maps upper-case names to types, for ParseType.
var typeByName = func() map[string]Type {
	m := make(map[string]Type, len(typeTable))
	for i, ti := range typeTable {
		if ti.name != "" {
			m[ti.name] = Type(i)
		}
	}
	return m
}()

func (t Type) info() (typeInfo, bool) {
	if uint64(t) >= uint64(len(typeTable)) || typeTable[t].name == "" {
		return typeInfo{}, false
	}
	return typeTable[t], true
}

// String returns ggml's name for t ("F32", "I2_S", "IQ2_XXS"), or
// "type N" for an unknown id.
func (t Type) String() string {
	if ti, ok := t.info(); ok {
		return ti.name
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Known reports whether t is in the type table.
func (t Type) Known() bool {
	_, ok := t.info()
	return ok
}

// BlockSize is the number of values per block (I2_S: 128); 0 when unknown.
func (t Type) BlockSize() int {
	ti, _ := t.info()
	return ti.blockSize
}

// BlockBytes is the number of bytes per block (I2_S: 32, not counting the
// per-tensor trailer); 0 when unknown.
func (t Type) BlockBytes() int {
	ti, _ := t.info()
	return ti.blockBytes
}

// Ternary reports whether t stores BitNet-style ternary weights
// {-1, 0, +1}·scale: TQ1_0, TQ2_0, I2_S, TL1, TL2.
func (t Type) Ternary() bool {
	switch t {
	case TypeTQ1_0, TypeTQ2_0, TypeI2_S, TypeTL1, TypeTL2:
		return true
	}
	return false
}

// CanDecode reports whether Decode supports t.
func (t Type) CanDecode() bool {
	ti, _ := t.info()
	return ti.decode
}

// StorageBits is the number of bits per value as stored,
// BlockBytes·8/BlockSize (I2_S: 2.0, ignoring its 32-byte trailer);
// 0 when unknown.
func (t Type) StorageBits() float64 {
	ti, ok := t.info()
	if !ok {
		return 0
	}
	return float64(ti.blockBytes*8) / float64(ti.blockSize)
}

// ParseType returns the type with the given name, ignoring case.
func ParseType(name string) (Type, error) {
	if t, ok := typeByName[strings.ToUpper(name)]; ok {
		return t, nil
	}
	return 0, fmt.Errorf("gguf: unknown tensor type %q", name)
}

// DataSize is the number of bytes a tensor of n values of type t occupies
// in a GGUF file: n/BlockSize·BlockBytes, or for I2_S n/4 + 32 (packed
// codes, then the 32-byte trailer holding the float32 scale).
func DataSize(t Type, n uint64) (uint64, error) {
	ti, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %v", t)
	}
	bs := uint64(ti.blockSize)
	if n%bs != 0 {
		return 0, fmt.Errorf("gguf: %v tensor of %d values: not a multiple of the block size %d", t, n, bs)
	}
	blocks := n / bs
	bb := uint64(ti.blockBytes)
	if blocks > math.MaxUint64/bb {
		return 0, fmt.Errorf("gguf: %v tensor of %d values: size overflows uint64", t, n)
	}
	size := blocks * bb
	if t == TypeI2_S {
		// size = n/4 <= MaxUint64/4, so adding the trailer cannot overflow.
		size += i2sTrailer
	}
	return size, nil
}
