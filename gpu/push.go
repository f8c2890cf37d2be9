package gpu

import (
	"encoding/binary"
	"math"
	"reflect"

	"github.com/bitvk/bitvk/spirv"
)

// The push constants of each kernel, field for field the `Push` block of
// its shaders/*.comp (TestPushLayouts holds the two to each other). Every
// field is 4 bytes, so offsets are 4·index.
type (
	embedPush       struct{ Row0, Rows, K uint32 }
	embedBlocksPush struct{ Row0, Rows, K, Group uint32 }
	normPush        struct {
		K, InStride, InOff uint32
		Eps                float32
	}
	// matPush serves ternary, head_f16 and head_q8.
	matPush struct{ Rows, Row0, K, T, OutStride uint32 }
	// ternaryNormPush serves ternary_norm: the product's rows, its input
	// norm's eps, the attention shape its RoPE epilogue needs, and the
	// split of the attention partials its prologue may combine.
	ternaryNormPush struct {
		Rows, Row0, K                            uint32
		Eps                                      float32
		Heads, KVHeads, HD, RopeDim, Interleaved uint32
		Chunks, Chunk                            uint32 // attention's partials (ACT = 3)
	}
	// blockHeadPush serves head_blocks: matPush and the group size.
	blockHeadPush struct{ Rows, Row0, K, T, OutStride, Group uint32 }
	ropePush      struct{ Heads, KVHeads, HD, RopeDim, QKVStride, Interleaved uint32 }
	attnPush      struct {
		Heads, KVHeads, QKVStride, T, Chunks uint32
		Scale                                float32
		CountOff                             uint32
	}
	attnReducePush struct {
		Heads, HD, Chunks uint32
		Eps               float32
	}
	argmaxPush struct{ N, Off, Chunk, Groups uint32 }
	readPush   struct{ N, Never uint32 }
	peakPush   struct{ Iters, B, Seed, Never uint32 }
	samplePush struct{ N, Cap, PenCap, Chunk, Groups uint32 }
)

// pushTypes maps each kernel to its push-constant struct.
var pushTypes = map[spirv.Kernel]any{
	spirv.Embed:                  embedPush{},
	spirv.EmbedBlocks:            embedBlocksPush{},
	spirv.NormQuant:              normPush{},
	spirv.Ternary:                matPush{},
	spirv.TernaryDot:             matPush{},
	spirv.TernaryMM:              matPush{},
	spirv.TernaryMMDot:           matPush{},
	spirv.TernaryMMCoop:          matPush{},
	spirv.TernaryNorm:            ternaryNormPush{},
	spirv.TernaryNormDot:         ternaryNormPush{},
	spirv.TernarySubgroup:        matPush{},
	spirv.TernarySubgroupDot:     matPush{},
	spirv.TernaryNormSubgroup:    ternaryNormPush{},
	spirv.TernaryNormSubgroupDot: ternaryNormPush{},
	spirv.NormQuantSubgroup:      normPush{},
	spirv.HeadF16:                matPush{},
	spirv.HeadQ8:                 matPush{},
	spirv.HeadQ8Dot:              matPush{},
	spirv.HeadBlocks:             blockHeadPush{},
	spirv.HeadBlocksDot:          blockHeadPush{},
	spirv.HeadNibbles:            blockHeadPush{},
	spirv.HeadNibblesDot:         blockHeadPush{},
	spirv.EmbedNibbles:           embedBlocksPush{},
	spirv.HeadSix:                blockHeadPush{},
	spirv.HeadSixDot:             blockHeadPush{},
	spirv.EmbedSix:               embedBlocksPush{},
	spirv.RopeKV:                 ropePush{},
	spirv.Attention:              attnPush{},
	spirv.AttentionSubgroup:      attnPush{},
	spirv.AttentionReduce:        attnReducePush{},
	spirv.Argmax:                 argmaxPush{},
	spirv.ReadBandwidth:          readPush{},
	spirv.Int8Peak:               peakPush{},
	spirv.Int8PeakDot:            peakPush{},
	spirv.Sample:                 samplePush{},
}

// pushSize is the size in bytes of k's push constants.
func pushSize(k spirv.Kernel) int { return reflect.TypeOf(pushTypes[k]).NumField() * 4 }

// pushBytes encodes a push-constant struct as the shader reads it.
func pushBytes(p any) []byte {
	v := reflect.ValueOf(p)
	b := make([]byte, 0, 4*v.NumField())
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint32:
			b = binary.LittleEndian.AppendUint32(b, uint32(f.Uint()))
		case reflect.Float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f.Float())))
		default:
			panic("gpu: push constant field of kind " + f.Kind().String())
		}
	}
	return b
}

// b32 is a bool as a push-constant word.
func b32(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}
