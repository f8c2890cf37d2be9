package gpu

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/bitvk/bitvk/gpu/vk"
)

// Profile is where the GPU time of one recorded forward pass goes, from
// timestamps written after every command.
type Profile struct {
	Tokens int // tokens the pass evaluates
	Pos    int // position of the first
	// Commands are the pass's dispatches, copies and fills in order, each
	// with the median of its time over the runs.
	Commands []vk.Timing
	Counts   vk.Counts // what one submit of the pass records
	// GPUNanoseconds is the sum of Commands: the pass from its first
	// command's start to its last one's end, as the GPU saw it.
	GPUNanoseconds float64
	// WallNanoseconds is the median host time of a submit (timestamps on),
	// submit and wait included.
	WallNanoseconds float64
}

// KernelTime is the time of all the commands of one label in a Profile.
type KernelTime struct {
	Label       string  `json:"label"`
	Kernel      string  `json:"kernel"`
	Calls       int     `json:"calls"`
	Nanoseconds float64 `json:"ns"`
	Share       float64 `json:"share"` // of the pass's GPU time
	Bytes       int64   `json:"bytes"` // memory traffic it needs at least
	GBs         float64 `json:"gbs"`   // Bytes / Nanoseconds
	// WaitNs (CPU profiles) is the part of Nanoseconds the calling thread
	// waited for its helper threads: hand-offs and imbalance.
	WaitNs float64 `json:"wait_ns,omitempty"`
	// MACs (CPU profiles) is the ternary products' multiply-adds, and
	// GMACs MACs / Nanoseconds.
	MACs  int64   `json:"macs,omitempty"`
	GMACs float64 `json:"gmacs,omitempty"`
}

// ByLabel sums the commands per label, most time first.
func (p *Profile) ByLabel() []KernelTime {
	idx := map[string]int{}
	var out []KernelTime
	for _, c := range p.Commands {
		i, ok := idx[c.Label]
		if !ok {
			i = len(out)
			idx[c.Label] = i
			out = append(out, KernelTime{Label: c.Label, Kernel: c.Kernel})
		}
		k := &out[i]
		k.Calls++
		k.Nanoseconds += c.Nanoseconds
		k.Bytes += c.Bytes
		if k.Kernel != c.Kernel && c.Kernel != "" {
			k.Kernel = "mixed"
		}
	}
	for i := range out {
		if p.GPUNanoseconds > 0 {
			out[i].Share = out[i].Nanoseconds / p.GPUNanoseconds
		}
		if out[i].Nanoseconds > 0 {
			out[i].GBs = float64(out[i].Bytes) / out[i].Nanoseconds
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Nanoseconds > out[b].Nanoseconds })
	return out
}

// ProfileForward times one forward pass of n tokens (at most the batch) at
// positions pos…pos+n−1 with a GPU timestamp after every command, as
// ForwardArgmax records it for n = 1 (a decode step) and as Forward with the
// last token's logits does for n > 1 (a prefill chunk). It runs the pass
// runs times (after one warm-up) and keeps each command's median. The
// tokens are arbitrary ids; the K/V cache at those positions is
// overwritten. Devices without timestamps on their compute queue get an
// error saying so.
func (b *Backend) ProfileForward(n, pos, runs int) (*Profile, error) {
	mode := outLast
	if n == 1 {
		mode = outArgmax
	}
	return b.profile(n, pos, runs, mode)
}

// ProfileVerify is ProfileForward for a speculative verification pass:
// every one of the n tokens' logits, read back to the host, as Forward
// records a pass that returns them all.
func (b *Backend) ProfileVerify(n, pos, runs int) (*Profile, error) {
	return b.profile(n, pos, runs, outAll)
}

func (b *Backend) profile(n, pos, runs, mode int) (*Profile, error) {
	switch {
	case b.dev == nil:
		return nil, errors.New("gpu: backend is closed")
	case n < 1 || n > b.batch:
		return nil, fmt.Errorf("gpu: profile of %d tokens: 1..%d (the batch) can be timed in one pass", n, b.batch)
	case pos < 0 || pos+n > b.ctx:
		return nil, fmt.Errorf("gpu: profile at positions %d..%d: outside the context of %d", pos, pos+n-1, b.ctx)
	}
	runs = max(runs, 1)
	rec, err := b.record(fmt.Sprintf("profiled forward of %d tokens", n), n, mode, recOpts{profile: true, pos: pos})
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	for i := range n {
		b.putInput(i, int32((7919*i+1)%b.c.Vocab), pos+i, 0)
	}
	var samples [][]vk.Timing
	var walls []float64
	for i := range runs + 1 {
		start := time.Now()
		if err := b.dev.Submit(rec); err != nil {
			return nil, err
		}
		wall := time.Since(start)
		t, err := rec.Timings()
		if err != nil {
			return nil, err
		}
		if i > 0 { // the first run warms caches and clocks
			samples = append(samples, t)
			walls = append(walls, float64(wall.Nanoseconds()))
		}
	}
	p := &Profile{Tokens: n, Pos: pos, Counts: rec.Counts(), WallNanoseconds: median(walls)}
	p.Commands = samples[0]
	for c := range p.Commands {
		ns := make([]float64, len(samples))
		for r := range samples {
			ns[r] = samples[r][c].Nanoseconds
		}
		p.Commands[c].Nanoseconds = median(ns)
		p.GPUNanoseconds += p.Commands[c].Nanoseconds
	}
	return p, nil
}

// median of a non-empty list (which it sorts).
func median(x []float64) float64 {
	slices.Sort(x)
	if len(x)%2 == 1 {
		return x[len(x)/2]
	}
	return (x[len(x)/2-1] + x[len(x)/2]) / 2
}

// Batch is the most tokens one submit evaluates.
func (b *Backend) Batch() int { return b.batch }
