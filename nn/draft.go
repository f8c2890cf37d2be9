package nn

import (
	"math"
	"time"
)

// A Drafter guesses the tokens that follow a sequence, so that the engine
// can verify several of them in one batched forward pass (see
// GenerateOptions.Draft). Package nn/spec holds the drafters: prompt lookup
// and CHNB chain buckets.
//
// A drafter proposes a single continuation (its distribution q is a point
// mass), so verification is lossless: each drafted token is kept only when
// the sampler, drawing from the model's own distribution after the tokens
// before it, draws that very token.
type Drafter interface {
	// Draft appends to dst up to max tokens guessed to follow seq (the
	// whole sequence so far: prompt, generated tokens, and the token about
	// to be evaluated) and returns dst. Drafting nothing is always allowed.
	// seq is read-only and valid only during the call.
	Draft(dst, seq []int32, max int) []int32
}

// MaxDraft is the largest number of tokens one verification pass may draft.
const MaxDraft = 16

// DefaultDraftMax is the number of tokens drafted per pass when
// GenerateOptions.DraftMax is 0 (llama.cpp's --draft-max default is 16;
// the chain buckets hold 8).
const DefaultDraftMax = 8

// DraftStats measures speculative decoding in a generation.
type DraftStats struct {
	Steps    int               // forward passes after the prompt, drafting or not
	Passes   int               // of which verification passes (a draft evaluated with the token before it)
	Drafted  int               // drafted tokens verified
	Accepted int               // drafted tokens kept
	Lengths  [MaxDraft + 1]int // Lengths[n]: verification passes that kept n drafted tokens
	Declined int               // drafts offered but not verified (the backoff judged them not worth a pass)
	_        [0]func()         // not comparable: compare fields
}

// AcceptRate is the share of drafted tokens kept (0 when none were drafted).
func (d DraftStats) AcceptRate() float64 {
	if d.Drafted == 0 {
		return 0
	}
	return float64(d.Accepted) / float64(d.Drafted)
}

// MeanAccepted is the mean number of drafted tokens kept per verification
// pass (0 when there were none).
func (d DraftStats) MeanAccepted() float64 {
	if d.Passes == 0 {
		return 0
	}
	return float64(d.Accepted) / float64(d.Passes)
}

// Add accumulates o into d.
func (d *DraftStats) Add(o DraftStats) {
	d.Steps += o.Steps
	d.Passes += o.Passes
	d.Drafted += o.Drafted
	d.Accepted += o.Accepted
	d.Declined += o.Declined
	for i, n := range o.Lengths {
		d.Lengths[i] += n
	}
}

// DraftPolicy decides how many drafted tokens a verification pass carries.
// It learns two things as the engine runs: the chance a that a drafted
// token is kept (given the ones before it were), per generation, and the
// cost of a pass of k+1 tokens relative to a plain step, 1 + r·k, timed
// and kept by the engine across generations (it is the backend's and the
// model's, not the text's). A pass verifying k drafted tokens yields
// 1 + a + … + a^k tokens on average, and the policy takes the k that
// maximizes tokens per unit of time; k = 0 (a plain step) when no draft
// pays for itself. So when acceptance stays low, or a pass costs nearly
// as much per token as plain steps (a small model whose weights stay in
// cache), the drafter backs off. It then still verifies a single drafted
// token once every r/probeCost declined drafts (between 8 and 256), to
// notice when drafting pays again at a cost of about probeCost of a step.
type DraftPolicy struct {
	max      int
	kept     float64 // decayed count of drafted tokens kept
	tried    float64 // decayed count of drafted tokens the sampler judged
	declined int     // drafts declined since the last verification pass
	every    bool    // verify every draft (GenerateOptions.DraftEvery)
	cost     *DraftCost
}

// DraftCost is what a verification pass costs on a backend, learned as
// it runs; keep one per backend and model, across generations.
type DraftCost struct {
	plain  float64 // seconds of a plain (one-token) decode step, running mean; 0: not yet timed
	nPlain int
	r      float64 // extra cost per drafted token, relative to a plain step
	nR     int     // passes that measured r (the prior counts as one)
}

const (
	draftDecay = 0.95  // weight of the past in the estimates, once warm
	probeCost  = 0.005 // the share of a step probing a backed-off drafter may cost
)

// NewDraftPolicy returns the policy of one generation that drafts at most
// max tokens per pass, learning into cost; every verifies every draft
// (GenerateOptions.DraftEvery). nn.Engine makes its own; a scheduler that
// verifies drafts itself (the server's slots) makes one per request.
func NewDraftPolicy(max int, every bool, cost *DraftCost) *DraftPolicy {
	// Prior: half the drafted tokens kept.
	return &DraftPolicy{max: max, kept: 1, tried: 2, every: every, cost: cost}
}

// NewDraftCost starts the cost estimate from a prior of a drafted token
// costing a third of a step, worth one measurement: the first timed
// passes replace it.
func NewDraftCost() *DraftCost { return &DraftCost{r: 1.0 / 3, nR: 1} }

// mean folds x into a running mean of n samples, an exponential one once
// n is large.
func mean(m *float64, n *int, x float64) {
	*n++
	*m += (x - *m) * max(1/float64(*n), 1-draftDecay)
}

// Choose returns how many of n drafted tokens to verify.
func (p *DraftPolicy) Choose(n int) int {
	n = min(n, p.max)
	if n <= 0 || p.every {
		return max(n, 0)
	}
	a, r := p.kept/p.tried, p.cost.r
	best, bestRate := 0, 1.0 // a plain step: one token per unit of time
	yield, ak := 1.0, 1.0
	for k := 1; k <= n; k++ {
		ak *= a
		yield += ak
		if rate := yield / (1 + r*float64(k)); rate > bestRate*1.0001 {
			best, bestRate = k, rate
		}
	}
	if best == 0 {
		every := min(max(int(r/probeCost), 8), 256)
		if p.declined++; p.declined >= every {
			best = 1
		}
	}
	if best > 0 {
		p.declined = 0
	}
	return best
}

// TimedPlain records the duration of a plain decode step.
func (p *DraftPolicy) TimedPlain(d time.Duration) {
	mean(&p.cost.plain, &p.cost.nPlain, d.Seconds())
}

// TimedPass records a verification pass of k drafted tokens, of which
// kept were kept and, when rejected, one more was judged and refused.
func (p *DraftPolicy) TimedPass(k, kept int, rejected bool, d time.Duration) {
	p.kept = draftDecay*p.kept + float64(kept)
	p.tried = draftDecay*p.tried + float64(kept)
	if rejected {
		p.tried++
	}
	if c := p.cost; c.plain > 0 && k > 0 {
		mean(&c.r, &c.nR, max((d.Seconds()/c.plain-1)/float64(k), 0))
	}
}

// TokenProb is the softmax probability of token id under logits: what the
// lossy threshold rule (DraftThreshold) compares.
func TokenProb(logits []float32, id int32) float64 {
	mx := math.Inf(-1)
	for _, x := range logits {
		mx = max(mx, float64(x))
	}
	var sum float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - mx)
	}
	return math.Exp(float64(logits[id])-mx) / sum
}
