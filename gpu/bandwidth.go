package gpu

import (
	"errors"
	"time"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/spirv"
)

// MeasureBandwidth streams a device buffer of size bytes (capped by the
// device's allocation and binding limits) through the read_bandwidth kernel
// and returns the bytes read per second, the best of rounds: the memory
// roofline a decode step, which reads every weight once, is held to. The
// time comes from GPU timestamps around the dispatch where the compute
// queue has them, else from the host's clock around the submit (which then
// includes the submit's own overhead).
func (b *Backend) MeasureBandwidth(size int64, rounds int) (float64, error) {
	if b.dev == nil {
		return 0, errors.New("gpu: backend is closed")
	}
	size = min(size, int64(b.info.MaxMemoryAllocationSize), int64(b.info.MaxStorageBufferRange)) &^ 4095
	src, err := b.dev.NewBuffer("bandwidth source", size, false)
	if err != nil {
		return 0, err
	}
	defer src.Release()
	sink, err := b.dev.NewBuffer("bandwidth sink", 16, false)
	if err != nil {
		return 0, err
	}
	defer sink.Release()
	if err := b.dev.Fill(src, 0, size, 0x3c003c00); err != nil {
		return 0, err
	}
	const wg = 256
	words := size / 16
	groups := min(int64(b.info.MaxComputeWorkGroupCount[0]), max(1, words/(wg*16)))
	k, err := b.kernel(spirv.ReadBandwidth, b.workgroup(wg))
	if err != nil {
		return 0, err
	}
	best, err := b.timeDispatch("bandwidth read", k, []vk.Range{whole(src), whole(sink)}, pushBytes(readPush{N: uint32(words), Never: 0xFFFFFFFF}), groups, rounds)
	if err != nil {
		return 0, err
	}
	return float64(size) / best.Seconds(), nil
}

// MeasureInt8Peak returns the device's int8 multiply-adds per second
// through the kernel set's dot4 (the integer dot product instruction, or
// plain int32 math where the backend does not use it: Kernels), the best of
// rounds: the peak a prefill's ternary products are held to. The int8_peak
// kernel runs independent chains of dependent dot4 steps; the dispatch is
// doubled until it takes at least 2 ms, so that a large GPU is filled and a
// small device (lavapipe) is not kept long. Timed like MeasureBandwidth.
func (b *Backend) MeasureInt8Peak(rounds int) (float64, error) {
	if b.dev == nil {
		return 0, errors.New("gpu: backend is closed")
	}
	sink, err := b.dev.NewBuffer("int8 peak sink", 16, false)
	if err != nil {
		return 0, err
	}
	defer sink.Release()
	p := peakPush{Iters: peakIters, B: 0x7F01FF81, Seed: 0x2545F491, Never: 0x6A09E667}
	maxGroups := int64(b.info.MaxComputeWorkGroupCount[0])
	groups := int64(16)
	for {
		d, err := b.int8PeakRun(sink, groups, p, 1)
		if err != nil {
			return 0, err
		}
		if d >= 2*time.Millisecond || 2*groups > maxGroups {
			break
		}
		groups *= 2
	}
	d, err := b.int8PeakRun(sink, groups, p, max(rounds, 1))
	if err != nil {
		return 0, err
	}
	return float64(groups*int64(b.workgroup(peakWG))*int64(p.Iters)*peakChains*4) / d.Seconds(), nil
}

// int8PeakRun dispatches groups workgroups of int8_peak with push p, rounds
// times after a warm-up, and returns the best time.
func (b *Backend) int8PeakRun(sink *vk.Buffer, groups int64, p peakPush, rounds int) (time.Duration, error) {
	k, err := b.kernel(spirv.Int8Peak.Variant(false, b.dot), b.workgroup(peakWG))
	if err != nil {
		return 0, err
	}
	return b.timeDispatch("int8 peak", k, []vk.Range{whole(sink)}, pushBytes(p), groups, rounds)
}

// timeDispatch records one dispatch of k over groups workgroups, submits it
// rounds times after a warm-up (at least once), and returns the best time:
// by GPU timestamps around the dispatch where the compute queue has them,
// else by the host's clock around the submit (which then includes the
// submit's own overhead).
func (b *Backend) timeDispatch(name string, k *vk.Kernel, bufs []vk.Range, push []byte, groups int64, rounds int) (time.Duration, error) {
	timed := b.info.TimestampBits > 0 && b.info.TimestampPeriod > 0
	r := b.dev.Record(name)
	defer r.Release()
	if timed {
		if err := r.Profile(); err != nil {
			return 0, err
		}
	}
	r.Dispatch(k, bufs, push, uint32(groups), 1, 1)
	if err := r.Finish(); err != nil {
		return 0, err
	}
	best := time.Duration(1 << 62)
	for i := range max(rounds, 1) + 1 {
		start := time.Now()
		if err := b.dev.Submit(r); err != nil {
			return 0, err
		}
		d := time.Since(start)
		if timed {
			t, err := r.Timings()
			if err != nil {
				return 0, err
			}
			d = time.Duration(t[0].Nanoseconds)
		}
		if i > 0 { // the first round warms up
			best = min(best, d)
		}
	}
	return best, nil
}

// The int8_peak dispatch: invocations per workgroup (at most), steps per
// chain, and the shader's CHAINS.
const (
	peakWG     = 256
	peakIters  = 1024
	peakChains = 16
)
