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
