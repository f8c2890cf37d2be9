package gpu

import (
	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/spirv"
)

// Warming the cache (Tuning.Warm = 2). On a GPU a decode step's ternary
// products are latency-bound: on the H200 each read its weights at 250-470
// GB/s of a 4,500 GB/s memory, every load waiting its turn from HBM, while
// attention and the norms between them leave the memory idle. A warm
// dispatch reads a matrix's weights through read_bandwidth (the loads XORed
// together, the sum written to a sink only if it equals an impossible
// value) in the barrier interval of a kernel that runs before the product
// (no barrier of its own), so that the product finds them in the L2 cache.
// It changes no result: the products read the same bytes.

const (
	// wgWarm is the workgroup of a warm dispatch.
	wgWarm = 256
	// warmWords is the 16-byte words one invocation of a warm dispatch
	// reads (four rounds of read_bandwidth's four loads in flight).
	warmWords = 16
	// warmSlot is the bytes between the sink ranges of the warm
	// dispatches of one barrier interval: distinct ranges, so that
	// dispatches with no barrier between them never write the same bytes,
	// at an offset any device's storage buffer alignment allows.
	warmSlot = 256
)

// warmOn reports whether a pass of T tokens warms the cache, under
// Tuning.Warm = 2: decode steps, and the passes of a few tokens
// (verification, several streams: fewTokens) whose products are as
// latency-bound; a prompt's tiled products are not.
func (b *Backend) warmOn(T int) bool { return T <= fewTokens && b.tune.Warm == 2 }

// warmLayer is what the attention interval of layer li warms: the layer's
// output, gate/up and down matrices, and the next layer's Q/K/V.
func (b *Backend) warmLayer(li int) []*ternaryMatrix {
	l := b.layers[li]
	ms := []*ternaryMatrix{l.o, l.gateUp, l.down}
	if li+1 < len(b.layers) {
		ms = append(ms, b.layers[li+1].qkv)
	}
	return ms
}

// warmSlots is the most warm dispatches of one barrier interval (one a
// shard), which sizes the sink.
func (b *Backend) warmSlots() int {
	n := 0
	if len(b.layers) > 0 {
		n = len(b.layers[0].qkv.shards)
	}
	for li := range b.layers {
		k := 0
		for _, m := range b.warmLayer(li) {
			k += len(m.shards)
		}
		n = max(n, k)
	}
	return n
}

// warm records a warm dispatch over each shard of ms in the current
// barrier interval.
func (rc *recorder) warm(ms ...*ternaryMatrix) {
	b := rc.b
	slot := 0
	for _, m := range ms {
		for _, sh := range m.shards {
			words := sh.rows * (m.k / 4) / 16 // a row's bytes are a multiple of 32
			groups := min(int(b.info.MaxComputeWorkGroupCount[0]), max(1, words/(wgWarm*warmWords)))
			rc.note("l2 warm", 16*words)
			rc.dispatch(spirv.ReadBandwidth, []uint32{b.workgroup(wgWarm)},
				[]vk.Range{whole(sh.buf), {Buf: b.warmSink, Off: int64(warmSlot * slot), Size: 16}},
				readPush{N: uint32(words), Never: 0xFFFFFFFF}, uint32(groups), 1)
			slot++
		}
	}
}
