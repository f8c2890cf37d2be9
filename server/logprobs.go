package server

import (
	"math"
	"slices"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// maxTopLogprobs is OpenAI's limit on top_logprobs.
const maxTopLogprobs = 20

// tokenLogprob is a drawn token's log-probability under the model (the
// log-softmax of its raw logits, before sampling's temperature, penalties
// and truncation, as OpenAI reports them) and the most likely tokens at
// its position.
type tokenLogprob struct {
	ID      int32
	Token   string  // the token's bytes as text
	Logprob float64 // ln p
	Top     []altLogprob
	None    bool // no log-probability: an echoed prompt's first token (null in the reply)
}

type altLogprob struct {
	ID      int32
	Token   string
	Logprob float64
}

// logprobOf computes y's log-probability under logits and the top k
// alternatives (most likely first, the lowest id first on ties).
func logprobOf(tok *tokenizer.Tokenizer, logits []float32, y int32, k int) *tokenLogprob {
	// One pass finds the top k (or only the maximum), a second sums the
	// exponentials (nn.ExpSum, a quarter of math.Exp's cost): this runs
	// once per token of every stream that asks for log-probabilities.
	var top []altLogprob
	mx := math.Inf(-1)
	if k > 0 {
		top = topLogits(logits, k)
		if len(top) > 0 {
			mx = top[0].Logprob
		}
	} else {
		for _, x := range logits {
			if x == x {
				mx = max(mx, float64(x))
			}
		}
	}
	logp := logSoftmax(logits, mx)
	lp := &tokenLogprob{ID: y, Token: tok.Piece(y), Logprob: logp(logits[y])}
	if k <= 0 {
		return lp
	}
	for i := range top {
		top[i].Token = tok.Piece(top[i].ID)
		top[i].Logprob = logp(float32(top[i].Logprob))
	}
	lp.Top = top
	return lp
}

// unlikely is the log-probability reported for a token of probability 0
// (a logit of −∞, a NaN, or a finite logit beside +∞), as OpenAI reports
// one it does not rank: JSON has no −∞ or NaN, and a stream must not end
// on a value it cannot encode.
const unlikely = -9999.0

// logSoftmax returns the function giving a logit's log-probability among
// logits, whose largest value other than NaN is mx: ln softmax, or, where
// some logits are +∞, probability shared equally among those.
func logSoftmax(logits []float32, mx float64) func(float32) float64 {
	if math.IsInf(mx, 1) {
		inf := 0
		for _, x := range logits {
			if math.IsInf(float64(x), 1) {
				inf++
			}
		}
		share := -math.Log(float64(inf))
		return func(x float32) float64 {
			if math.IsInf(float64(x), 1) {
				return share
			}
			return unlikely
		}
	}
	lse := mx + math.Log(nn.ExpSum(logits, mx))
	return func(x float32) float64 {
		v := float64(x) - lse
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return unlikely
		}
		return v
	}
}

// topLogits returns the k largest logits that are not NaN, largest first,
// the lowest id first on ties; Logprob holds the raw logit.
func topLogits(logits []float32, k int) []altLogprob {
	// A running top k, kept sorted: k ≤ 20, so insertion is cheap.
	top := make([]altLogprob, 0, k+1)
	for id, x := range logits {
		v := float64(x)
		if math.IsNaN(v) || len(top) == k && v <= top[k-1].Logprob {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, v, func(a altLogprob, v float64) int {
			if a.Logprob >= v {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, altLogprob{ID: int32(id), Logprob: v})
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// The shapes of logprobs in responses. Chat completions:
// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]};
// text completions: {"tokens", "token_logprobs", "top_logprobs": [{token:
// logprob}], "text_offset"}.
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"` // nil: null (an echoed prompt's first token)
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func byteList(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

func (lp *tokenLogprob) chat() chatTokenLogprob {
	c := chatTokenLogprob{Token: lp.Token, Logprob: lp.Logprob, Bytes: byteList(lp.Token), TopLogprobs: []chatTopLogprob{}}
	for _, a := range lp.Top {
		c.TopLogprobs = append(c.TopLogprobs, chatTopLogprob{Token: a.Token, Logprob: a.Logprob, Bytes: byteList(a.Token)})
	}
	return c
}

// add appends one token to text completion logprobs; offset is the
// length of the text before it.
func (t *textLogprobs) add(lp *tokenLogprob, offset int) {
	t.Tokens = append(t.Tokens, lp.Token)
	t.TextOffset = append(t.TextOffset, offset)
	if lp.None {
		t.TokenLogprobs = append(t.TokenLogprobs, nil)
		t.TopLogprobs = append(t.TopLogprobs, nil)
		return
	}
	t.TokenLogprobs = append(t.TokenLogprobs, &lp.Logprob)
	top := map[string]float64{}
	for _, a := range lp.Top {
		if _, ok := top[a.Token]; !ok {
			top[a.Token] = a.Logprob
		}
	}
	t.TopLogprobs = append(t.TopLogprobs, top)
}
