package gpu

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// The sample kernel's repetition penalty divides as Go's float32 division
// does (nn.Sampler.Penalize), not as GLSL's x / r, which Vulkan lets be
// 2.5 ulp off (NVIDIA's is). Markstein's fma correction would need a fused
// fma, which Vulkan does not promise either (lavapipe's is a multiply and
// an add), so the kernel divides the significands in integers (quotient in
// shaders/sample.comp). penaltyQuotient is that code in Go, line for line:
// integer arithmetic is exact everywhere, so its bits are the kernel's, and
// these tests check them against Go's division with no GPU at hand.

// penaltyQuotient is the sample kernel's quotient(x, r): x/r rounded to
// nearest even for finite x > 0 and r > 0 (+Inf for x = +Inf).
func penaltyQuotient(x, r float32) float32 {
	ux, ur := math.Float32bits(x), math.Float32bits(r)
	if ux >= 0x7f800000 {
		return x
	}
	ex, er := int(ux>>23), int(ur>>23)
	mx, mr := ux&0x7fffff, ur&0x7fffff
	if ex == 0 {
		s := 23 - findMSB(mx)
		mx <<= uint(s)
		ex = 1 - s
	} else {
		mx |= 0x800000
	}
	if er == 0 {
		s := 23 - findMSB(mr)
		mr <<= uint(s)
		er = 1 - s
	} else {
		mr |= 0x800000
	}
	e := ex - er + 127
	if mx < mr {
		mx <<= 1
		e--
	}
	q, rem := uint32(0), mx
	for range 25 {
		q <<= 1
		if rem >= mr {
			rem -= mr
			q |= 1
		}
		rem <<= 1
	}
	q <<= 1
	if rem != 0 {
		q |= 1
	}
	if e >= 255 {
		return float32(math.Inf(1))
	}
	sh := uint(2 + max(0, 1-e))
	if sh > 26 {
		return 0
	}
	kept, low, tie := q>>sh, q&(1<<sh-1), uint32(1)<<(sh-1)
	if low > tie || low == tie && kept&1 != 0 {
		kept++
	}
	if e >= 1 {
		return math.Float32frombits(uint32(e-1)<<23 + kept)
	}
	return math.Float32frombits(kept)
}

// findMSB is GLSL's findMSB for a nonzero uint.
func findMSB(x uint32) int { return bits.Len32(x) - 1 }

// penaltyQuotient is x/r in every bit: exhaustively over x's significand
// for the penalties people use and the hardest significands of r (one
// binade of x stands for all the normal ones: the integer division sees
// only the significands), over every subnormal x for two of them, and for
// random pairs of all magnitudes, subnormals, overflow and underflow
// included.
func TestPenaltyQuotient(t *testing.T) {
	step := uint32(1)
	if testing.Short() {
		step = 61
	}
	check := func(x, r float32) bool {
		return math.Float32bits(penaltyQuotient(x, r)) == math.Float32bits(x/r)
	}
	fail := func(x, r float32) {
		t.Helper()
		t.Fatalf("x = %g (%#08x), r = %g (%#08x): kernel %g, Go %g", x, math.Float32bits(x), r, math.Float32bits(r), penaltyQuotient(x, r), x/r)
	}
	for i, r := range []float32{
		1.1, 1.3, 0.8, 1.5, 2, 1.18, // the tests' and the usual penalties
		math.Float32frombits(0x3f800001), // 1 + 2^-23
		math.Float32frombits(0x3fffffff), // 2 − 2^-23: every significand bit set
		math.Float32frombits(0x3f7fffff), // 1 − 2^-24
		1e-30, 3e30,
	} {
		s := step
		if i >= 4 && s == 1 {
			s = 7 // the full run stays under two seconds
		}
		for m := uint32(0); m < 1<<23; m += s {
			if x := math.Float32frombits(0x3f800000 | m); !check(x, r) {
				fail(x, r)
			}
		}
		if i < 2 {
			for m := uint32(1); m < 1<<23; m += s { // subnormal x
				if x := math.Float32frombits(m); !check(x, r) {
					fail(x, r)
				}
			}
		}
		for _, x := range []float32{math.SmallestNonzeroFloat32, 0x1p-126, 1e-30, 3e38, math.MaxFloat32, float32(math.Inf(1))} {
			if !check(x, r) {
				fail(x, r)
			}
		}
	}
	rng := rand.New(rand.NewPCG(13, 14))
	n := 3000000
	if testing.Short() {
		n = 100000
	}
	for i := range n {
		x := math.Float32frombits(1 + uint32(rng.IntN(0x7f7fffff))) // every finite x > 0
		r := math.Float32frombits(1 + uint32(rng.IntN(0x7f7fffff))) // and r > 0
		if i%2 == 0 {
			r = float32(math.Ldexp(1+rng.Float64(), rng.IntN(9)-4)) // penalties of sensible size
		}
		if !check(x, r) {
			fail(x, r)
		}
	}
}

// kernelPenalize is the sample kernel's penalty of x (count occurrences),
// operation by operation (shaders/sample.comp, step 1).
func kernelPenalize(x float32, count int32, repeat, freq, presence float32) float32 {
	y := x
	if repeat != 1 {
		if x > 0 {
			y = penaltyQuotient(x, repeat)
		} else {
			y = float32(x * repeat)
		}
	}
	t := float32(float32(count) * freq)
	d := float32(t + presence)
	return float32(y - d)
}

// The kernel's arithmetic gives nn.Sampler.Penalize's bits for logits of
// every sign and size a model produces, and for ±0, ±Inf and NaN.
func TestKernelPenalize(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-30, -1e-30, 3e38, -3e38}
	for _, c := range []nn.SamplerConfig{
		{RepeatPenalty: 1.1},
		{RepeatPenalty: 1.3, FrequencyPenalty: 0.1, PresencePenalty: 0.2},
		{RepeatPenalty: 0.8, RepeatLastN: -1},
		{RepeatPenalty: 1.5},
		{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25},
		{RepeatPenalty: 1.18, FrequencyPenalty: -0.3},
		{FrequencyPenalty: 0.3},
		{RepeatPenalty: 1.0000001, PresencePenalty: 1e-7},
	} {
		s, err := nn.NewSampler(c)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Plan(1000)
		for i := range 200000 {
			x := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(16)-4))
			if i < len(specials) {
				x = specials[i]
			}
			count := int32(1 + rng.IntN(64))
			want := s.Penalize(x, count)
			got := kernelPenalize(x, count, p.Repeat, p.Frequency, p.Presence)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("%+v: x = %g, count %d: kernel %g, Penalize %g", c, x, count, got, want)
			}
		}
	}
}

// On the device, the sample kernel's penalties are nn.Sampler.Penalize's
// bits for logits of every normal magnitude and both signs, near the
// largest float and +Inf: the GLSL of quotient is its Go twin's. (Not
// subnormals: a device may flush them, and the host then falls back.)
func TestSamplePenaltyBits(t *testing.T) {
	forSplits(t, testSamplePenaltyBits)
}

func testSamplePenaltyBits(t *testing.T, split bool) {
	rng := rand.New(rand.NewPCG(17, 18))
	logits := make([]float32, 3000)
	for i := range logits {
		logits[i] = float32(math.Ldexp(1+rng.Float64(), rng.IntN(247)-120) * float64(1-2*rng.IntN(2)))
	}
	copy(logits, []float32{float32(math.Inf(1)), math.MaxFloat32, 3e38, -3e38, 0x1p-120, 1.1, 0.8, 1})
	history := make([]int32, 1200) // 1024 distinct ids, some of them repeated
	for i := range history {
		history[i] = int32(i % samplePenCap)
	}
	k := newSampleKernel(t, logits, split)
	for _, c := range []nn.SamplerConfig{
		{Temperature: 1, TopK: 5, RepeatPenalty: 1.1, RepeatLastN: -1},
		{Temperature: 1, TopK: 5, RepeatPenalty: 0.8, RepeatLastN: -1},
		{Temperature: 1, TopK: 5, RepeatPenalty: 1.3, FrequencyPenalty: 0.1, PresencePenalty: 0.2, RepeatLastN: -1},
		{Temperature: 1, TopK: 5, RepeatPenalty: math.Float32frombits(0x3fffffff), RepeatLastN: -1},
	} {
		s, err := nn.NewSampler(c)
		if err != nil {
			t.Fatal(err)
		}
		before := k.a.b.smp.fallbacks
		if _, ok, err := k.step(s, history, nil); !ok || err != nil {
			t.Fatalf("%+v: on the device %v, %v", c, ok, err)
		}
		plan := u32View(k.a.b.smp.planHost.Mapped(), planWords)
		res := u32View(k.a.b.smp.resHost.Mapped(), resWords)
		if n := int(plan[2]); n != samplePenCap {
			t.Fatalf("%+v: a window of %d ids, want %d", c, n, samplePenCap)
		}
		for j := range samplePenCap {
			x := math.Float32frombits(res[resHead+j])
			want := s.Penalize(x, int32(plan[planCounts+j]))
			if got := math.Float32frombits(res[resPen+j]); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%+v: logit %g (%#08x), count %d: kernel %g, Penalize %g", c, x, math.Float32bits(x), plan[planCounts+j], got, want)
			}
		}
		if k.a.b.smp.fallbacks != before {
			t.Errorf("%+v: fell back to the host", c)
		}
	}
}
