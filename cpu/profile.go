package cpu

import (
	"errors"
	"fmt"
	"time"
)

// stage is a part of a forward pass that ProfileForward times.
type stage int

const (
	stageMatMul stage = iota
	stageAttention
	stageRopeKV
	stageNorm
	stageHead
	stageOther
	numStages
)

var stageNames = [numStages]struct{ label, kernel string }{
	stageMatMul:    {"ternary matrix products", "ternaryRows, ternaryMatMul"},
	stageAttention: {"attention", "kScores, expSub, axpyF16Rows4"},
	stageRopeKV:    {"RoPE, K/V cache writes", "Go"},
	stageNorm:      {"norms, quantization, activation, residual", "Go"},
	stageHead:      {"output head (with its norm)", "dotF16Rows, dotI8Rows, dotBlockRows, dotNibbleRows, dotSixRows"},
	stageOther:     {"embedding, RoPE table, rest", "Go"},
}

// profiler accumulates the wall time of a pass's stages: each lap charges
// the time since the previous lap to one stage.
type profiler struct {
	last     time.Time
	time     [numStages]time.Duration
	calls    [numStages]int
	bytes    [numStages]int64
	macs     [numStages]int64         // the ternary products' multiply-adds
	wait     [numStages]time.Duration // of time, the caller's waits for its helpers
	waitLast time.Duration            // pool.waited at the last lap
}

// lap charges the time since the last lap (or the pass's start) to st,
// with bytes of memory it reads at least. It does nothing unless a
// profile is being taken.
func (b *Backend) lap(st stage, bytes int64) {
	b.lapMACs(st, bytes, 0)
}

// lapMACs is lap for a stage that also did macs multiply-adds (the
// ternary products: a prompt's are bound by them, not by its bytes).
func (b *Backend) lapMACs(st stage, bytes, macs int64) {
	p := b.prof
	if p == nil {
		return
	}
	now := time.Now()
	p.time[st] += now.Sub(p.last)
	p.calls[st]++
	p.bytes[st] += bytes
	p.macs[st] += macs
	p.last = now
	if w := b.pool.waited; w != nil {
		p.wait[st] += *w - p.waitLast
		p.waitLast = *w
	}
}

// StageTime is one stage of a profiled forward pass, per pass.
type StageTime struct {
	Label       string
	Kernel      string // the kernels (or Go code) it runs
	Calls       int
	Nanoseconds float64
	Bytes       int64 // weights and cache it reads at least
	// MACs is the multiply-adds of the ternary products (rows × width ×
	// tokens of each matrix), 0 for the other stages: a prompt's products
	// are bound by them, and MACs / Nanoseconds against the int8 probe
	// says how near the kernels come to the machine's peak.
	MACs int64
	// WaitNanoseconds is the part of Nanoseconds the calling thread spent
	// waiting for the pool's helpers to finish their shares.
	WaitNanoseconds float64
}

// Profile is where the time of a forward pass goes on the CPU, per pass:
// the wall time of each stage, and how long the calling thread waited for
// the pool's helpers to finish their shares (hand-offs and imbalance; zero
// on one thread).
type Profile struct {
	Tokens, Pos     int
	Threads         int
	WallNanoseconds float64
	WaitNanoseconds float64
	Stages          []StageTime // in pass order
}

// ProfileForward times runs forward passes of n tokens at positions
// pos…pos+n−1 of slot 0 (after one untimed pass), as Forward runs them
// with logits for the last token, and returns the mean per pass. It
// writes the K/V cache at those positions.
func (b *Backend) ProfileForward(n, pos, runs int) (*Profile, error) {
	return b.profile(n, pos, runs, false)
}

// ProfileVerify is ProfileForward for a speculative verification pass:
// logits for every one of the n tokens.
func (b *Backend) ProfileVerify(n, pos, runs int) (*Profile, error) {
	return b.profile(n, pos, runs, true)
}

func (b *Backend) profile(n, pos, runs int, all bool) (*Profile, error) {
	switch {
	case b.pool == nil:
		return nil, errors.New("cpu: backend is closed")
	case n < 1 || n > b.batch:
		return nil, fmt.Errorf("cpu: profile of %d tokens: 1..%d (the batch) can be timed in one pass", n, b.batch)
	case pos < 0 || pos+n > b.ctx:
		return nil, fmt.Errorf("cpu: profile at positions %d..%d: outside the context of %d", pos, pos+n-1, b.ctx)
	}
	runs = max(runs, 1)
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32((7919*i + 1) % b.c.Vocab)
	}
	logits := make([]float32, b.c.Vocab)
	if all {
		logits = make([]float32, n*b.c.Vocab)
	}
	if err := b.Forward(tokens, pos, logits); err != nil {
		return nil, err
	}
	p := &profiler{}
	b.prof, b.pool.waited = p, new(time.Duration)
	defer func() { b.prof, b.pool.waited = nil, nil }()
	var wall time.Duration
	for range runs {
		start := time.Now()
		p.last = start
		if err := b.Forward(tokens, pos, logits); err != nil {
			return nil, err
		}
		b.lap(stageOther, 0) // what Forward does after the head
		wall += p.last.Sub(start)
	}
	per := float64(runs)
	out := &Profile{Tokens: n, Pos: pos, Threads: b.threads,
		WallNanoseconds: float64(wall.Nanoseconds()) / per,
		WaitNanoseconds: float64(b.pool.waited.Nanoseconds()) / per}
	for st := range numStages {
		if p.calls[st] == 0 {
			continue
		}
		out.Stages = append(out.Stages, StageTime{
			Label: stageNames[st].label, Kernel: stageNames[st].kernel,
			Calls:           (p.calls[st] + runs - 1) / runs,
			Nanoseconds:     float64(p.time[st].Nanoseconds()) / per,
			Bytes:           p.bytes[st] / int64(runs),
			MACs:            p.macs[st] / int64(runs),
			WaitNanoseconds: float64(p.wait[st].Nanoseconds()) / per,
		})
	}
	return out, nil
}
