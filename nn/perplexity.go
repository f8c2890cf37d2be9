package nn

import (
	"fmt"
	"math"
)

// Perplexity as llama.cpp's llama-perplexity measures it, so that the
// numbers compare:
//
//   - the whole text is tokenized once (BOS first when the vocabulary adds
//     one) and cut into Chunks = ⌊tokens / n_ctx⌋ chunks of n_ctx tokens;
//     the tail that fills no chunk is dropped;
//   - each chunk is evaluated from an empty cache with its first token
//     replaced by BOS (when the vocabulary adds one);
//   - only the second half is scored: the logits at positions
//     j = n_ctx/2 … n_ctx−2 predict token j+1, so every scored token has at
//     least n_ctx/2 tokens of context;
//   - PPL = exp(mean NLL) over all scored tokens, NLL = −ln softmax(logits)[next];
//   - its uncertainty is the standard error of the mean NLL,
//     σ = √((⟨NLL²⟩ − ⟨NLL⟩²)/(N−1)), carried through exp: ΔPPL = PPL·σ.

// MinPerplexityContext is the shortest chunk perplexity accepts: n_ctx/2
// tokens of context and at least three scored positions.
const MinPerplexityContext = 8

// ChunkPlan is how a token stream is cut for perplexity.
type ChunkPlan struct {
	Ctx    int // n_ctx: tokens per chunk
	Chunks int // chunks evaluated
}

// First is the first scored position of a chunk, n_ctx/2.
func (p ChunkPlan) First() int { return p.Ctx / 2 }

// Scored is the number of scored positions per chunk, n_ctx−1−n_ctx/2
// (the last token of a chunk is only ever predicted).
func (p ChunkPlan) Scored() int { return p.Ctx - 1 - p.Ctx/2 }

// Positions is the number of scored positions of the whole run.
func (p ChunkPlan) Positions() int { return p.Chunks * p.Scored() }

// TooFewTokensError says the text is too short for the chunk size.
type TooFewTokensError struct {
	Tokens, Ctx int
}

func (e *TooFewTokensError) Error() string {
	return fmt.Sprintf("the text tokenizes to only %d tokens; perplexity with a context of %d needs at least %d (2 × n_ctx, as llama-perplexity asks): give more text or a smaller -c", e.Tokens, e.Ctx, 2*e.Ctx)
}

// PlanChunks cuts nTokens tokens into chunks of nCtx, at most maxChunks of
// them (maxChunks < 1: all). Like llama-perplexity it asks for at least
// two chunks' worth of tokens, so a run always has some text to average
// over.
func PlanChunks(nTokens, nCtx, maxChunks int) (ChunkPlan, error) {
	if nCtx < MinPerplexityContext {
		return ChunkPlan{}, fmt.Errorf("a context of %d is too short: perplexity needs at least %d positions per chunk", nCtx, MinPerplexityContext)
	}
	if nTokens < 2*nCtx {
		return ChunkPlan{}, &TooFewTokensError{Tokens: nTokens, Ctx: nCtx}
	}
	p := ChunkPlan{Ctx: nCtx, Chunks: nTokens / nCtx}
	if maxChunks > 0 {
		p.Chunks = min(p.Chunks, maxChunks)
	}
	return p, nil
}

// Chunk returns a copy of chunk i of tokens with its first token replaced
// by bos (bos < 0: kept).
func (p ChunkPlan) Chunk(tokens []int32, i int, bos int32) []int32 {
	c := append([]int32(nil), tokens[i*p.Ctx:(i+1)*p.Ctx]...)
	if bos >= 0 {
		c[0] = bos
	}
	return c
}

// EvalScored evaluates chunk from an empty sequence and calls fn with the
// logits at each scored position j = first … len(chunk)−2, in order (they
// predict chunk[j+1]). Passes are at most batch positions and start at
// multiples of batch, except that the pass crossing first is cut there:
// the unscored prefix then asks the backend for the last position's logits
// only, so the output head runs for scored positions alone. The last token
// is never evaluated: its logits would predict past the chunk.
func EvalScored(e *Engine, chunk []int32, first, batch int, fn func(j int, logits []float32) error) error {
	if first < 1 || first > len(chunk)-1 {
		return fmt.Errorf("nn: first scored position %d outside 1..%d", first, len(chunk)-1)
	}
	batch = max(batch, 1)
	e.Reset()
	n := len(chunk) - 1
	for s := 0; s < n; {
		end := min((s/batch+1)*batch, n)
		if s < first {
			end = min(end, first)
			if _, err := e.Eval(chunk[s:end]); err != nil {
				return err
			}
		} else {
			start := s
			if err := e.EvalAll(chunk[s:end], batch, func(i int, logits []float32) error {
				return fn(start+i, logits)
			}); err != nil {
				return err
			}
		}
		s = end
	}
	return nil
}

// LogSumExp is ln Σ exp(x_i) in float64, shifted by the maximum so that
// nothing overflows.
func LogSumExp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	if math.IsInf(m, 0) {
		return m
	}
	return m + math.Log(ExpSum(x, m))
}

// NLL is the negative log-likelihood of token next under logits:
// −ln softmax(logits)[next] = LogSumExp(logits) − logits[next], in float64.
func NLL(logits []float32, next int32) float64 {
	return LogSumExp(logits) - float64(logits[next])
}

// LogProbs writes ln softmax(logits) to dst, computed in float64 and
// rounded to float32: the precision a KL-divergence base file keeps.
func LogProbs(dst, logits []float32) {
	lse := LogSumExp(logits)
	for i, v := range logits {
		dst[i] = float32(float64(v) - lse)
	}
}

// MeanAndError is the mean of n values given their sum and sum of squares,
// and the standard error of that mean, √((⟨x²⟩ − ⟨x⟩²)/(n−1)) (0 for fewer
// than two values or a variance that rounding made negative).
func MeanAndError(sum, sum2 float64, n int) (mean, err float64) {
	if n < 1 {
		return 0, 0
	}
	mean = sum / float64(n)
	if v := sum2/float64(n) - mean*mean; v > 0 && n > 1 {
		err = math.Sqrt(v / float64(n-1))
	}
	return mean, err
}

// NLLStats accumulates negative log-likelihoods.
type NLLStats struct {
	N         int
	Sum, Sum2 float64 // Σ NLL, Σ NLL²
}

// Add counts one scored token.
func (s *NLLStats) Add(nll float64) {
	s.N++
	s.Sum += nll
	s.Sum2 += nll * nll
}

// PPL is exp(mean NLL) and its uncertainty PPL·σ(mean NLL): the numbers of
// llama-perplexity's "Final estimate: PPL = … +/- …".
func (s NLLStats) PPL() (ppl, err float64) {
	m, e := MeanAndError(s.Sum, s.Sum2, s.N)
	ppl = math.Exp(m)
	return ppl, ppl * e
}

// Percentile is the value a fraction f of the way through sorted values,
// interpolating linearly between neighbours (index f·(n−1)), as
// llama-perplexity's KL statistics do; the median is Percentile(v, 0.5).
func Percentile(sorted []float64, f float64) float64 {
	switch n := len(sorted); {
	case n == 0:
		return math.NaN()
	case f <= 0:
		return sorted[0]
	case f >= 1:
		return sorted[n-1]
	}
	p := f * float64(len(sorted)-1)
	i := int(p)
	p -= float64(i)
	return (1-p)*sorted[i] + p*sorted[min(i+1, len(sorted)-1)]
}
