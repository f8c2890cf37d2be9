package server

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/bitvk/bitvk/tokenizer"
)

// maxLogitBias bounds the entries of a logit_bias: OpenAI takes 300.
const maxLogitBias = 1024

// parseLogitBias reads a request's logit_bias: OpenAI's object of token ids
// (as strings) to biases from −100 to 100, or llama-server's array of
// [token, bias] pairs, where the token may be an id or a text (every token
// of it gets the bias) and the bias a number or false (banned: −Inf).
// Absent or null is no bias.
func parseLogitBias(raw json.RawMessage, tok *tokenizer.Tokenizer) (map[int32]float32, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	const param = "logit_bias"
	vocab := tok.Len()
	out := map[int32]float32{}
	add := func(id int64, where string, v json.RawMessage) *apiError {
		if id < 0 || id >= int64(vocab) {
			return invalid(param, "'%s' is token %d, outside the vocabulary of %d", where, id, vocab)
		}
		var b float64
		var ban bool
		switch {
		case json.Unmarshal(v, &ban) == nil && !isNull(v):
			if ban {
				return invalid(param, "'%s' is true; a bias is a number, or false to ban the token", where)
			}
			out[int32(id)] = float32(math.Inf(-1))
			return nil
		case json.Unmarshal(v, &b) != nil || isNull(v):
			return invalid(param, "'%s' is %s; a bias is a number from -100 to 100 (or false to ban the token)", where, jsonKind(valueKind(v)))
		case math.IsNaN(b) || b < -100 || b > 100:
			return invalid(param, "'%s' is %v; a bias is a number from -100 to 100 (or false to ban the token)", where, b)
		}
		out[int32(id)] = float32(b)
		return nil
	}
	switch valueKind(raw) {
	case "object":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, invalid(param, "'logit_bias' is not an object of token ids to biases")
		}
		if len(m) > maxLogitBias {
			return nil, invalid(param, "'logit_bias' has %d entries; at most %d", len(m), maxLogitBias)
		}
		for k, v := range m {
			id, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				return nil, invalid(param, "'logit_bias' has the key %q; its keys are token ids", k)
			}
			if e := add(id, "logit_bias["+k+"]", v); e != nil {
				return nil, e
			}
		}
	case "array":
		var pairs []json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, invalid(param, "'logit_bias' is not an array of [token, bias] pairs")
		}
		if len(pairs) > maxLogitBias {
			return nil, invalid(param, "'logit_bias' has %d entries; at most %d", len(pairs), maxLogitBias)
		}
		for i, p := range pairs {
			var pair []json.RawMessage
			where := "logit_bias[" + strconv.Itoa(i) + "]"
			if json.Unmarshal(p, &pair) != nil || len(pair) != 2 {
				return nil, invalid(param, "'%s' is not a [token, bias] pair", where)
			}
			var id int64
			var text string
			switch {
			case json.Unmarshal(pair[0], &id) == nil && !isNull(pair[0]):
				if e := add(id, where, pair[1]); e != nil {
					return nil, e
				}
			case json.Unmarshal(pair[0], &text) == nil && !isNull(pair[0]):
				for _, id := range tok.Encode(text, tokenizer.EncodeOptions{}) {
					if e := add(int64(id), where, pair[1]); e != nil {
						return nil, e
					}
				}
			default:
				return nil, invalid(param, "'%s[0]' is %s; the token is an id or a text", where, jsonKind(valueKind(pair[0])))
			}
		}
	default:
		return nil, invalid(param, "'logit_bias' must be an object of token ids to biases (or llama-server's array of [token, bias] pairs), not %s", jsonKind(valueKind(raw)))
	}
	return out, nil
}
