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
	p, err := NewBandwidthProbe(threads, size)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return p.Measure(rounds)
}

// BandwidthProbe is MeasureBandwidth's buffer and workers, kept to measure
// again and again: on a machine whose bandwidth changes from second to
// second (a VM beside other tenants), a decode speed is held to probes
// taken between its own repetitions.
type BandwidthProbe struct {
	buf  []byte
	pool *pool
	sums []uint64
}

// NewBandwidthProbe allocates and touches the buffer of size bytes and
// starts threads workers.
func NewBandwidthProbe(threads, size int) (*BandwidthProbe, error) {
	if threads < 1 || size < 1<<20 {
		return nil, errors.New("cpu: bandwidth test needs ≥ 1 thread and ≥ 1 MiB")
	}
	size &^= 1<<16 - 1
	// The buffer lives in huge pages where the weights do (weightArena):
	// the roofline compares like with like.
	b := &BandwidthProbe{buf: new(weightArena).bytes(size), pool: newPool(threads), sums: make([]uint64, threads)}
	for i := range b.buf { // touch every page so no pass pays for faults
		b.buf[i] = byte(i)
	}
	return b, nil
}

// Measure returns the best bandwidth of rounds passes over the buffer, in
// bytes per second.
func (b *BandwidthProbe) Measure(rounds int) (float64, error) {
	if b.pool == nil {
		return 0, errors.New("cpu: bandwidth probe is closed")
	}
	if rounds < 1 {
		return 0, errors.New("cpu: bandwidth test needs ≥ 1 round")
	}
	best := 0.0
	for r := 0; r < rounds; r++ {
		start := time.Now()
		b.pool.run(len(b.buf), 1<<16, func(w, lo, hi int) {
			b.sums[w] += active.sumBytes(b.buf[lo:hi])
		})
		if bw := float64(len(b.buf)) / time.Since(start).Seconds(); bw > best {
			best = bw
		}
	}
	sink = b.sums[0]
	return best, nil
}

// Close stops the workers and drops the buffer.
func (b *BandwidthProbe) Close() {
	if b.pool != nil {
		b.pool.close()
		b.pool, b.buf = nil, nil
	}
}

// sink keeps the bandwidth test's sums alive.
var sink uint64
