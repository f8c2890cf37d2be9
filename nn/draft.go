package nn

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
