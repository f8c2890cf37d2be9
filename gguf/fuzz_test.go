package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, and
// whatever it accepts must write out and read back to the same bytes.
func FuzzParse(f *testing.F) {
	small := smallFile(f)
	f.Add(small)
	f.Add(small[:len(small)/2])
	f.Add(writeBytes(f, &Builder{Meta: []KV{{"general.alignment", U32(64)}, {"x", Array([]string{"a", "b"})}}}))
	f.Add(writeBytes(f, &Builder{}))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error is a %T, not a *FormatError: %v", err, err)
			}
			return
		}
		var once bytes.Buffer
		if _, err := FromFile(file).WriteTo(&once); err != nil {
			t.Fatalf("a parsed file does not write back: %v", err)
		}
		again, err := Parse(once.Bytes())
		if err != nil {
			t.Fatalf("a rewritten file does not parse: %v", err)
		}
		var twice bytes.Buffer
		if _, err := FromFile(again).WriteTo(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("writing is not stable: rewrite of a rewrite differs")
		}
	})
}

// FuzzBlockQuantizers feeds arbitrary float32 blocks (NaN, Inf and
// subnormals included) to the Q4_0, Q8_0 and Q6_K encoders: they must never
// panic, write exactly DataSize bytes, and give blocks that decode; for
// finite inputs of moderate size every decoded value lies within the
// format's step of the input.
func FuzzBlockQuantizers(f *testing.F) {
	seed := make([]byte, 4*256)
	for i := range 256 {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i%37)-18))
	}
	f.Add(seed)
	f.Add(make([]byte, 4*256))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := make([]float32, 256)
		finite := true
		for i := range src {
			if 4*i+4 <= len(data) {
				src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			finite = finite && !math.IsNaN(float64(src[i])) && math.Abs(float64(src[i])) < 1e4
		}
		for _, c := range []struct {
			typ  Type
			enc  func([]float32) ([]byte, error)
			step float64 // largest error, as a share of the block's max|x|
		}{{TypeQ4_0, EncodeQ4_0, 1.0 / 8}, {TypeQ8_0, EncodeQ8_0, 1.0 / 200}, {TypeQ6_K, EncodeQ6_K, 1.0 / 40}} {
			enc, err := c.enc(src)
			if err != nil {
				t.Fatalf("%v: %v", c.typ, err)
			}
			if size, _ := DataSize(c.typ, 256); uint64(len(enc)) != size {
				t.Fatalf("%v: %d bytes, want %d", c.typ, len(enc), size)
			}
			dec := make([]float32, 256)
			if err := Decode(c.typ, enc, 256, dec); err != nil {
				t.Fatalf("%v: %v", c.typ, err)
			}
			if !finite {
				continue
			}
			// Q6_K's sub-block scales are int8 steps of the block's largest,
			// so a small sub-block's error is bounded by the block's max:
			// d·(32·½ + ½·|sc|) ≤ max/4096·80 < max/40.
			bs := c.typ.BlockSize()
			for b := 0; b < 256; b += bs {
				amax := 0.0
				for _, v := range src[b : b+bs] {
					amax = max(amax, math.Abs(float64(v)))
				}
				if amax < 1 { // small blocks: their F16 scales lose precision or flush to 0
					continue
				}
				for i := b; i < b+bs; i++ {
					if d := math.Abs(float64(dec[i] - src[i])); d > c.step*amax*1.01+amax*1e-3 {
						t.Fatalf("%v value %d: %g -> %g (block max %g)", c.typ, i, src[i], dec[i], amax)
					}
				}
			}
		}
	})
}
