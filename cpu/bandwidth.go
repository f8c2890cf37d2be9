package cpu

import (
	"errors"
	"time"
)

// MeasureBandwidth returns the memory read bandwidth in bytes per second
// that threads workers reach streaming a buffer of size bytes (make it
// several times the last-level cache), the best of rounds passes. Decode
// is memory-bound, so this is the roofline a decode speed is measured
// against: tokens/s ≤ bandwidth / bytes read per token.
func MeasureBandwidth(threads, size, rounds int) (float64, error) {
	if threads < 1 || size < 1<<20 || rounds < 1 {
		return 0, errors.New("cpu: bandwidth test needs ≥ 1 thread, ≥ 1 MiB and ≥ 1 round")
	}
	size &^= 1<<16 - 1
	buf := alignedBytes(size)
	for i := range buf { // touch every page so no pass pays for faults
		buf[i] = byte(i)
	}
	p := newPool(threads)
	defer p.close()
	sums := make([]uint64, threads)
	best := 0.0
	for r := 0; r < rounds; r++ {
		start := time.Now()
		p.run(size, 1<<16, func(w, lo, hi int) {
			sums[w] += active.sumBytes(buf[lo:hi])
		})
		if bw := float64(size) / time.Since(start).Seconds(); bw > best {
			best = bw
		}
	}
	sink = sums[0]
	return best, nil
}

// sink keeps the bandwidth test's sums alive.
var sink uint64
