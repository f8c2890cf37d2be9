package nntest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
)

// attentionFault is a mistake a kernel could make in attention.
type attentionFault int

const (
	noFault    attentionFault = iota
	dropFirst                 // position 0 left out of the softmax
	dropLast                  // the last position left out (a j < n−1 bound)
	scaleByHD                 // scores scaled by 1/hd instead of 1/√hd
	queriesF32                // queries not rounded to float16
)

// attentionWith is ref.Attention computed with fault: float32 scores as the
// oracle rounds them, the softmax and the weighted sum in float64.
func attentionWith(c attentionCase, fault attentionFault) []float32 {
	out := make([]float32, c.heads*c.hd)
	group := c.heads / c.kvHeads
	scale := float32(1 / math.Sqrt(float64(c.hd)))
	if fault == scaleByHD {
		scale = 1 / float32(c.hd)
	}
	lo, hi := 0, len(c.k)
	switch fault {
	case dropFirst:
		lo++
	case dropLast:
		hi--
	}
	for h := range c.heads {
		kv := (h / group) * c.hd
		s := make([]float64, hi)
		m := math.Inf(-1)
		for p := lo; p < hi; p++ {
			var d float64
			for i := range c.hd {
				q := c.q[h*c.hd+i]
				if fault != queriesF32 {
					q = nn.RoundF16(q)
				}
				d += float64(q) * float64(c.k[p][kv+i])
			}
			s[p] = float64(float32(d) * scale)
			m = math.Max(m, s[p])
		}
		for i := range c.hd {
			var o, l float64
			for p := lo; p < hi; p++ {
				e := math.Exp(s[p] - m)
				o += e * float64(c.v[p][kv+i])
				l += e
			}
			out[h*c.hd+i] = float32(o / l)
		}
	}
	return out
}

// vulkanBudget bounds, to first order, how far each output of c moves when
// every exp(x) of the softmax is off by the 3 + 2·|x| ulp that Vulkan
// allows, and the final division by its 2.5 ulp (an ulp at most 2^-23 of
// the value): o = Σ e_j·v_j / Σ e_j moves by Σ |v_j − o|·e_j·ε_j / Σ e_j.
// (The partials' exp(m_c − M) is exp(0) for one chunk: the same factor on
// both sums.)
func vulkanBudget(c attentionCase) []float64 {
	out := make([]float64, c.heads*c.hd)
	group := c.heads / c.kvHeads
	scale := float32(1 / math.Sqrt(float64(c.hd)))
	n := len(c.k)
	for h := range c.heads {
		kv := (h / group) * c.hd
		s := make([]float64, n)
		m := math.Inf(-1)
		for p := range n {
			var d float64
			for i := range c.hd {
				d += float64(nn.RoundF16(c.q[h*c.hd+i])) * float64(c.k[p][kv+i])
			}
			s[p] = float64(float32(d) * scale)
			m = math.Max(m, s[p])
		}
		for i := range c.hd {
			var o, l float64
			for p := range n {
				e := math.Exp(s[p] - m)
				o += e * float64(c.v[p][kv+i])
				l += e
			}
			o /= l
			var b float64
			for p := range n {
				eps := (3 + 2*math.Abs(s[p]-m)) * 0x1p-23
				b += math.Abs(float64(c.v[p][kv+i])-o) * math.Exp(s[p]-m) * eps / l
			}
			out[h*c.hd+i] = b + 2.5*0x1p-23*math.Abs(o)
		}
	}
	return out
}

// maxDiff is max|got − want| and max|want|.
func maxDiff(got, want []float32) (d, scale float64) {
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	return d, scale
}

// The Attention check's tolerance covers what Vulkan lets exp and division
// be off by, ten times over, on inputs such as RunOps draws; and it fails a
// kernel that drops a position, scales the scores wrongly or leaves the
// queries in float32.
func TestAttentionTolerance(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		randVec := func(n int, scale float32) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = (rng.Float32()*2 - 1) * scale
			}
			return x
		}
		for _, c := range attentionCases(randVec) {
			want := ref.Attention(c.q, c.k, c.v, c.heads, c.kvHeads, c.hd)
			d, scale := maxDiff(attentionWith(c, noFault), want)
			if d > 1e-6*scale {
				t.Fatalf("seed %d, %s: attentionWith departs from the oracle by %.3g of %.3g", seed, c.name, d, scale)
			}
			var b float64
			for _, x := range vulkanBudget(c) {
				b = math.Max(b, x)
			}
			if b > attentionTol*scale/10 {
				t.Errorf("seed %d, %s: Vulkan's exp and division may move an output by %.3g, over a tenth of the tolerance %.3g", seed, c.name, b, attentionTol*scale)
			}
			if len(c.k) < 2 {
				continue // one position: its weight is 1 whatever the scores
			}
			for _, f := range []attentionFault{dropFirst, dropLast, scaleByHD} {
				if d, _ := maxDiff(attentionWith(c, f), want); d <= attentionTol*scale {
					t.Errorf("seed %d, %s: fault %d moves the output by %.3g, within the tolerance %.3g", seed, c.name, f, d, attentionTol*scale)
				}
			}
		}
	}
	c := attentionF16Case()
	want := ref.Attention(c.q, c.k, c.v, c.heads, c.kvHeads, c.hd)
	if want[0] != 0 || want[1] != 1 {
		t.Fatalf("%s: oracle output %v, %v; want 0, 1", c.name, want[0], want[1])
	}
	if d, scale := maxDiff(attentionWith(c, queriesF32), want); d <= 10*attentionTol*scale {
		t.Errorf("%s: queries left in float32 move the output by %.3g, not 10 times the tolerance %.3g", c.name, d, attentionTol*scale)
	}
}
