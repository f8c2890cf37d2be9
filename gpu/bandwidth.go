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
	timed := b.info.TimestampBits > 0 && b.info.TimestampPeriod > 0
	r := b.dev.Record("bandwidth read")
	defer r.Release()
	if timed {
		if err := r.Profile(); err != nil {
			return 0, err
		}
	}
	k, err := b.kernel(spirv.ReadBandwidth, b.workgroup(wg))
	if err != nil {
		return 0, err
	}
	r.Dispatch(k, []vk.Range{whole(src), whole(sink)}, pushBytes(readPush{N: uint32(words), Never: 0xFFFFFFFF}), uint32(groups), 1, 1)
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
	return float64(size) / best.Seconds(), nil
}
