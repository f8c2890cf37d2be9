package gpu

// Sampling on the device (nn.SamplingPicker). A sampling step records the
// forward pass with outSample: after the head, the sample kernel penalizes
// the logits of the penalty window in place and selects the candidate set
// that the sampler's plan asks for (its k best, or every token near enough
// to the best for min-p); the host reads back the candidates (at most
// sampleCap, ~16 KiB instead of the vocabulary's logits) and
// nn.Sampler.SampleCandidates finishes with the same code Sample runs, so
// the token is the one Sample would draw from these logits.
//
// The host falls back to the logits, sampled by nn.Sampler.Sample, when
//   - the plan needs them (top-p without top-k, or no truncation: the kept
//     set and the draw depend on the float64 mass of the whole vocabulary),
//   - top-k exceeds sampleCap or the window has more than samplePenCap
//     distinct ids (the Forward logits path),
//   - more than sampleCap tokens pass the min-p threshold, or a penalized
//     value differs from nn.Sampler.Penalize's in any bit: the logits, still
//     on the device, are downloaded and the window's raw values put back.
//     The kernel divides by the repetition penalty in integers, correctly
//     rounded on any device (Vulkan's float division may be 2.5 ulp off, as
//     NVIDIA's is), so this happens only on a device that flushes subnormal
//     floats, for a subnormal logit or result; the check stays as the
//     safety net.

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/spirv"
)

const (
	sampleCap    = 2048 // most candidates read back; also the largest top-k on the device
	samplePenCap = 1024 // most distinct ids of the penalty window on the device
	wgSample     = 256
	// Layout of the sample kernel's buffers, in 32-bit words (see
	// shaders/sample.comp).
	planHead   = 8 // mode, k, nPen, pad, repeat, freq, presence, lnMinP
	resHead    = 4 // count, 0, 0, 0
	planWords  = planHead + 2*samplePenCap
	resWords   = resHead + 2*samplePenCap + 2*sampleCap
	modeTopK   = 1
	modeMinP   = 2
	resPen     = resHead + samplePenCap // penalized window values
	resIDs     = resHead + 2*samplePenCap
	resValues  = resIDs + sampleCap
	planCounts = planHead + samplePenCap
)

// sampleBufs are the sample kernel's buffers, made by the first
// ForwardSample.
type sampleBufs struct {
	planHost, plan *vk.Buffer // the plan and window, written by the host each step
	res, resHost   *vk.Buffer // what the kernel found
	part           *vk.Buffer // the chunks' candidates and maxima (a split kernel)
	ids            []int32    // the candidates, copied out of resHost
	vals           []float32
	logits         []float32 // [vocab] the host's copy for the fallbacks
	fallbacks      int       // steps that sampled the logits on the host
}

func (b *Backend) sampleBuffers() (*sampleBufs, error) {
	if b.smp != nil {
		return b.smp, nil
	}
	sb := &sampleBufs{ids: make([]int32, sampleCap), vals: make([]float32, sampleCap), logits: make([]float32, b.c.Vocab)}
	var err error
	for _, s := range []struct {
		dst   **vk.Buffer
		name  string
		words int
		host  bool
	}{
		{&sb.planHost, "sampling plan (host)", planWords, true},
		{&sb.plan, "sampling plan", planWords, false},
		{&sb.res, "sampling candidates", resWords, false},
		{&sb.resHost, "sampling candidates (host)", resWords, true},
		{&sb.part, "sampling partials", samplePartWords(b.c.Vocab), false},
	} {
		if *s.dst, err = b.dev.NewBuffer(s.name, int64(4*s.words), s.host); err != nil {
			return nil, err
		}
	}
	b.smp = sb
	return sb, nil
}

// ForwardSample is Forward returning the token s.Sample would draw from
// the last token's logits with this history (see nn.SamplingPicker).
func (b *Backend) ForwardSample(tokens []int32, pos int, s *nn.Sampler, history []int32) (int32, error) {
	switch {
	case len(tokens) == 0:
		return -1, errors.New("gpu: ForwardSample with no tokens")
	case s == nil:
		return -1, errors.New("gpu: ForwardSample with no sampler")
	case b.dev == nil:
		return -1, errors.New("gpu: backend is closed")
	}
	sb, err := b.sampleBuffers()
	if err != nil {
		return -1, err
	}
	if !b.planSample(s, history) {
		sb.fallbacks++
		if _, err := b.forward(tokens, pos, sb.logits, outNone, nil); err != nil {
			return -1, err
		}
		return s.Sample(sb.logits, history)
	}
	if _, err := b.forward(tokens, pos, nil, outSample, nil); err != nil {
		return -1, err
	}
	return b.finishSample(s, history)
}

// planSample writes the sampler's plan and penalty window for the sample
// kernel, or reports false when the step must sample the logits instead.
func (b *Backend) planSample(s *nn.Sampler, history []int32) bool {
	v := b.c.Vocab
	p := s.Plan(v)
	mode := uint32(modeTopK)
	switch {
	case p.Rule == nn.NeedLogits, p.Rule == nn.TopKCandidates && p.K > sampleCap:
		return false
	case p.Rule == nn.MinPCandidates:
		mode = modeMinP
	}
	ids, counts := s.PenaltyWindow(history, v)
	if len(ids) > samplePenCap {
		return false
	}
	// ln(min_p) rounded down, so the kernel's threshold stays below the
	// sampler's.
	lnMinP := float32(p.LnMinP)
	if float64(lnMinP) > p.LnMinP {
		lnMinP = math.Nextafter32(lnMinP, float32(math.Inf(-1)))
	}
	w := u32View(b.smp.planHost.Mapped(), planWords)
	copy(w, []uint32{mode, uint32(p.K), uint32(len(ids)), 0,
		math.Float32bits(p.Repeat), math.Float32bits(p.Frequency), math.Float32bits(p.Presence), math.Float32bits(lnMinP)})
	for j, id := range ids {
		w[planHead+j], w[planCounts+j] = uint32(id), uint32(counts[j])
	}
	return true
}

// finishSample reads what the sample kernel found and finishes the step on
// the host (see the file comment for the fallbacks).
func (b *Backend) finishSample(s *nn.Sampler, history []int32) (int32, error) {
	sb, v := b.smp, b.c.Vocab
	plan := u32View(sb.planHost.Mapped(), planWords)
	res := u32View(sb.resHost.Mapped(), resWords)
	nPen, count := int(plan[2]), int(res[0])
	exact := count <= sampleCap
	for j := range nPen {
		raw := math.Float32frombits(res[resHead+j])
		want := s.Penalize(raw, int32(plan[planCounts+j]))
		got := math.Float32frombits(res[resPen+j])
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			exact = false
		}
	}
	if !exact {
		sb.fallbacks++
		buf := make([]byte, 4*v)
		if err := b.dev.Download(b.logits, 0, buf); err != nil {
			return -1, fmt.Errorf("gpu: reading the logits back for the host sampler: %w", err)
		}
		copy(sb.logits, f32View(buf, v))
		for j := range nPen {
			sb.logits[plan[planHead+j]] = math.Float32frombits(res[resHead+j])
		}
		return s.Sample(sb.logits, history)
	}
	for i := range count {
		sb.ids[i] = int32(res[resIDs+i])
		sb.vals[i] = math.Float32frombits(res[resValues+i])
	}
	return s.SampleCandidates(v, sb.ids[:count], sb.vals[:count])
}

// samplePartWords is the size of the sample kernel's partials for n logits
// split into chunks as argmaxPlan splits them on a GPU: a count and a key
// per chunk, and room for each chunk's every token.
func samplePartWords(n int) int {
	chunk, groups := argmaxPlan(n, false)
	return 2*groups + 2*groups*chunk
}

// sample records the sample kernel on the last token's logits and the copy
// of its result to the host (the outSample tail of record): on a GPU in two
// dispatches over chunks of the vocabulary (as argmax), on a CPU device in
// one workgroup.
func (rc *recorder) sample() {
	b := rc.b
	sb := b.smp
	if sb == nil {
		if rc.err == nil {
			rc.err = errors.New("gpu: sampling buffers not made (ForwardSample makes them)")
		}
		return
	}
	r := rc.r
	v := b.c.Vocab
	rc.note("sampling plan upload", int(sb.plan.Size()))
	r.Copy(whole(sb.planHost), whole(sb.plan))
	r.Barrier()
	chunk, groups := argmaxPlan(v, b.onCPU() && !b.sampleSplit)
	push := samplePush{N: uint32(v), Cap: sampleCap, PenCap: samplePenCap, Chunk: uint32(chunk), Groups: uint32(groups)}
	bufs := []vk.Range{{Buf: b.logits, Size: int64(4 * v)}, whole(sb.plan), whole(sb.res), whole(sb.part)}
	wg := b.workgroup(wgSample)
	if groups == 1 {
		rc.note("sample", 4*v+int(sb.plan.Size())+int(sb.res.Size()))
		rc.dispatch(spirv.Sample, []uint32{wg, 0}, bufs, push, 1, 1)
	} else {
		// The chunks read the logits once; the merge reads what they kept
		// (top-k) or their chunks again (min-p: at most the logits).
		rc.note("sample chunks", 4*v+int(sb.plan.Size())+8*groups)
		rc.dispatch(spirv.Sample, []uint32{wg, 1}, bufs, push, uint32(groups), 1)
		r.Barrier()
		rc.note("sample merge", 8*groups+int(sb.res.Size()))
		rc.dispatch(spirv.Sample, []uint32{wg, 2}, bufs, push, uint32(groups), 1)
	}
	r.Barrier()
	rc.note("candidates download", int(sb.res.Size()))
	r.Copy(whole(sb.res), whole(sb.resHost))
}

// u32View is the first n uint32 of mapped device memory.
func u32View(b []byte, n int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

var _ nn.SamplingPicker = (*Backend)(nil)
