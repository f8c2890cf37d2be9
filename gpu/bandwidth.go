package gpu

import (
	"errors"
	"time"
)

// MeasureBandwidth times copies between two device buffers of size bytes
// (capped by the device's allocation limit) and returns the device
// memory's bandwidth in bytes per second, counting each copy's read and
// write. It is the roofline bench holds decode to.
func (b *Backend) MeasureBandwidth(size int64, rounds int) (float64, error) {
	if b.dev == nil {
		return 0, errors.New("gpu: backend is closed")
	}
	size = min(size, int64(b.info.MaxMemoryAllocationSize)) &^ 255
	src, err := b.dev.NewBuffer("bandwidth source", size, false)
	if err != nil {
		return 0, err
	}
	defer src.Release()
	dst, err := b.dev.NewBuffer("bandwidth destination", size, false)
	if err != nil {
		return 0, err
	}
	defer dst.Release()
	r := b.dev.Record("bandwidth copy")
	defer r.Release()
	r.Fill(whole(src), 0x3c003c00)
	r.Barrier()
	r.Copy(whole(src), whole(dst))
	if err := r.Finish(); err != nil {
		return 0, err
	}
	if err := b.dev.Submit(r); err != nil { // warm up: first touch of the pages
		return 0, err
	}
	best := time.Duration(1 << 62)
	for range max(rounds, 1) {
		start := time.Now()
		if err := b.dev.Submit(r); err != nil {
			return 0, err
		}
		best = min(best, time.Since(start))
	}
	// The fill writes size bytes too: 3·size moved per submit.
	return 3 * float64(size) / best.Seconds(), nil
}
