package gpu

import (
	"fmt"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/spirv"
)

// Workgroup shapes. NR rows × NT tokens per workgroup for the matrix
// kernels: NT = 1 for decode, tileT for prefill (each weight word read once
// serves tileT tokens).
const (
	wgMat  = 64
	rowsWG = 4
	tileT  = 8
	wgNorm = 256
	wgAttn = 128
	wgRope = 64
	wgEmbd = 256
	wgArg  = 256
)

// kernel returns the pipeline of k with the given specialization constants
// (the first is always the workgroup size), made on first use.
func (b *Backend) kernel(k spirv.Kernel, spec ...uint32) (*vk.Kernel, error) {
	if len(spec) > maxSpec {
		return nil, fmt.Errorf("gpu: kernel %s: %d specialization constants, at most %d", k, len(spec), maxSpec)
	}
	key := kernelKey{k: k, n: len(spec)}
	copy(key.spec[:], spec)
	if p, ok := b.kernels[key]; ok {
		return p, nil
	}
	code, err := spirv.Code(k)
	if err != nil {
		return nil, err
	}
	p, err := b.dev.NewKernel(string(k), code, bindings[k], pushSize(k), spec)
	if err != nil {
		return nil, err
	}
	b.kernels[key] = p
	return p, nil
}

// bindings is the number of storage buffers each kernel binds.
var bindings = map[spirv.Kernel]int{
	spirv.Embed: 3, spirv.EmbedBlocks: 4, spirv.NormQuant: 5, spirv.Ternary: 6, spirv.TernaryDot: 6, spirv.TernaryMM: 6, spirv.TernaryMMDot: 6, spirv.TernaryMMCoop: 6, spirv.TernaryNorm: 10, spirv.TernaryNormDot: 10,
	spirv.TernarySubgroup: 6, spirv.TernarySubgroupDot: 6, spirv.TernaryNormSubgroup: 10, spirv.TernaryNormSubgroupDot: 10, spirv.NormQuantSubgroup: 5,
	spirv.HeadF16: 3, spirv.HeadQ8: 5, spirv.HeadQ8Dot: 5, spirv.HeadBlocks: 5, spirv.HeadBlocksDot: 5, spirv.HeadNibbles: 5, spirv.HeadNibblesDot: 5, spirv.EmbedNibbles: 4, spirv.HeadSix: 5, spirv.HeadSixDot: 5, spirv.EmbedSix: 4, spirv.RopeKV: 5,
	spirv.Attention: 7, spirv.AttentionSubgroup: 7, spirv.AttentionReduce: 6, spirv.Argmax: 3, spirv.ReadBandwidth: 2, spirv.Int8Peak: 1, spirv.Int8PeakDot: 1, spirv.Sample: 4,
}

// workgroup returns size capped by the device, a power of two.
func (b *Backend) workgroup(size uint32) uint32 {
	for size > b.info.MaxComputeWorkGroupInvocations && size > 1 {
		size /= 2
	}
	return size
}

// recKey identifies a cached recording: T tokens, one of the out… modes
// (outRows: the logits of the last rows tokens), and whether the tokens
// may be of several slots (mixed: attention takes one token per workgroup).
type recKey struct {
	T, mode, rows int
	mixed         bool
}

// maxRecordings bounds the cache of recordings (decode, a few prefill
// sizes, the shapes of the server's mixed batches).
const maxRecordings = 16

// recording returns the recorded forward pass of key, recording it on
// first use. The tokens, their positions and slots are read from the input
// buffer, so one recording serves every step of that shape.
func (b *Backend) recording(key recKey) (*vk.Recording, error) {
	if r, ok := b.recs[key]; ok {
		return r, nil
	}
	r, err := b.record(fmt.Sprintf("forward of %d tokens", key.T), key.T, key.mode, recOpts{rows: key.rows, mixed: key.mixed})
	if err != nil {
		return nil, err
	}
	if len(b.recList) == maxRecordings {
		old := b.recList[0]
		b.recList = b.recList[1:]
		b.recs[old].Release()
		delete(b.recs, old)
	}
	b.recs[key] = r
	b.recList = append(b.recList, key)
	return r, nil
}

// traceRecording records a forward pass that also copies the residual
// stream after each block to the host; it is not cached.
func (b *Backend) traceRecording(T, mode int) (*vk.Recording, error) {
	if b.traceDev == nil {
		size := int64(2*len(b.layers)*b.batch*b.c.Embd) * 4
		var err error
		if b.traceDev, err = b.dev.NewBuffer("trace", size, false); err != nil {
			return nil, err
		}
		if b.traceHost, err = b.dev.NewBuffer("trace (host)", size, true); err != nil {
			return nil, err
		}
	}
	return b.record(fmt.Sprintf("traced forward of %d tokens", T), T, mode, recOpts{trace: true})
}

// seq binds each token's (position, first cache row) of the input buffer.
func (rc *recorder) seq() vk.Range { return vk.Range{Buf: rc.b.inDev, Off: rc.b.seqOff} }

// whole binds all of a buffer.
func whole(buf *vk.Buffer) vk.Range { return vk.Range{Buf: buf} }

// recorder is a recording under construction; the first error sticks.
type recorder struct {
	b     *Backend
	r     *vk.Recording
	pos   int  // the first position, where known (profiles): attention's traffic depends on it
	mixed bool // tokens of several slots: attention takes one token per workgroup
	err   error
}

// note labels the next command for profiles with the bytes it must move.
func (rc *recorder) note(label string, bytes int) {
	if rc.err == nil {
		rc.r.Note(label, int64(bytes))
	}
}

func (rc *recorder) dispatch(k spirv.Kernel, spec []uint32, bufs []vk.Range, push any, x, y uint32) {
	if rc.err != nil {
		return
	}
	p, err := rc.b.kernel(k, spec...)
	if err != nil {
		rc.err = err
		return
	}
	rc.r.Dispatch(p, bufs, pushBytes(push), x, y, 1)
}

func ceilDiv(a, b int) uint32 { return uint32((a + b - 1) / b) }

// argmax's first stage gives each workgroup about argmaxChunk logits, in
// at most argmaxMaxGroups workgroups: on a GPU a vocabulary of 128256 is
// read by 126 workgroups at once (one workgroup reading it alone scans 501
// logits per invocation, one after another, on one compute unit). A CPU
// device (lavapipe) takes it in one workgroup and one dispatch: there the
// second dispatch cost more than the scan (small shape: 219 µs in one
// dispatch, 295 + 152 in two).
const (
	argmaxChunk     = 1024
	argmaxMaxGroups = 1024
)

// onCPU reports whether the device is a CPU (lavapipe): every workgroup
// runs on the same few cores, and a dispatch costs more than on a GPU, so
// the fusion and the split argmax, which trade repeated or extra work for
// parallel workgroups, do not pay there.
func (b *Backend) onCPU() bool { return b.info.Type == "cpu" }

// argmaxPlan returns the logits per workgroup and the workgroups of
// argmax's first stage over n logits, on a CPU device or a GPU.
func argmaxPlan(n int, cpuDevice bool) (chunk, groups int) {
	groups = min(max(1, (n+argmaxChunk-1)/argmaxChunk), argmaxMaxGroups)
	if cpuDevice {
		groups = 1
	}
	return (n + groups - 1) / groups, groups
}

// argmax records the index of the largest of the n logits of in from
// float off into b.result: the workgroups' partials into b.argPart, a
// barrier, then their best (or, in one workgroup, the index at once).
func (rc *recorder) argmax(in *vk.Buffer, n, off int) {
	b := rc.b
	chunk, groups := argmaxPlan(n, b.onCPU() && !b.argmaxSplit)
	push := argmaxPush{N: uint32(n), Off: uint32(off), Chunk: uint32(chunk), Groups: uint32(groups)}
	bufs := []vk.Range{whole(in), whole(b.argPart), whole(b.result)}
	if groups == 1 {
		rc.note("argmax", 4*n+4)
		rc.dispatch(spirv.Argmax, []uint32{b.workgroup(wgArg), 0}, bufs, push, 1, 1)
		return
	}
	rc.note("argmax partials", 4*n+8*groups)
	rc.dispatch(spirv.Argmax, []uint32{b.workgroup(wgArg), 0}, bufs, push, uint32(groups), 1)
	rc.r.Barrier()
	rc.note("argmax", 8*groups+4)
	rc.dispatch(spirv.Argmax, []uint32{b.workgroup(wgArg), 1}, bufs, push, 1, 1)
}

// normQuant records norm_quant over T tokens of in (rows of inStride
// floats, from token inOff): ACT, NORM, QUANT as in the shader.
func (rc *recorder) normQuant(label string, in *vk.Buffer, w *vk.Buffer, K, inStride, inOff, T int, act, quant uint32) {
	b := rc.b
	norm := uint32(1)
	if w == nil {
		norm, w = 0, b.outNorm // any float buffer: unread
	}
	read, written := 4*T*K, T*(K+4) // floats in; int8 and a scale out
	if act != 0 {
		read *= 2
	}
	if quant == 0 {
		written = 4 * T * K
	}
	rc.note(label, read+written+4*K*int(norm))
	regs, kmax := b.tune.normRegs(K, b.tune.Norm)
	rc.dispatch(spirv.NormQuant.Variant(b.subgroups, false), []uint32{uint32(b.tune.Norm), act, norm, quant, regs, kmax},
		[]vk.Range{whole(in), whole(w), whole(b.xn), whole(b.q), whole(b.s)},
		normPush{K: uint32(K), InStride: uint32(inStride), InOff: uint32(inOff), Eps: b.c.Eps}, uint32(T), 1)
}

// ternary records out[t][row] (+)= BitLinear of the quantized activations
// by m, every shard, for T tokens.
func (rc *recorder) ternary(label string, m *ternaryMatrix, out *vk.Buffer, outStride, T int, acc bool) {
	b := rc.b
	k := spirv.Ternary.Variant(b.subgroups, b.dot)
	nt, grouped, accum := uint32(1), uint32(0), uint32(0)
	lanes, rows, vec := uint32(b.tune.Lanes), b.tune.Rows, uint32(b.tune.Vec) // a decode step's shape
	if T > 1 {
		nt, lanes, rows, vec = uint32(tokenTile(T, b.tune.PrefillTokens, b.tune.PrefillRows, b.tune.PrefillLanes)), uint32(b.tune.PrefillLanes), b.tune.PrefillRows, uint32(b.tune.PrefillVec)
	}
	gs := m.rowScale
	if m.groupScale != nil {
		grouped, gs = 1, m.groupScale
	}
	if acc {
		accum = 1
	}
	// A prompt's products over matrices with one scale a row go through
	// ternary_mm (the same bits); a CPU device keeps its tiles whole unless
	// mmg is set otherwise.
	tiled := T > 1 && grouped == 0 && b.tune.Tiled > 1 && 2*T >= b.tune.Tiled
	shrink := !b.onCPU() || b.tune.TiledGroups != tiledGroups
	coop := tiled && b.tune.TiledCoop == 2
	switch {
	case coop:
		k = spirv.TernaryMMCoop
	case tiled:
		k = spirv.TernaryMM.Variant(false, b.dot)
	}
	for _, sh := range m.shards {
		// weights, activations, scales, results (read too when accumulating)
		bytes := sh.rows*m.k/4 + T*m.k + 4*sh.rows + 4*T*sh.rows*(1+int(accum))
		if grouped == 1 {
			bytes += 4 * sh.rows * m.k / 256
		}
		spec := []uint32{lanes, uint32(rows), nt, grouped, accum, vec}
		gx, gy := ceilDiv(sh.rows, rows), ceilDiv(T, int(nt))
		switch {
		case coop:
			spec = []uint32{coopWG, accum}
			gx, gy = ceilDiv(sh.rows, coopTile), ceilDiv(T, coopTile)
		case tiled:
			bm, bn, wg := b.tune.tiledTile(sh.rows, T, shrink)
			spec = []uint32{uint32(wg), uint32(b.tune.TiledRows), uint32(b.tune.TiledTokens), uint32(bn), accum}
			gx, gy = ceilDiv(sh.rows, bm), ceilDiv(T, bn)
		}
		rc.note(label, bytes)
		rc.dispatch(k, spec,
			[]vk.Range{whole(sh.buf), whole(b.q), whole(b.s), whole(m.rowScale), whole(gs), whole(out)},
			matPush{Rows: uint32(sh.rows), Row0: uint32(sh.row0), K: uint32(m.k), T: uint32(T), OutStride: uint32(outStride)},
			gx, gy)
	}
}

// fewTokens is the most tokens of a pass whose products and head take
// all of them in one tile: a verification pass (1 + k ≤ 9 tokens) or a
// step of several streams then reads each weight once, not once per tile
// of PrefillTokens (a pass of 9 tokens read the whole head twice), and
// computes no more slots than the next power of two of its tokens (a pass
// of 2 computed 8).
const fewTokens = 16

// tokenTile returns the tokens NT of a product's tile over T tokens: 1 for
// one token; for T ≤ fewTokens, the next power of two at least T, halved
// until the tile fits its workgroup (rows·NT outputs, one an invocation of
// the lanes, and rows·NT·lanes partial sums in 16 KiB); else tile.
func tokenTile(T, tile, rows, lanes int) int {
	switch {
	case T <= 1:
		return 1
	case T > fewTokens:
		return tile
	}
	nt := 1
	for nt < T {
		nt *= 2
	}
	for nt > 1 && (rows*nt > lanes || rows*nt*lanes > 4096) {
		nt /= 2
	}
	return nt
}

// fusion is what a one-token pass (a decode step) does in fewer dispatches
// (ternary_norm.comp): the attention and FFN input norms with their int8
// quantization in the prologues of the QKV and gate/up products, and RoPE
// with the K/V cache write in the QKV epilogue. A layer is then 7
// dispatches instead of 10. Passes of several tokens keep norm_quant and
// rope_kv, whose bits the fused kernel reproduces (nntest.BatchInvariance).
type fusion struct {
	norm bool // the input norms in the products' prologue
	rope bool // RoPE and the K/V cache write in the QKV epilogue
	down bool // the FFN's activation and sub-norm in the down projection's prologue (Tuning.Layer ≤ 6)
	attn bool // attention's reduce, sub-norm and quantization in the output projection's prologue (Tuning.Layer 5)
	// combine: attention's chunks combined by the last workgroup of each
	// head group (attention.comp COMBINE), the output projection's
	// prologue normalizing the combined row (Tuning.Combine, with attn).
	combine bool
}

// ternaryNormBuffers is the number of storage buffers ternary_norm binds.
const ternaryNormBuffers = 10

// planFusion decides the fusion on this device for this model (see
// Options.Fusion): the norm needs the workgroup norm_quant runs (so its
// trees are the same), the int8 codes of a row in shared memory and ten
// storage buffers per kernel; the RoPE epilogue needs Q, K and V in one
// shard and head and RoPE dimensions in fours (ternary_norm.comp's row
// order).
func (b *Backend) planFusion() fusion {
	c := b.c
	wg, lanes, rows := b.tune.Norm, b.tune.Lanes, b.tune.Rows
	shared := func(K int) int { return K + 4*2*wg + 4*rows*wg + 4*(wg/lanes)*rows } // codes, norm trees, product tree, outputs
	off := b.o.Fusion == FuseOff || b.o.Fusion == FuseAuto && b.onCPU()
	limit := int(b.info.MaxComputeSharedMemorySize)
	if off || wg < lanes || shared(c.Embd) > limit || b.info.MaxStorageBuffers < ternaryNormBuffers {
		return fusion{}
	}
	f := fusion{norm: true}
	f.rope = rows%4 == 0 && c.HeadDim%4 == 0 && c.RopeDim%4 == 0 && len(b.layers) > 0 && len(b.layers[0].qkv.shards) == 1
	f.down = b.tune.Layer <= 6 && shared(c.FFN) <= limit && c.FFN%128 == 0
	// The combined attention values must come through the registers
	// (REGS = 1), in attention_reduce's order.
	f.attn = b.tune.Layer <= 5 && regsFit(c.Embd, wg)
	f.combine = f.attn && b.tune.Combine == 2
	return f
}

// ternaryNorm records, for one token, out[row] = BitLinear by m of the
// RMSNorm (weight norm) of the hidden state x and its int8 quantization,
// each workgroup normalizing x itself (ternary_norm), every shard. With
// rope (m is the layer's Q, K and V in one shard), the queries are written
// rotated and the keys and values go to the layer's cache, as rope_kv does.
func (rc *recorder) ternaryNorm(label string, m *ternaryMatrix, norm, out *vk.Buffer, l *layerBufs, rope bool) {
	rc.ternaryNormOf(label, m, rc.b.x, 0, norm, out, false, l, rope)
}

// actAttention is ternary_norm's ACT for an input of attention partials.
const actAttention = 3

// ternaryNormOf is ternaryNorm of the input in (m.k values; with act 1 or
// 2 the gated pairs of the FFN, 2·m.k; with actAttention the attention
// partials, combined), adding to out when acc.
func (rc *recorder) ternaryNormOf(label string, m *ternaryMatrix, in *vk.Buffer, act uint32, norm, out *vk.Buffer, acc bool, l *layerBufs, rope bool) {
	b, c := rc.b, rc.b.c
	k := spirv.TernaryNorm.Variant(b.subgroups, b.dot)
	wg, lanes, rows := uint32(b.tune.Norm), uint32(b.tune.Lanes), uint32(b.tune.Rows)
	perWG := int(wg/lanes) * int(rows)
	grouped, gs := uint32(0), m.rowScale
	if m.groupScale != nil {
		grouped, gs = 1, m.groupScale
	}
	push := ternaryNormPush{K: uint32(m.k), Eps: c.Eps, Heads: uint32(c.Heads), KVHeads: uint32(c.KVHeads),
		HD: uint32(c.HeadDim), RopeDim: uint32(c.RopeDim), Interleaved: b32(c.RopeInterleaved),
		Chunks: uint32(b.attn.chunks), Chunk: uint32(b.attn.chunk)}
	regs, _ := b.tune.normRegs(m.k, int(wg)) // KMAX is m.k: it sizes the codes too
	if act == actAttention || in == b.att {
		regs = 1 // attention_reduce's order of the squares; planFusion checked that it fits
	}
	for _, sh := range m.shards {
		// weights, x and the norm weight, scales, results (read too when accumulating)
		bytes := sh.rows*m.k/4 + 8*m.k + 8*sh.rows
		switch act {
		case 0:
		case actAttention:
			bytes += rc.attnUsed(1) - 4*m.k
		default:
			bytes += 4 * m.k
		}
		if acc {
			bytes += 4 * sh.rows
		}
		if grouped == 1 {
			bytes += 4 * sh.rows * m.k / 256
		}
		rc.note(label, bytes)
		push.Rows, push.Row0 = uint32(sh.rows), uint32(sh.row0)
		rc.dispatch(k, []uint32{wg, rows, grouped, b32(rope), lanes, uint32(m.k), uint32(b.tune.Vec), regs, act, b32(acc), b32(b.tune.Preload == 2)},
			[]vk.Range{whole(sh.buf), whole(in), whole(norm), whole(m.rowScale), whole(gs), whole(out), whole(b.rope), whole(l.kc), whole(l.vc), rc.seq()},
			push, ceilDiv(sh.rows, perWG), 1)
	}
}

// head records logits[t] for n tokens of the normed state (xn rows 0…, or
// the quantized q and s for the int8 head).
func (rc *recorder) head(n int) {
	b := rc.b
	nt := uint32(tokenTile(n, tileT, rowsWG, wgMat))
	h := b.head
	for i, sh := range h.shards {
		push := matPush{Rows: uint32(sh.rows), Row0: uint32(sh.row0), K: uint32(h.k), T: uint32(n), OutStride: uint32(b.c.Vocab)}
		gx, gy := ceilDiv(sh.rows, rowsWG), ceilDiv(n, int(nt))
		if h.group > 0 {
			k, _, name := h.blockKernels()
			rc.note("output head ("+name+")", h.weightBytes(sh.rows)+n*h.k+4*n*sh.rows)
			rc.dispatch(k.Variant(false, b.dot), []uint32{wgMat, rowsWG, nt},
				[]vk.Range{whole(sh.buf), whole(b.q), whole(b.s), whole(h.groupScales[i]), whole(b.logits)},
				blockHeadPush{Rows: push.Rows, Row0: push.Row0, K: push.K, T: push.T, OutStride: push.OutStride, Group: uint32(h.group)}, gx, gy)
			continue
		}
		if h.rowScale == nil {
			rc.note("output head (f16)", h.weightBytes(sh.rows)+4*n*h.k+4*n*sh.rows)
			rc.dispatch(spirv.HeadF16, []uint32{wgMat, rowsWG, nt},
				[]vk.Range{whole(sh.buf), whole(b.xn), whole(b.logits)}, push, gx, gy)
			continue
		}
		k := spirv.HeadQ8
		if b.dot {
			k = spirv.HeadQ8Dot
		}
		rc.note("output head (q8)", h.weightBytes(sh.rows)+n*h.k+4*n*sh.rows)
		rc.dispatch(k, []uint32{wgMat, rowsWG, nt},
			[]vk.Range{whole(sh.buf), whole(b.q), whole(b.s), whole(h.rowScale), whole(b.logits)}, push, gx, gy)
	}
}

// record records the forward pass of T tokens: the embedding, every layer,
// and (by mode) the head, its argmax, and the copy of what the host reads.
// Barriers separate the steps that read what the previous one wrote; the
// shards of one matrix run without barriers between them.
// recOpts are the variants of a recorded forward pass.
type recOpts struct {
	trace   bool // copy the residual stream after each block to the host
	profile bool // timestamps after every command (vk.Recording.Profile)
	pos     int  // profile: the first position, for attention's traffic
	rows    int  // outRows: the head's rows, the last tokens'
	mixed   bool // the tokens may be of several slots
}

func (b *Backend) record(name string, T, mode int, o recOpts) (*vk.Recording, error) {
	c := b.c
	E, F, KV := c.Embd, c.FFN, c.KVDim()
	qkvStride := E + 2*KV
	rc := &recorder{b: b, r: b.dev.Record(name), pos: o.pos, mixed: o.mixed}
	r := rc.r
	trace := o.trace
	if o.profile {
		if err := r.Profile(); err != nil {
			r.Release()
			return nil, err
		}
	}
	tokens := vk.Range{Buf: b.inDev, Size: int64(4 * T)}
	seq := vk.Range{Buf: b.inDev, Off: b.seqOff, Size: int64(8 * T)}

	// One copy of the tokens and their positions (and the gap between).
	in := vk.Range{Buf: b.inHost, Size: seq.Off + seq.Size}
	rc.note("input upload", int(in.Size))
	r.Copy(in, vk.Range{Buf: b.inDev, Size: in.Size})
	r.Barrier()
	for i, sh := range b.embd.shards {
		if g := b.embd.group; g > 0 {
			_, k, name := b.embd.blockKernels()
			rc.note("embedding ("+name+")", 4+b.embd.weightBytes(1)*T+4*E*T)
			rc.dispatch(k, []uint32{wgEmbd}, []vk.Range{whole(sh.buf), whole(b.embd.groupScales[i]), tokens, whole(b.x)},
				embedBlocksPush{Row0: uint32(sh.row0), Rows: uint32(sh.rows), K: uint32(E), Group: uint32(g)}, uint32(T), 1)
			continue
		}
		rc.note("embedding", 4+2*E*T+4*E*T)
		rc.dispatch(spirv.Embed, []uint32{wgEmbd}, []vk.Range{whole(sh.buf), tokens, whole(b.x)},
			embedPush{Row0: uint32(sh.row0), Rows: uint32(sh.rows), K: uint32(E)}, uint32(T), 1)
	}
	warm := b.warmOn(T)
	if warm && len(b.layers) > 0 {
		rc.warm(b.layers[0].qkv)
	}
	r.Barrier()
	act := uint32(1)
	if c.Activation == nn.SiLU {
		act = 2
	}
	stage := 0
	traceCopy := func() {
		if trace {
			r.Copy(vk.Range{Buf: b.x, Size: int64(4 * T * E)}, vk.Range{Buf: b.traceDev, Off: int64(4 * stage * T * E), Size: int64(4 * T * E)})
			stage++
		}
	}
	fuseNorm, fuseRope, fuseDown, fuseAttn := T == 1 && b.fuse.norm, T == 1 && b.fuse.rope, T == 1 && b.fuse.down, T == 1 && b.fuse.attn
	for li, l := range b.layers {
		// attention
		switch {
		case fuseRope:
			rc.ternaryNorm("attn norm+qkv+rope+kv", l.qkv, l.attnNorm, b.qkv, &l, true)
		case fuseNorm:
			rc.ternaryNorm("attn norm+qkv", l.qkv, l.attnNorm, b.qkv, &l, false)
		default:
			rc.normQuant("attn norm+quant", b.x, l.attnNorm, E, E, 0, T, 0, 1)
			r.Barrier()
			rc.ternary("attn qkv", l.qkv, b.qkv, qkvStride, T, false)
		}
		r.Barrier()
		if !fuseRope {
			rc.note("rope + kv write", 4*T*qkvStride+4*T*E+2*2*T*KV+4*T*c.RopeDim)
			rc.dispatch(spirv.RopeKV, []uint32{wgRope},
				[]vk.Range{whole(b.qkv), whole(b.rope), whole(l.kc), whole(l.vc), rc.seq()},
				ropePush{Heads: uint32(c.Heads), KVHeads: uint32(c.KVHeads), HD: uint32(c.HeadDim), RopeDim: uint32(c.RopeDim), QKVStride: uint32(qkvStride), Interleaved: b32(c.RopeInterleaved)},
				uint32(T), uint32(c.Heads+2*c.KVHeads))
			r.Barrier()
		}
		if fuseAttn && b.fuse.combine && l.attnSubNorm != nil {
			rc.attentionChunks(l, T, li)
		} else {
			rc.attentionChunks(l, T, -1)
		}
		if warm {
			rc.warm(b.warmLayer(li)...)
		}
		r.Barrier()
		switch {
		case fuseAttn && b.fuse.combine && l.attnSubNorm != nil:
			rc.ternaryNormOf("attn subnorm+output", l.o, b.att, 0, l.attnSubNorm, b.x, true, &l, false)
		case fuseAttn && l.attnSubNorm != nil:
			rc.ternaryNormOf("attn reduce+subnorm+output", l.o, b.attnPart, actAttention, l.attnSubNorm, b.x, true, &l, false)
		default:
			rc.attentionReduce(l, T) // ends in the sub-norm and the quantization of the output
			r.Barrier()
			rc.ternary("attn output", l.o, b.x, E, T, true)
		}
		r.Barrier()
		traceCopy()
		// feed-forward
		if fuseNorm {
			rc.ternaryNorm("ffn norm+gate+up", l.gateUp, l.ffnNorm, b.gu, &l, false)
		} else {
			rc.normQuant("ffn norm+quant", b.x, l.ffnNorm, E, E, 0, T, 0, 1)
			r.Barrier()
			rc.ternary("ffn gate+up", l.gateUp, b.gu, 2*F, T, false)
		}
		r.Barrier()
		if fuseDown && l.ffnSubNorm != nil {
			rc.ternaryNormOf("ffn act+subnorm+down", l.down, b.gu, act, l.ffnSubNorm, b.x, true, &l, false)
		} else {
			rc.normQuant("ffn act+subnorm+quant", b.gu, l.ffnSubNorm, F, 2*F, 0, T, act, 1)
			r.Barrier()
			rc.ternary("ffn down", l.down, b.x, E, T, true)
		}
		r.Barrier()
		traceCopy()
	}
	if mode != outNone {
		n, off := 1, T-1
		switch mode {
		case outAll:
			n, off = T, 0
		case outRows:
			n, off = o.rows, T-o.rows
		}
		if !b.head.quantized() {
			rc.normQuant("output norm", b.x, b.outNorm, E, E, off, n, 0, 0)
		} else {
			rc.normQuant("output norm+quant", b.x, b.outNorm, E, E, off, n, 0, 1)
		}
		r.Barrier()
		rc.head(n)
		r.Barrier()
		switch mode {
		case outArgmax:
			rc.argmax(b.logits, c.Vocab, 0)
			r.Barrier()
			rc.note("token download", 4)
			r.Copy(whole(b.result), vk.Range{Buf: b.outHost, Size: 4})
		case outSample:
			rc.sample() // gpu/sample.go
		default:
			size := int64(4 * n * c.Vocab)
			rc.note("logits download", int(size))
			r.Copy(vk.Range{Buf: b.logits, Size: size}, vk.Range{Buf: b.outHost, Size: size})
		}
	}
	if trace {
		size := int64(4 * stage * T * E)
		r.Barrier()
		r.Copy(vk.Range{Buf: b.traceDev, Size: size}, vk.Range{Buf: b.traceHost, Size: size})
	}
	if rc.err == nil {
		rc.err = r.Finish()
	}
	if rc.err != nil {
		r.Release()
		return nil, fmt.Errorf("gpu: recording %s: %w", name, rc.err)
	}
	return r, nil
}
