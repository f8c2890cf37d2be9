package nn

import "fmt"

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

// A SeqToken is one token of a multi-sequence batch: the sequence (slot of
// the K/V cache) it belongs to, its position there, and whether its logits
// are wanted.
type SeqToken struct {
	Token  int32
	Seq    int  // the slot, 0 ≤ Seq < Slots()
	Pos    int  // its position in that slot's sequence, 0 ≤ Pos < Context()
	Logits bool // return the logits after it
}

// A MultiBackend is a Backend whose K/V cache holds several independent
// sequences (slots) of Context() positions each, and evaluates tokens of
// several of them in one pass: the weights are read once for all, which is
// what serving several users at once needs (decode is memory-bound).
// Forward is ForwardMulti over slot 0.
type MultiBackend interface {
	Backend

	// Slots is the number of sequences the cache holds.
	Slots() int

	// ForwardMulti evaluates each token at its own position of its own
	// slot: its key and value are written to that slot's cache, and it
	// attends to that slot's positions 0 through its own, never another
	// slot's. Positions below a token's, in its slot, must hold the keys
	// and values of earlier calls or of tokens earlier in batch (a
	// sequence's tokens are listed in increasing position). logits
	// receives the logits of the tokens with Logits set, in batch order
	// ([count][vocab]). A token gets the logits it would get alone: on
	// the CPU bit for bit.
	ForwardMulti(batch []SeqToken, logits []float32) error

	// CopySeq copies the keys and values of positions 0…n−1 of slot src
	// into slot dst (a shared prefix evaluated once).
	CopySeq(dst, src, n int) error
}

// AsMulti returns b as a MultiBackend: b itself when it is one, else a
// one-slot view whose ForwardMulti takes the tokens of slot 0 at
// consecutive positions (one Forward call).
func AsMulti(b Backend) MultiBackend {
	if m, ok := b.(MultiBackend); ok {
		return m
	}
	return singleSlot{b}
}

// singleSlot is a Backend seen as a MultiBackend of one slot.
type singleSlot struct{ Backend }

func (singleSlot) Slots() int { return 1 }

func (s singleSlot) ForwardMulti(batch []SeqToken, logits []float32) error {
	if len(batch) == 0 {
		return nil
	}
	toks := make([]int32, len(batch))
	want := 0
	for i, t := range batch {
		if t.Seq != 0 {
			return fmt.Errorf("nn: token %d of the batch is for slot %d; backend %s has one slot", i, t.Seq, s.Name())
		}
		if t.Pos != batch[0].Pos+i {
			return fmt.Errorf("nn: token %d of the batch is at position %d, not %d: a one-slot backend takes consecutive positions", i, t.Pos, batch[0].Pos+i)
		}
		if t.Logits {
			want++
		}
		toks[i] = t.Token
	}
	switch {
	case want == 0:
		return s.Forward(toks, batch[0].Pos, nil)
	case want == 1 && batch[len(batch)-1].Logits:
		return s.Forward(toks, batch[0].Pos, logits)
	case want == len(batch):
		return s.Forward(toks, batch[0].Pos, logits)
	}
	return fmt.Errorf("nn: a one-slot backend returns the logits of the last token or of every token, not of %d of %d", want, len(batch))
}

func (s singleSlot) CopySeq(dst, src, n int) error {
	if dst == 0 && src == 0 {
		return nil
	}
	return fmt.Errorf("nn: slots %d and %d: backend %s has one slot", dst, src, s.Name())
}
