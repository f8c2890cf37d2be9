package nn

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/bitvk/bitvk/gguf"
)

// HeadType is how a backend holds the output head (logits = W·x, W
// [vocab][embd]): in the type the file stores it, or converted at load.
type HeadType string

const (
	// HeadStored keeps the file's type: F16, or the block types Q8_0, Q6_K
	// and Q4_0 that Microsoft's converter writes (--quant-embd), exactly
	// (HeadBlocks); any other float type becomes F16.
	HeadStored HeadType = "stored"
	HeadF16    HeadType = "f16"  // float16 rows
	HeadQ8     HeadType = "q8"   // int8 rows with one scale per row (bitvk's own)
	HeadQ8_0   HeadType = "q8_0" // converted to Q8_0 (32 values per scale)
	HeadQ6_K   HeadType = "q6_k" // converted to Q6_K (16 values per scale)
	HeadQ4_0   HeadType = "q4_0" // converted to Q4_0 (32 values per scale)
)

// HeadTypes lists the accepted values of --head.
var HeadTypes = []HeadType{HeadStored, HeadF16, HeadQ8, HeadQ8_0, HeadQ6_K, HeadQ4_0}

// ParseHeadType parses a --head value ("" means stored).
func ParseHeadType(s string) (HeadType, error) {
	if s == "" {
		return HeadStored, nil
	}
	for _, h := range HeadTypes {
		if string(h) == strings.ToLower(s) {
			return h, nil
		}
	}
	names := make([]string, len(HeadTypes))
	for i, h := range HeadTypes {
		names[i] = string(h)
	}
	return "", fmt.Errorf("unknown head type %q (choose %s)", s, strings.Join(names, ", "))
}

// For resolves HeadStored for a head tensor of type t: HeadQ8_0, HeadQ6_K or
// HeadQ4_0 for those block types, HeadF16 for every other type. Other head
// types are returned as they are.
func (h HeadType) For(t gguf.Type) HeadType {
	if h != HeadStored && h != "" {
		return h
	}
	switch t {
	case TypeQ8_0:
		return HeadQ8_0
	case TypeQ6_K:
		return HeadQ6_K
	case TypeQ4_0:
		return HeadQ4_0
	}
	return HeadF16
}

// Group is the number of consecutive values sharing one scale in a block
// head type (HeadBlocks), 0 for the others.
func (h HeadType) Group() int {
	switch h {
	case HeadQ8_0, HeadQ4_0:
		return 32
	case HeadQ6_K:
		return 16
	}
	return 0
}

// blockType is the GGUF type of a block head type.
func (h HeadType) blockType() gguf.Type {
	switch h {
	case HeadQ8_0:
		return TypeQ8_0
	case HeadQ6_K:
		return TypeQ6_K
	case HeadQ4_0:
		return TypeQ4_0
	}
	return 0
}

// HeadBlocks writes row r of a head tensor in a block head type h (Q8_0,
// Q6_K or Q4_0) as int8 codes [In] and one float32 scale per h.Group()
// values, so that value i = scales[i/Group]·codes[i], the product in
// float32 being exactly the value gguf.Decode gives for the stored block:
//
//	Q8_0: code = q,        scale = d
//	Q4_0: code = nibble−8, scale = d
//	Q6_K: code = q−32,     scale = d·sc (exact: 11 by 8 significant bits)
//
// A tensor stored in another type is first encoded to h's type (the
// conversion of --head q8_0|q6_k|q4_0); tmp [In] is scratch for that.
func HeadBlocks(t Tensor, r int, h HeadType, codes []int8, scales []float32, tmp []float32) error {
	g := h.Group()
	if g == 0 {
		return fmt.Errorf("nn: %s is not a block head type", h)
	}
	if len(codes) < t.In || len(scales) < t.In/g {
		return fmt.Errorf("%s: row buffers of %d codes and %d scales for a width of %d", t.Name, len(codes), len(scales), t.In)
	}
	blk, err := headRow(t, r, h, tmp)
	if err != nil {
		return err
	}
	f16 := func(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }
	switch h.blockType() {
	case TypeQ8_0:
		for b := 0; b < t.In/32; b++ {
			s := blk[34*b : 34*b+34]
			scales[b] = f16(s)
			for j := 0; j < 32; j++ {
				codes[32*b+j] = int8(s[2+j])
			}
		}
	case TypeQ4_0:
		for b := 0; b < t.In/32; b++ {
			s := blk[18*b : 18*b+18]
			scales[b] = f16(s)
			for j := 0; j < 16; j++ {
				codes[32*b+j] = int8(s[2+j]&0xf) - 8
				codes[32*b+16+j] = int8(s[2+j]>>4) - 8
			}
		}
	case TypeQ6_K:
		q6kRow(blk, t.In, codes, func(g int, d float32, sc int8) { scales[g] = d * float32(sc) })
	}
	return nil
}

// HeadQ6K writes row r of a head tensor as Q6_K holds it (stored so, or
// encoded as --head q6_k encodes it; tmp [In] is scratch for that): codes
// q−32 [In], the int8 scale sc of each group of 16 [In/16] and the scale
// d of each block of 256 [In/256], so that value i =
// d[i/256]·sc[i/16]·codes[i] (HeadBlocks' scale d·sc, exact in float32).
func HeadQ6K(t Tensor, r int, codes, sc []int8, d []float32, tmp []float32) error {
	if len(codes) < t.In || len(sc) < t.In/16 || len(d) < t.In/256 {
		return fmt.Errorf("%s: row buffers of %d codes, %d and %d scales for a width of %d", t.Name, len(codes), len(sc), len(d), t.In)
	}
	blk, err := headRow(t, r, HeadQ6_K, tmp)
	if err != nil {
		return err
	}
	q6kRow(blk, t.In, codes, func(g int, dg float32, s int8) {
		sc[g] = s
		d[g/16] = dg
	})
	return nil
}

// headRow returns row r of a head tensor in h's block type: its stored
// blocks, or the row encoded to h's type (tmp [In] scratch).
func headRow(t Tensor, r int, h HeadType, tmp []float32) ([]byte, error) {
	bt := h.blockType()
	if t.In%bt.BlockSize() != 0 {
		return nil, fmt.Errorf("%s: width %d is not a multiple of %s's block of %d", t.Name, t.In, bt, bt.BlockSize())
	}
	if t.Type == bt {
		size, err := gguf.DataSize(t.Type, uint64(t.In))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		if r < 0 || r >= t.Out || uint64(len(t.Data)) < uint64(r+1)*size {
			return nil, fmt.Errorf("%s: row %d of %d is outside the data", t.Name, r, t.Out)
		}
		return t.Data[uint64(r)*size : uint64(r+1)*size], nil
	}
	if err := t.Row(r, tmp); err != nil {
		return nil, err
	}
	var blk []byte
	var err error
	switch bt {
	case TypeQ8_0:
		blk, err = gguf.EncodeQ8_0(tmp[:t.In])
	case TypeQ6_K:
		blk, err = gguf.EncodeQ6_K(tmp[:t.In])
	case TypeQ4_0:
		blk, err = gguf.EncodeQ4_0(tmp[:t.In])
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return blk, nil
}

// q6kRow decodes the Q6_K blocks of a row of n values: codes q−32 into
// codes [n], and each group g's scales (the block's d, the group's sc) to
// scale.
func q6kRow(blk []byte, n int, codes []int8, scale func(g int, d float32, sc int8)) {
	for b := 0; b < n/256; b++ {
		s := blk[210*b : 210*b+210]
		d := F16ToF32(binary.LittleEndian.Uint16(s[208:]))
		for k := 0; k < 16; k++ {
			scale(16*b+k, d, int8(s[192+k]))
		}
		c := codes[256*b : 256*b+256]
		for hh := 0; hh < 2; hh++ {
			ql, qh := s[64*hh:64*hh+64], s[128+32*hh:128+32*hh+32]
			ch := c[128*hh : 128*hh+128]
			for l := 0; l < 32; l++ {
				ch[l] = int8(ql[l]&0xf|(qh[l]&3)<<4) - 32
				ch[l+32] = int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				ch[l+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				ch[l+96] = int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			}
		}
	}
}
