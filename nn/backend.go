package nn

// Backend evaluates one model on one device (the CPU, a Vulkan GPU). It owns
// the weights in the layout its kernels want and the K/V cache; the Engine
// owns everything else (which tokens are in the cache, sampling, limits).
//
// The interface is small on purpose: one forward call over a batch of
// positions. Everything inside (fused projections, recorded command
// buffers, worker pools) is the backend's business.
type Backend interface {
	// Name says what runs the model, e.g. "cpu (avx512vnni, 2 threads)".
	Name() string

	// Context is the number of positions the K/V cache holds.
	Context() int

	// Forward evaluates tokens at positions pos, pos+1, …, pos+len(tokens)−1:
	// their keys and values are written into the cache (replacing whatever
	// those positions held) and each token attends to positions 0 through its
	// own. Positions before pos must hold the keys and values of earlier
	// calls. logits receives, by its length: nothing (0), the last token's
	// logits (vocab), or every token's, token-major (len(tokens)·vocab).
	// The caller guarantees 0 ≤ pos, pos+len(tokens) ≤ Context() and every
	// token in [0, vocab).
	Forward(tokens []int32, pos int, logits []float32) error

	// Close releases what the backend holds. The backend is unusable after.
	Close() error
}

// Stage names a point inside a layer where a Tracer reports the residual
// stream.
type Stage int

const (
	StageAttention Stage = iota // after the attention block's residual add
	StageFFN                    // after the feed-forward block's residual add
)

func (s Stage) String() string {
	if s == StageAttention {
		return "attention"
	}
	return "ffn"
}

// A Tracer is a Backend that can also report the residual stream inside the
// forward pass, so that `bitvk check` can name the layer and block where two
// backends part.
type Tracer interface {
	Backend
	// ForwardTrace is Forward that also calls fn after each block of each
	// layer with the residual stream of the tokens, [len(tokens)][Embd]
	// token-major; x is valid only during the call.
	ForwardTrace(tokens []int32, pos int, logits []float32, fn func(layer int, s Stage, x []float32)) error
}

// A Picker is a Backend that can pick the greedy next token itself, so that
// a decode step reads back one id instead of the logits.
type Picker interface {
	Backend
	// ForwardArgmax is Forward returning the index of the largest logit
	// after the last token (the lowest on ties, NaNs ignored, −1 when all
	// are NaN) instead of the logits.
	ForwardArgmax(tokens []int32, pos int) (int32, error)
}

// A SamplingPicker is a Backend that can run a Sampler's selection on its
// device, so that a sampling decode step reads back a few candidates
// instead of the logits.
type SamplingPicker interface {
	Backend
	// ForwardSample is Forward returning the token s.Sample would return
	// for the logits after the last token and history (the ids generated
	// so far, tokens included: the penalties' window), consuming the same
	// draws of s. The logits are not returned.
	ForwardSample(tokens []int32, pos int, s *Sampler, history []int32) (int32, error)
}
