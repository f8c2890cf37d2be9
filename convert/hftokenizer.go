package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// Pre-tokenizer regexes of Hugging Face tokenizers, by the name llama.cpp
// (tokenizer.ggml.pre) gives the split. A tokenizer.json is recognized by
// its regex, exactly; any other split is an error rather than a guess.
var preTokenizerRegexes = map[string]string{
	// LLaMA-3 (and BitNet b1.58 2B4T, which uses its vocabulary).
	"llama-bpe": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	// GPT-2's, also what a ByteLevel pre-tokenizer with use_regex applies.
	"gpt-2": `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
}

// The end-of-turn token of LLaMA-3's chat format.
const eotToken = "<|eot_id|>"

// hfTokenizer is the part of tokenizer.json that bitvk reads.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         hfBPE           `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"`
}

type hfBPE struct {
	Type         string            `json:"type"`
	Vocab        map[string]int32  `json:"vocab"`
	Merges       []json.RawMessage `json:"merges"`
	ByteFallback bool              `json:"byte_fallback"`
}

// preTokenizer is one node of tokenizer.json's pre_tokenizer.
type preTokenizer struct {
	Type          string         `json:"type"`
	Pretokenizers []preTokenizer `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// readHFTokenizer reads dir/tokenizer.json and dir/tokenizer_config.json
// (and chat_template.jinja when tokenizer_config.json has no template) as a
// byte-level BPE vocabulary of vocabSize tokens, the embedding's rows; ids
// the tokenizer leaves unused become [PADn] tokens, as llama.cpp's converter
// writes them. bos and eos are config.json's ids (-1: absent), used when
// tokenizer_config.json names no token.
func readHFTokenizer(dir string, vocabSize int, bos, eos int32) (*tokenizer.Vocab, error) {
	path := filepath.Join(dir, "tokenizer.json")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no tokenizer.json: give the vocabulary with --vocab VOCAB.gguf (a GGUF holding tokenizer keys, as bitvk tokenizer-train writes)", dir)
	}
	if err != nil {
		return nil, err
	}
	var ht hfTokenizer
	if err := json.Unmarshal(raw, &ht); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
	}
	switch {
	case ht.Model.Type != "BPE":
		return nil, bad("model type %q: bitvk reads byte-level BPE tokenizers from tokenizer.json; for others give --vocab VOCAB.gguf", ht.Model.Type)
	case ht.Model.ByteFallback:
		return nil, bad("a BPE model with byte_fallback is SentencePiece-style, which bitvk does not read from tokenizer.json; give --vocab VOCAB.gguf (a GGUF with the model's tokenizer)")
	case !isNull(ht.Normalizer):
		return nil, bad("the tokenizer has a normalizer (%s), which bitvk's byte-level BPE does not apply; give --vocab VOCAB.gguf", compact(ht.Normalizer))
	}
	v := tokenizer.NewVocab()
	v.Model = "gpt2"
	if v.Pre, err = recognizePreTokenizer(ht.PreTokenizer); err != nil {
		return nil, bad("%v", err)
	}
	if err := fillTokens(v, &ht, vocabSize); err != nil {
		return nil, bad("%v", err)
	}
	for i, m := range ht.Model.Merges {
		s, err := mergeText(m)
		if err != nil {
			return nil, bad("merge %d: %v", i, err)
		}
		v.Merges = append(v.Merges, s)
	}
	if v.Merges == nil {
		v.Merges = []string{}
	}
	if err := readTokenizerConfig(dir, v, bos, eos); err != nil {
		return nil, err
	}
	if _, err := tokenizer.New(v); err != nil {
		return nil, fmt.Errorf("%s: the vocabulary read from it does not build a tokenizer: %v", path, err)
	}
	return v, nil
}

// fillTokens lays the vocabulary and the added tokens out by id. Added
// tokens marked special become control tokens, the others user-defined
// (matched whole in text), as llama.cpp's converter types them.
func fillTokens(v *tokenizer.Vocab, ht *hfTokenizer, vocabSize int) error {
	n := vocabSize
	for tok, id := range ht.Model.Vocab {
		if id < 0 || int(id) >= n {
			return fmt.Errorf("token %q has id %d, outside the model's %d embedding rows (vocab_size in config.json)", tok, id, n)
		}
	}
	for _, a := range ht.AddedTokens {
		if a.ID < 0 || int(a.ID) >= n {
			return fmt.Errorf("added token %q has id %d, outside the model's %d embedding rows (vocab_size in config.json)", a.Content, a.ID, n)
		}
	}
	v.Tokens = make([]string, n)
	v.Types = make([]int32, n)
	set := make([]bool, n)
	for tok, id := range ht.Model.Vocab {
		if set[id] {
			return fmt.Errorf("id %d is given to both %q and %q", id, v.Tokens[id], tok)
		}
		v.Tokens[id], v.Types[id], set[id] = tok, nn.TokenNormal, true
	}
	for _, a := range ht.AddedTokens {
		if set[a.ID] && v.Tokens[a.ID] != a.Content {
			return fmt.Errorf("added token %q has id %d, which the vocabulary gives to %q", a.Content, a.ID, v.Tokens[a.ID])
		}
		v.Tokens[a.ID], set[a.ID] = a.Content, true
		v.Types[a.ID] = nn.TokenUserDefined
		if a.Special {
			v.Types[a.ID] = nn.TokenControl
		}
	}
	for id := range v.Tokens {
		if !set[id] {
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), nn.TokenUnused
		}
	}
	return nil
}

// recognizePreTokenizer names the split of a byte-level BPE pre_tokenizer:
// a Split by a known regex followed by ByteLevel without its own regex, or
// a lone ByteLevel with GPT-2's regex.
func recognizePreTokenizer(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", fmt.Errorf("pre_tokenizer is missing: a byte-level BPE tokenizer needs one")
	}
	var p preTokenizer
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("pre_tokenizer: %v", err)
	}
	unknown := fmt.Errorf("pre_tokenizer %s is not one bitvk knows (it recognizes LLaMA-3's and GPT-2's byte-level splits); give --vocab VOCAB.gguf with the model's tokenizer", compact(raw))
	nodes := []preTokenizer{p}
	if p.Type == "Sequence" {
		nodes = p.Pretokenizers
	}
	switch len(nodes) {
	case 1:
		b := nodes[0]
		if b.Type == "ByteLevel" && !b.AddPrefixSpace && (b.UseRegex == nil || *b.UseRegex) {
			return "gpt-2", nil
		}
	case 2:
		s, b := nodes[0], nodes[1]
		if s.Type != "Split" || s.Pattern == nil || s.Pattern.Regex == nil || s.Invert || s.Behavior != "Isolated" {
			return "", unknown
		}
		if b.Type != "ByteLevel" || b.AddPrefixSpace || b.UseRegex == nil || *b.UseRegex {
			return "", unknown
		}
		for name, re := range preTokenizerRegexes {
			if *s.Pattern.Regex == re {
				return name, nil
			}
		}
	}
	return "", unknown
}

// mergeText reads a merge in either form tokenizers writes: "a b" or
// ["a", "b"].
func mergeText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.Count(s, " ") != 1 {
			return "", fmt.Errorf("%q is not two tokens separated by one space", s)
		}
		return s, nil
	}
	var pair []string
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return "", fmt.Errorf("%s is neither \"a b\" nor [\"a\", \"b\"]", compact(raw))
	}
	if pair[0] == "" || pair[1] == "" || strings.Contains(pair[0]+pair[1], " ") {
		return "", fmt.Errorf("%q and %q: a merged token is empty or holds a space, which GGUF's \"a b\" merges cannot express", pair[0], pair[1])
	}
	return pair[0] + " " + pair[1], nil
}

// hfTokenizerConfig is the part of tokenizer_config.json that bitvk reads.
type hfTokenizerConfig struct {
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
	PadToken     json.RawMessage `json:"pad_token"`
	UnkToken     json.RawMessage `json:"unk_token"`
	AddBOSToken  *bool           `json:"add_bos_token"`
	AddEOSToken  *bool           `json:"add_eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// readTokenizerConfig sets the special ids, the add-BOS/EOS flags and the
// chat template from tokenizer_config.json (optional) and config.json's
// ids; <|eot_id|> is the end of turn when the vocabulary has it.
func readTokenizerConfig(dir string, v *tokenizer.Vocab, bos, eos int32) error {
	path := filepath.Join(dir, "tokenizer_config.json")
	var tc hfTokenizerConfig
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &tc); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	ids := make(map[string]int32, len(v.Tokens))
	for i, t := range v.Tokens {
		ids[t] = int32(i)
	}
	for _, s := range []struct {
		what     string
		raw      json.RawMessage
		fallback int32
		dst      *int32
	}{{"bos_token", tc.BOSToken, bos, &v.BOS}, {"eos_token", tc.EOSToken, eos, &v.EOS}, {"pad_token", tc.PadToken, -1, &v.Pad}, {"unk_token", tc.UnkToken, -1, &v.Unknown}} {
		text, err := tokenText(s.raw)
		if err != nil {
			return fmt.Errorf("%s: %s: %v", path, s.what, err)
		}
		if text == "" {
			if s.fallback >= int32(len(v.Tokens)) {
				return fmt.Errorf("config.json: %s id %d is outside the vocabulary of %d tokens", strings.TrimSuffix(s.what, "_token"), s.fallback, len(v.Tokens))
			}
			*s.dst = max(-1, s.fallback)
			continue
		}
		id, ok := ids[text]
		if !ok {
			return fmt.Errorf("%s: %s %q is not in the vocabulary", path, s.what, text)
		}
		*s.dst = id
	}
	if id, ok := ids[eotToken]; ok {
		v.EOT = id
	}
	if tc.AddBOSToken != nil {
		v.AddBOS, v.HasAddBOS = *tc.AddBOSToken, true
	}
	if tc.AddEOSToken != nil {
		v.AddEOS, v.HasAddEOS = *tc.AddEOSToken, true
	}
	if v.ChatTemplate, err = chatTemplate(tc.ChatTemplate); err != nil {
		return fmt.Errorf("%s: chat_template: %v", path, err)
	}
	if v.ChatTemplate == "" {
		jinja, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		v.ChatTemplate = string(jinja)
	}
	return nil
}

// tokenText reads a special token given as a string or as an added-token
// object {"content": …}; "" when absent or null.
func tokenText(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("%s is neither a string nor {\"content\": …}", compact(raw))
	}
	return *obj.Content, nil
}

// chatTemplate reads chat_template: a string, or a list of {"name",
// "template"} of which "default" is taken.
func chatTemplate(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("neither a string nor a list of named templates")
	}
	for _, t := range list {
		if t.Name == "default" {
			return t.Template, nil
		}
	}
	return "", fmt.Errorf("a list of named templates without one named \"default\"")
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// compact shortens a JSON value for an error message.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	s := b.String()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
