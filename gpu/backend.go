package gpu

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/spirv"
)

// Options configure the Vulkan backend.
type Options struct {
	Device  int  // index into Devices(); < 0: the best (discrete, integrated, virtual, then CPU)
	Context int  // positions in the K/V cache per slot; 0: the model's context length
	HeadQ8  bool // int8 head rows with per-row scales instead of float16
	// Head is how the output head is held (see nn.HeadType; the zero value
	// is nn.HeadStored, the file's type). nn.HeadQ8 is HeadQ8; Q4_0 (stored
	// or converted) is held in its own 4.5 bits (head_nibbles), Q6_K in
	// 6.625 (head_six), Q8_0 as int8 codes with group scales (head_blocks),
	// and an embedding stored so likewise (embed_nibbles, embed_six,
	// embed_blocks).
	Head       nn.HeadType
	Batch      int  // most tokens per submit; 0: DefaultBatch
	Validation bool // the Khronos validation layer on (see ValidationMessages)
	// Plain never uses the integer dot product instruction, even where the
	// device has it (to test the fallback kernels).
	Plain bool
	// NoSubgroups never uses subgroup operations, even where the device has
	// them (to test the shared-memory reductions).
	NoSubgroups bool
	// Fusion says whether a decode step runs its input norms, RoPE and the
	// K/V cache write inside the QKV and gate/up products (ternary_norm,
	// 7 dispatches a layer) or as dispatches of their own, as a prompt's
	// passes do (10). The zero value, FuseAuto, fuses on a GPU.
	Fusion Fusion
	// MaxShardBytes caps the bytes of one weight buffer below the device's
	// limits, to exercise sharding on small models; 0: the device's limits.
	MaxShardBytes int64
	// Window, when set, readies the device for drawing into a window too
	// (bitvk view), so that the model and the window share one device.
	Window *Window
	// Slots is the number of sequences the K/V cache holds (see
	// nn.MultiBackend); 0: one. Each layer's K (and V) cache is Slots ×
	// Context positions in one buffer, which must fit the device's storage
	// buffer range.
	Slots int
	// Tune shapes a decode step's kernels (see Tuning); the zero value:
	// BITVK_VK_TUNE when it is set (even empty: the defaults), else the
	// entry of TuneFile for this device and model, else the defaults.
	Tune Tuning
	// TuneFile is a file of tunings saved by bitvk tune (see TuneEntry);
	// "": none.
	TuneFile string
}

// Fusion is Options.Fusion.
type Fusion int

const (
	// FuseAuto fuses except on a CPU device (lavapipe), where the work each
	// workgroup repeats runs on the same few cores and a decode step takes
	// twice as long fused.
	FuseAuto Fusion = iota
	FuseOn          // fuse wherever the device's limits allow it
	FuseOff         // never fuse
)

// Window is what drawing into a window asks of the backend's Vulkan setup:
// the instance is created with Extensions on, Surface then makes the
// window's surface on it, and the device is opened with a queue that both
// computes and presents to that surface (see Backend.Vulkan). With Device
// < 0 the best device that can present is taken.
type Window struct {
	Extensions []string                                // instance extensions for window surfaces (GLFW lists them)
	Surface    func(*vk.Instance) (*vk.Surface, error) // the window's surface on the backend's instance; Close releases it
}

// DefaultBatch is the most tokens one submit evaluates.
const DefaultBatch = 64

// Devices lists the Vulkan devices, or says why there are none.
func Devices() ([]vk.DeviceInfo, error) {
	inst, err := vk.Shared(vk.InstanceOptions{})
	if err != nil {
		return nil, err
	}
	devs := inst.Devices()
	if len(devs) == 0 {
		return nil, errors.New("vulkan: the loader found no device (is a driver installed? lavapipe: mesa-vulkan-drivers)")
	}
	return devs, nil
}

// layerBufs is one block's weights on the device.
type layerBufs struct {
	attnNorm, attnSubNorm, ffnNorm, ffnSubNorm *vk.Buffer // sub-norms nil when absent
	qkv, o, gateUp, down                       *ternaryMatrix
	kc, vc                                     *vk.Buffer // [slots·ctx][kvHeads][headDim] float16
}

// Backend runs a model on a Vulkan device. It is not safe for concurrent use.
type Backend struct {
	c         *nn.Config
	o         Options
	inst      *vk.Instance // the process's, shared (vk.Shared): never closed
	msgs      *vk.Listener // the validation messages since New (ValidationMessages)
	surface   *vk.Surface  // the window's surface (Options.Window), released by Close
	dev       *vk.Device
	info      vk.DeviceInfo
	dot       bool   // integer dot product kernels
	subgroups bool   // the matrix products' and norms' subgroup twins (reductions)
	tune      Tuning // a decode step's kernel shapes (resolved: no zero fields)
	tuneFile  string // where tune came from, when from a tuning file
	ctx       int    // positions per slot
	slots     int    // sequences in the K/V cache
	batch     int
	seqOff    int64 // where each token's (position, first cache row) starts in the input buffers
	maxShard  int64

	embd    *floatMatrix
	head    *floatMatrix // float16, or int8 with row scales
	outNorm *vk.Buffer
	layers  []layerBufs
	rope    *vk.Buffer // [ctx][ropeDim/2] (cos, sin)
	attn    attnPlan   // how attention splits its work (attention.go)
	fuse    fusion     // what a decode step fuses (graph.go)
	// argmaxSplit runs argmax in several workgroups on a CPU device too
	// (tests: the split path is what GPUs run).
	argmaxSplit bool
	// sampleSplit runs the sample kernel in chunks on a CPU device too
	// (tests).
	sampleSplit bool

	// scratch, each for batch tokens
	x, xn, q, s, qkv, att, gu, attnPart, logits, result *vk.Buffer
	argPart                                             *vk.Buffer // argmax's partials (graph.go)
	warmSink                                            *vk.Buffer // Tuning.Warm's sink (warm.go); nil without
	attnCount                                           *vk.Buffer // attention.comp's COMBINE counts: [layers][heads] uint, 0 between passes
	inHost, inDev, outHost                              *vk.Buffer
	traceDev, traceHost                                 *vk.Buffer  // made by the first ForwardTrace
	smp                                                 *sampleBufs // made by the first ForwardSample

	kernels map[kernelKey]*vk.Kernel
	recs    map[recKey]*vk.Recording
	recList []recKey // oldest first
}

// The input buffers (inHost, inDev) hold a pass's token ids [batch]uint32
// at offset 0 and, from seqOff (the next multiple of 256 bytes, enough for
// any storage buffer offset alignment), each token's position and the first
// cache row of its slot (slot·ctx), [batch](uint32, uint32): rope_kv and
// attention read them (the seq buffer of shaders/attention.comp).
const inputAlign = 256

// New uploads the model to a Vulkan device. The weights' file pages are
// released as they are uploaded.
func New(c *nn.Config, w *nn.Weights, o Options) (_ *Backend, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := w.Check(c); err != nil {
		return nil, err
	}
	var exts []string
	if o.Window != nil {
		exts = o.Window.Extensions
	}
	// One instance per process and options, whatever the number of backends
	// opened (see vk.Shared); the listener keeps this backend's messages
	// apart from those of backends before it.
	inst, err := vk.Shared(vk.InstanceOptions{Validation: o.Validation, SyncValidation: o.Validation, Extensions: exts})
	if err != nil {
		return nil, err
	}
	b := &Backend{c: c, o: o, inst: inst, msgs: inst.Listen(), kernels: map[kernelKey]*vk.Kernel{}, recs: map[recKey]*vk.Recording{}}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	devs := inst.Devices()
	idx := o.Device
	switch {
	case len(devs) == 0:
		return nil, errors.New("vulkan: the loader found no device (is a driver installed? lavapipe: mesa-vulkan-drivers)")
	case idx < 0:
		idx = vk.Pick(devs)
	case idx >= len(devs):
		return nil, fmt.Errorf("vulkan: no device %d (there are %d; see bitvk devices)", idx, len(devs))
	}
	var open vk.OpenOptions
	if o.Window != nil {
		if open.Surface, err = o.Window.Surface(inst); err != nil {
			return nil, err
		}
		b.surface = open.Surface
		if idx, err = presentable(inst, devs, idx, o.Device < 0, open.Surface); err != nil {
			return nil, err
		}
	}
	if b.dev, err = inst.OpenWith(idx, open); err != nil {
		return nil, err
	}
	b.info = b.dev.Info()
	b.dot = b.dev.Enabled().IntegerDot && !o.Plain
	b.subgroups = !o.NoSubgroups && subgroupReductions(b.info)
	tune := o.Tune
	if _, set := os.LookupEnv(TuneEnv); tune == (Tuning{}) && !set && o.TuneFile != "" {
		t, ok, err := b.savedTuning(o.TuneFile)
		if err != nil {
			return nil, err
		}
		if ok {
			tune, b.tuneFile = t, o.TuneFile
		}
	}
	if b.tune, err = resolveTuning(tune, b.info.MaxComputeWorkGroupInvocations, b.info.MaxComputeSharedMemorySize); err != nil {
		if b.tuneFile != "" {
			err = fmt.Errorf("tuning file %s: %w (run bitvk tune again)", b.tuneFile, err)
		}
		return nil, err
	}
	if b.tune.TiledCoop == 2 {
		if err := coopReady(b.dev.Enabled(), b.info); err != nil {
			return nil, fmt.Errorf("gpu: tuning mmc=2: %w", err)
		}
	}
	b.ctx = c.Context
	if o.Context > 0 {
		b.ctx = min(o.Context, c.Context)
	}
	b.slots = max(o.Slots, 1)
	b.maxShard = int64(min(b.info.MaxStorageBufferRange, b.info.MaxMemoryAllocationSize))
	if o.MaxShardBytes > 0 {
		b.maxShard = min(b.maxShard, o.MaxShardBytes)
	}
	b.maxShard &^= 255
	if err := b.checkShape(); err != nil {
		return nil, err
	}
	if err := b.checkCache(); err != nil {
		return nil, err
	}
	b.batch = o.Batch
	if b.batch <= 0 {
		b.batch = DefaultBatch
	}
	if b.attn, err = planAttention(c, b.info, b.ctx, b.workgroup(wgAttn), b.tune, !o.NoSubgroups); err != nil {
		return nil, err
	}
	// The attention partials and the logits of a batch are each bound whole.
	rangeLimit := int64(b.info.MaxStorageBufferRange)
	b.batch = int(min(int64(b.batch), rangeLimit/b.attn.partialBytes(c, 1), rangeLimit/int64(4*c.Vocab)))
	if b.batch < 1 {
		return nil, fmt.Errorf("gpu: a context of %d (or a vocabulary of %d) does not fit the device's storage buffer range of %d bytes; lower -c", b.ctx, c.Vocab, rangeLimit)
	}
	if err := b.uploadWeights(w); err != nil {
		return nil, err
	}
	if err := b.makeScratch(); err != nil {
		return nil, err
	}
	b.fuse = b.planFusion()
	if b.tune.TiledCoop == 2 {
		if err := b.checkTiledSums(); err != nil {
			return nil, fmt.Errorf("gpu: tuning mmc=2: ternary_mm_coop gives other sums than the exact ones on %s (%w); run without mmc=2", b.info.Name, err)
		}
	}
	return b, nil
}

// subgroupReductions says whether the device runs the subgroup twins of the
// matrix products and norms: subgroup arithmetic and votes in compute
// shaders, and subgroups no wider than a row group of the products (wgMat
// invocations), so that each holds a whole row group or part of one.
func subgroupReductions(info vk.DeviceInfo) bool {
	for _, op := range []string{"basic", "vote", "arithmetic"} {
		if !slices.Contains(info.SubgroupOps, op) {
			return false
		}
	}
	return info.SubgroupSize > 0 && info.SubgroupSize <= wgMat
}

// presentable returns idx when that device can present to s, else, when
// any other may be taken, the best one that can; the error says why idx
// cannot.
func presentable(inst *vk.Instance, devs []vk.DeviceInfo, idx int, others bool, s *vk.Surface) (int, error) {
	err := inst.CanPresent(idx, s)
	if err == nil || !others {
		return idx, err
	}
	var ok []vk.DeviceInfo
	for _, d := range devs {
		if inst.CanPresent(d.Index, s) == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return idx, err
	}
	return ok[vk.Pick(ok)].Index, nil
}

// checkShape rejects models the kernels do not cover.
func (b *Backend) checkShape() error {
	c := b.c
	switch {
	case c.HeadDim%2 != 0 || c.HeadDim > 256:
		return fmt.Errorf("gpu: head dimension %d is not an even number up to 256", c.HeadDim)
	case c.RopeDim%2 != 0 || c.RopeDim > c.HeadDim:
		return fmt.Errorf("gpu: RoPE dimension %d is not even or exceeds the head dimension %d", c.RopeDim, c.HeadDim)
	case c.Heads*c.HeadDim != c.Embd:
		return fmt.Errorf("gpu: %d heads of %d do not make the width %d", c.Heads, c.HeadDim, c.Embd)
	case c.Embd%128 != 0 || c.FFN%128 != 0:
		return fmt.Errorf("gpu: widths %d and %d must be multiples of 128", c.Embd, c.FFN)
	}
	return nil
}

// checkCache refuses a K/V cache the device cannot hold, before any weight
// is uploaded: a model's context_length (the default context) can be any
// 31-bit number. One layer's K (or V) cache is bound whole, so it must fit
// the storage buffer range, and all of them the device's largest heap.
func (b *Backend) checkCache() error {
	layer := 2 * float64(b.slots) * float64(b.ctx) * float64(b.c.KVDim()) // bytes of one layer's K cache
	slots := ""
	if b.slots > 1 {
		slots = fmt.Sprintf(" in each of %d slots", b.slots)
	}
	if r := b.info.MaxStorageBufferRange; layer > float64(r) {
		return fmt.Errorf("gpu: a context of %d positions%s makes one layer's K cache %s, more than the device binds in one buffer (%s); lower -c or --parallel (the model's context_length is %d)",
			b.ctx, slots, nn.SizeText(layer), nn.SizeText(float64(r)), b.c.Context)
	}
	var heap uint64
	for _, h := range b.info.Heaps {
		if h.DeviceLocal {
			heap = max(heap, h.Size)
		}
	}
	if all := 2 * float64(b.c.Layers) * layer; heap > 0 && all > float64(heap) {
		return fmt.Errorf("gpu: a context of %d positions%s needs a K/V cache of %s, more than the device's %s of memory; lower -c or --parallel (the model's context_length is %d)",
			b.ctx, slots, nn.SizeText(all), nn.SizeText(float64(heap)), b.c.Context)
	}
	return nil
}

func (b *Backend) uploadWeights(w *nn.Weights) error {
	c := b.c
	var err error
	// The embedding in its stored type: a block type (Q8_0, Q6_K, Q4_0) as
	// codes and group scales, exactly the file's values; anything else as
	// float16 (F32 and BF16 rows rounded at load).
	et := nn.HeadStored.For(w.TokenEmbd.Type)
	if b.embd, err = b.newHead(w.TokenEmbd, et); err != nil {
		return err
	}
	ht := b.o.Head.For(w.Output.Type)
	if b.o.HeadQ8 {
		ht = nn.HeadQ8
	}
	switch {
	case ht == nn.HeadQ8:
		b.head, err = b.newQ8(w.Output)
	case w.TiedOutput && ht == et:
		b.head = b.embd // one copy serves both
	default:
		b.head, err = b.newHead(w.Output, ht) // as stored, or converted to a block type
	}
	if err != nil {
		return err
	}
	w.Release(w.TokenEmbd)
	w.Release(w.Output)
	if b.outNorm, err = b.vector(w.OutputNorm); err != nil {
		return err
	}
	kvBytes := int64(b.slots) * int64(b.ctx) * int64(c.KVDim()) * 2 // within the storage buffer range (checkCache)
	for li, L := range w.Layers {
		var l layerBufs
		for _, p := range []struct {
			dst **vk.Buffer
			t   nn.Tensor
		}{{&l.attnNorm, L.AttnNorm}, {&l.ffnNorm, L.FFNNorm}, {&l.attnSubNorm, L.AttnSubNorm}, {&l.ffnSubNorm, L.FFNSubNorm}} {
			if p.t.Data == nil {
				continue
			}
			if *p.dst, err = b.vector(p.t); err != nil {
				return err
			}
		}
		if l.qkv, err = b.newTernary(w, L.AttnQ, L.AttnK, L.AttnV); err != nil {
			return err
		}
		if l.o, err = b.newTernary(w, L.AttnOutput); err != nil {
			return err
		}
		if l.gateUp, err = b.newTernary(w, L.FFNGate, L.FFNUp); err != nil {
			return err
		}
		if l.down, err = b.newTernary(w, L.FFNDown); err != nil {
			return err
		}
		if l.kc, err = b.dev.NewBuffer(fmt.Sprintf("K cache of layer %d", li), kvBytes, false); err != nil {
			return err
		}
		if l.vc, err = b.dev.NewBuffer(fmt.Sprintf("V cache of layer %d", li), kvBytes, false); err != nil {
			return err
		}
		b.layers = append(b.layers, l)
	}
	b.rope, err = b.floats("RoPE table", ropeTable(b.ctx, c.RopeDim, c.RopeBase))
	return err
}

// ropeTable is (cos θ, sin θ) for θ = p·base^(−2i/dim), [ctx][dim/2],
// computed in float64 as nn/ref does.
func ropeTable(ctx, dim int, base float32) []float32 {
	half := dim / 2
	t := make([]float32, 2*ctx*half)
	for i := range half {
		freq := math.Pow(float64(base), -2*float64(i)/float64(dim))
		for p := range ctx {
			s, c := math.Sincos(float64(p) * freq)
			t[2*(p*half+i)], t[2*(p*half+i)+1] = float32(c), float32(s)
		}
	}
	return t
}

func (b *Backend) makeScratch() error {
	c, B := b.c, int64(b.batch)
	wide := int64(max(c.Embd, c.FFN))
	b.seqOff = (4*B + inputAlign - 1) / inputAlign * inputAlign
	counts := int64(4 * max(1, len(b.layers)*c.Heads)) // attention.comp's COMBINE: a counter per layer and head group at most
	for _, s := range []struct {
		dst  **vk.Buffer
		name string
		size int64
		host bool
	}{
		{&b.x, "hidden state", B * int64(c.Embd) * 4, false},
		{&b.xn, "normed state", B * int64(c.Embd) * 4, false},
		{&b.q, "int8 activations", B * wide, false},
		{&b.s, "activation scales", B * 4, false},
		{&b.qkv, "q/k/v", B * int64(c.Embd+2*c.KVDim()) * 4, false},
		{&b.att, "attention output", B * int64(c.Embd) * 4, false},
		{&b.gu, "gate/up", B * int64(2*c.FFN) * 4, false},
		{&b.attnPart, "attention partials", b.attn.partialBytes(c, b.batch), false},
		{&b.logits, "logits", B * int64(c.Vocab) * 4, false},
		{&b.result, "argmax result", 4, false},
		{&b.argPart, "argmax partials", 8 * argmaxMaxGroups, false},
		{&b.inHost, "input (host)", b.seqOff + 8*B, true},
		{&b.inDev, "input", b.seqOff + 8*B, false},
		{&b.outHost, "logits (host)", B * int64(c.Vocab) * 4, true},
		{&b.attnCount, "attention counts", counts, false},
	} {
		var err error
		if *s.dst, err = b.dev.NewBuffer(s.name, s.size, s.host); err != nil {
			return err
		}
	}
	if err := b.dev.Fill(b.attnCount, 0, counts, 0); err != nil {
		return err
	}
	if b.tune.Warm == 2 {
		var err error
		if b.warmSink, err = b.dev.NewBuffer("l2 warm sink", int64(warmSlot*max(1, b.warmSlots())), false); err != nil {
			return err
		}
	}
	return nil
}

// HeadBytes is what one pass over the output head reads: its weights in
// the form the device holds them (float16; int8 and a scale per row for
// q8; a Q4_0 head in its 4.5 bits a value, a Q6_K one in 6.625; Q8_0 as
// int8 codes and float32 group scales).
func (b *Backend) HeadBytes() int64 { return int64(b.head.weightBytes(b.head.rows)) }

// Name says which device runs the model.
func (b *Backend) Name() string {
	return fmt.Sprintf("vulkan (%s, %s kernels)", b.info.Name, b.Kernels())
}

// Fused reports whether a decode step runs its input norms inside the
// products (Options.Fusion as this device and model resolved it; RoPE and
// the K/V write join them where Q, K and V are one shard).
func (b *Backend) Fused() bool { return b.fuse.norm }

// Tuning is the kernel shapes in use (Options.Tune, BITVK_VK_TUNE or a
// tuning file's entry over the defaults, within the device's limits).
func (b *Backend) Tuning() Tuning { return b.tune }

// TuneFile is the tuning file whose entry shapes the kernels, or "".
func (b *Backend) TuneFile() string { return b.tuneFile }

// Kernels names the kernel set in use: dot4 (the integer dot product
// instruction) or int32 (plain integer math).
func (b *Backend) Kernels() string {
	if b.dot {
		return "dot4"
	}
	return "int32"
}

// Device describes the device in use.
func (b *Backend) Device() vk.DeviceInfo { return b.info }

// Vulkan is the open device the model runs on, for drawing a window on it
// (Options.Window). Its buffers and recordings other than the backend's own
// are the caller's.
func (b *Backend) Vulkan() *vk.Device { return b.dev }

// Context is the number of positions the K/V cache holds per slot.
func (b *Backend) Context() int { return b.ctx }

// Slots is the number of sequences the K/V cache holds.
func (b *Backend) Slots() int { return b.slots }

// ValidationMessages returns (and forgets) what the validation layer said
// since New, also after Close (until then: what destroying the device
// brought, such as objects left undestroyed). While other backends work at
// the same time in the process, their messages may show up here too.
func (b *Backend) ValidationMessages() []string { return b.msgs.Messages() }

// Close releases everything on the device, in reverse order of creation,
// then the window's surface. The instance stays, for the next backend.
func (b *Backend) Close() error {
	if b.dev != nil {
		b.dev.Close() // recordings, kernels, buffers, then the device
		b.dev = nil
	}
	if b.surface != nil {
		b.surface.Release()
		b.surface = nil
	}
	b.msgs.Close()
	b.inst = nil
	return nil
}

// logits modes of a recording
const (
	outNone   = iota // no head
	outLast          // the last token's logits
	outAll           // every token's logits
	outRows          // the logits of the last recKey.rows tokens (ForwardMulti)
	outArgmax        // the last token's argmax
	outSample        // the last token's sampling candidates (gpu/sample.go)
)

// Forward evaluates tokens at positions pos… (see nn.Backend).
func (b *Backend) Forward(tokens []int32, pos int, logits []float32) error {
	_, err := b.forward(tokens, pos, logits, outNone, nil)
	return err
}

// ForwardArgmax is Forward returning the greedy next token (see nn.Picker).
func (b *Backend) ForwardArgmax(tokens []int32, pos int) (int32, error) {
	if len(tokens) == 0 {
		return -1, errors.New("gpu: ForwardArgmax with no tokens")
	}
	return b.forward(tokens, pos, nil, outArgmax, nil)
}

// ForwardTrace is Forward reporting the residual stream after each block
// (see nn.Tracer).
func (b *Backend) ForwardTrace(tokens []int32, pos int, logits []float32, fn func(int, nn.Stage, []float32)) error {
	_, err := b.forward(tokens, pos, logits, outNone, fn)
	return err
}

// forward evaluates tokens; pick (outArgmax or outSample; outNone
// otherwise) is what the last chunk ends with instead of the logits.
func (b *Backend) forward(tokens []int32, pos int, logits []float32, pick int, trace func(int, nn.Stage, []float32)) (int32, error) {
	if b.dev == nil {
		return -1, errors.New("gpu: backend is closed")
	}
	v := b.c.Vocab
	switch {
	case len(tokens) == 0:
		return -1, nil
	case pos < 0 || pos+len(tokens) > b.ctx:
		return -1, fmt.Errorf("gpu: positions %d..%d are outside the context of %d", pos, pos+len(tokens)-1, b.ctx)
	case len(logits) != 0 && len(logits) != v && len(logits) != len(tokens)*v:
		return -1, fmt.Errorf("gpu: logits buffer of %d for %d tokens and a vocabulary of %d", len(logits), len(tokens), v)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= v {
			return -1, fmt.Errorf("gpu: token %d is outside the vocabulary of %d", t, v)
		}
	}
	id := int32(-1)
	for start := 0; start < len(tokens); start += b.batch {
		chunk := tokens[start:min(start+b.batch, len(tokens))]
		T := len(chunk)
		last := start+T == len(tokens)
		mode := outNone
		switch {
		case len(logits) == len(tokens)*v:
			mode = outAll
		case pick != outNone && last:
			mode = pick
		case len(logits) == v && last:
			mode = outLast
		}
		for i, t := range chunk {
			b.putInput(i, t, pos+start+i, 0)
		}
		var rec *vk.Recording
		var err error
		if trace != nil {
			if rec, err = b.traceRecording(T, mode); err != nil {
				return -1, err
			}
			defer rec.Release()
		} else if rec, err = b.recording(recKey{T: T, mode: mode}); err != nil {
			return -1, err
		}
		if err := b.dev.Submit(rec); err != nil {
			return -1, err
		}
		out := b.outHost.Mapped()
		switch mode {
		case outAll:
			copy(logits[start*v:(start+T)*v], f32View(out, T*v))
		case outLast:
			copy(logits, f32View(out, v))
		case outArgmax:
			id = int32(getU32(out))
		}
		if trace != nil {
			tr := f32View(b.traceHost.Mapped(), 2*len(b.layers)*T*b.c.Embd)
			n := T * b.c.Embd
			for l := range b.layers {
				trace(l, nn.StageAttention, tr[(2*l)*n:(2*l+1)*n])
				trace(l, nn.StageFFN, tr[(2*l+1)*n:(2*l+2)*n])
			}
		}
	}
	return id, nil
}

// putInput writes token i of a pass into the host input buffer: its id,
// its position and the first cache row of its slot.
func (b *Backend) putInput(i int, token int32, pos, slot int) {
	in := b.inHost.Mapped()
	putU32(in[4*i:], uint32(token))
	putU32(in[b.seqOff+int64(8*i):], uint32(pos))
	putU32(in[b.seqOff+int64(8*i+4):], uint32(slot*b.ctx))
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
func getU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// f32View is the first n float32 of mapped device memory (little-endian,
// as every Vulkan host is).
func f32View(b []byte, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

var _ nn.Tracer = (*Backend)(nil)
var _ nn.Picker = (*Backend)(nil)

// kernelKey is one pipeline: a kernel with its specialization constants.
type kernelKey struct {
	k    spirv.Kernel
	n    int // constants given (the others keep the shader's defaults)
	spec [maxSpec]uint32
}

// maxSpec is the most specialization constants a kernel may take (a key
// holds them all: two pipelines must never share one).
const maxSpec = 16
