package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
)

// The request bodies of POST /v1/chat/completions and /v1/completions, as
// OpenAI defines them, with llama.cpp's extensions top_k, min_p,
// typical_p, mirostat (with mirostat_tau and mirostat_eta), xtc_probability
// and xtc_threshold, the dry_* fields, repeat_penalty and ignore_eos. Fields this server does not know are
// ignored, as OpenAI's own clients send many; fields it knows but does not
// implement (tools, best_of, …) are refused when they ask for something, so
// that no client is silently given less than it asked.

// commonRequest holds the fields both endpoints take.
type commonRequest struct {
	Model         string         `json:"model"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	MaxTokens     *int           `json:"max_tokens"`
	Temperature   *float64       `json:"temperature"`
	TopP          *float64       `json:"top_p"`
	TopK          *int           `json:"top_k"`
	MinP          *float64       `json:"min_p"`
	llamaSampling
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	N                *int            `json:"n"`
	Logprobs         json.RawMessage `json:"logprobs"`
	IgnoreEOS        bool            `json:"ignore_eos"`
	LogitBias        json.RawMessage `json:"logit_bias"`

	maxStops int // the most stop strings taken; 0: OpenAI's maxStops
}

// llamaSampling holds llama.cpp's samplers beyond OpenAI's, which the
// OpenAI endpoints and llama-server's /completion both take.
type llamaSampling struct {
	TypicalP         *float64  `json:"typical_p"`
	Mirostat         *int      `json:"mirostat"`
	MirostatTau      *float64  `json:"mirostat_tau"`
	MirostatEta      *float64  `json:"mirostat_eta"`
	XTCProbability   *float64  `json:"xtc_probability"`
	XTCThreshold     *float64  `json:"xtc_threshold"`
	DRYMultiplier    *float64  `json:"dry_multiplier"`
	DRYBase          *float64  `json:"dry_base"`
	DRYAllowedLength *int      `json:"dry_allowed_length"`
	DRYPenaltyLastN  *int      `json:"dry_penalty_last_n"`
	DRYBreakers      *[]string `json:"dry_sequence_breakers"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatRequest struct {
	commonRequest
	Messages            []chatMessage   `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	TopLogprobs         *int            `json:"top_logprobs"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Functions           json.RawMessage `json:"functions"`
	FunctionCall        json.RawMessage `json:"function_call"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type completionRequest struct {
	commonRequest
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	BestOf *int            `json:"best_of"`
	Suffix *string         `json:"suffix"`
}

// apiError is an error in OpenAI's shape:
// {"error": {"message": …, "type": …, "param": …, "code": …}}.
type apiError struct {
	status     int
	retryAfter int     // seconds, for 503; 0: no Retry-After
	Message    string  `json:"message"`
	Type       string  `json:"type"`
	Param      *string `json:"param"`
	Code       *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func newError(status int, typ, code, param, format string, a ...any) *apiError {
	e := &apiError{status: status, Type: typ, Message: fmt.Sprintf(format, a...)}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

// rename makes an error about the field from one about the field to: the
// endpoints of llama-server and Ollama name some shared fields their own
// way (n_predict, options.temperature).
func (e *apiError) rename(from, to string) *apiError {
	if e.Param == nil || *e.Param != from {
		return e
	}
	e.Param = &to
	e.Message = strings.ReplaceAll(e.Message, "'"+from+"'", "'"+to+"'")
	return e
}

// invalid is a 400 about the request's content; param names the field.
func invalid(param, format string, a ...any) *apiError {
	return newError(http.StatusBadRequest, "invalid_request_error", "", param, format, a...)
}

// writeError sends e as the response.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if e.retryAfter > 0 {
		h.Set("Retry-After", fmt.Sprint(e.retryAfter))
	}
	if e.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="bitvk"`)
	}
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

// decodeBody reads one JSON object from r's body, at most limit bytes,
// into v. Every failure is a 400 (413 past the limit) that says what was
// wrong and where.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) *apiError {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if err == nil {
		if err = dec.Decode(&json.RawMessage{}); err == io.EOF {
			err = nil
		} else if err == nil {
			return invalid("", "the request body holds more than one JSON value; send one object")
		}
	}
	var (
		maxErr  *http.MaxBytesError
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "",
			"the request body is larger than this server's limit of %d bytes (--max-body)", maxErr.Limit)
	case err == io.EOF:
		return invalid("", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", "the request body is not valid JSON: it ends in the middle of a value")
	case errors.As(err, &syntax):
		return invalid("", "the request body is not valid JSON: %v (at byte %d)", syntax, syntax.Offset)
	case err != nil:
		return invalid("", "could not read the request body: %v", err)
	case raw[0] != '{':
		return invalid("", "the request body must be a JSON object, not %s", jsonKind(valueKind(raw)))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if !errors.As(err, &typeErr) {
			return invalid("", "could not read the request body: %v", err)
		}
		// The path names the embedded structs of the shared fields; a
		// client knows only the JSON names.
		field := strings.TrimPrefix(typeErr.Field, "commonRequest.")
		field = strings.TrimPrefix(field, "llamaSampling.")
		want := wantKind(typeErr.Type)
		if num, ok := strings.CutPrefix(typeErr.Value, "number "); ok && outOfRange(num, want) {
			return invalid(field, "'%s' is %s, out of range for %s", field, num, want)
		}
		return invalid(field, "'%s' must be %s, not %s", field, want, jsonKind(typeErr.Value))
	}
	return nil
}

// valueKind names the kind of a JSON value by its first byte, as a type
// error does.
func valueKind(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// outOfRange reports whether a JSON number that did not fit the Go type
// that wants it (an integer, or a number) is of the right kind but too
// large: an integer written without fraction or exponent, or any number
// for a float.
func outOfRange(num, want string) bool {
	if want == "a number" {
		return true
	}
	return want == "an integer" && strings.Trim(strings.TrimPrefix(num, "-"), "0123456789") == ""
}

// jsonKind names the JSON value a type error saw ("number 1.5", "string").
func jsonKind(v string) string {
	switch {
	case v == "array" || v == "object":
		return "an " + v
	case v == "null":
		return v
	case strings.HasPrefix(v, "number "):
		return "the " + v
	case v == "bool":
		return "a boolean"
	}
	return "a " + v
}

// wantKind names the JSON value a Go type takes.
func wantKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// isNull reports whether a raw field is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// parseContent reads a message's content: a string, or an array of text
// parts ({"type": "text", "text": …}) joined by newlines.
func parseContent(raw json.RawMessage, param string) (string, *apiError) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "'%s' must be a string or an array of text parts", param)
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		var part struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		pp := fmt.Sprintf("%s[%d]", param, i)
		if err := json.Unmarshal(p, &part); err != nil {
			return "", invalid(pp, "'%s' must be an object {\"type\": \"text\", \"text\": \"…\"}", pp)
		}
		if part.Type != "text" {
			return "", invalid(pp+".type", "'%s.type' is %q: this server takes only text parts", pp, part.Type)
		}
		if part.Text == nil {
			return "", invalid(pp+".text", "'%s.text' is missing", pp)
		}
		texts = append(texts, *part.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// parseStop reads stop: a string or an array of up to limit strings.
// Empty strings are dropped.
func parseStop(raw json.RawMessage, limit int) ([]string, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, invalid("stop", "'stop' must be a string or an array of strings")
	}
	if len(many) > limit {
		return nil, invalid("stop", "'stop' has %d strings; at most %d are allowed", len(many), limit)
	}
	var out []string
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// maxStops is OpenAI's limit on stop strings. llama-server and Ollama
// have none, and their clients send more (editors' completions, a
// Modelfile's stop parameters), so their endpoints take up to
// maxNativeStops.
const (
	maxStops       = 4
	maxNativeStops = 64
)

// asks reports whether a field this server does not implement asks for
// something: it is there and not null, false, "", [] or {}.
func asks(raw json.RawMessage) bool {
	if isNull(raw) {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// checkRange validates an optional number against [lo, hi].
func checkRange(param string, v *float64, lo, hi float64) *apiError {
	if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
		return invalid(param, "'%s' is %v; it must be between %v and %v", param, *v, lo, hi)
	}
	return nil
}

// maxChoices bounds n: each choice takes a slot.
const maxChoices = 16

// Bounds of the DRY fields: a repeat length no context reaches, and
// llama.cpp's 40 bytes per sequence breaker.
const (
	maxDRYLength     = 1 << 20
	maxDRYBreakers   = 64
	maxDRYBreakerLen = 40
)
