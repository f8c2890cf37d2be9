// Package tokenizer turns text into token ids and back for the BitNet b1.58
// family: byte-level BPE (tokenizer.ggml.model gpt2: LLaMA-3's vocabulary in
// BitNet b1.58 2B4T, Falcon3, Falcon-E) and SentencePiece BPE (llama:
// LLaMA-2's vocabulary in 1bitLLM's models), with special tokens, streaming
// decoding and chat templates. It reproduces llama.cpp's tokenization id for
// id; docs/TOKENIZER.md says where and why it differs.
//
// The package reads no files: a Vocab holds the tokenizer.ggml.* metadata
// (package nn reads it from GGUF) and New checks it and builds a Tokenizer.
// A Tokenizer is immutable and safe for concurrent use.
package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// TokenType is the kind of a token, as tokenizer.ggml.token_type numbers it.
type TokenType int32

const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3 // BOS, EOS, <|eot_id|>…: text only when asked for
	TypeUserDefined TokenType = 4 // always matched in the input as a whole
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6 // <0xNN> byte fallback
)

// Vocab is a tokenizer's description as GGUF files store it (the
// tokenizer.ggml.* keys). Ids are -1 when the file does not give them, so
// start from NewVocab: in a zero Vocab every id is 0.
type Vocab struct {
	Model  string    // "gpt2" (byte-level BPE) or "llama" (SentencePiece)
	Pre    string    // pre-tokenizer name (gpt2 only); "" when absent
	Tokens []string  // token text, by id
	Types  []int32   // TokenType by id; nil: all normal
	Merges []string  // "left right", by rank (gpt2 only)
	Scores []float32 // merge priority by id (llama only); nil: all 0

	BOS, EOS, EOT, EOM, Pad, Unknown int32

	// AddBOS and AddEOS say whether Encode adds BOS and EOS; HasAddBOS and
	// HasAddEOS whether the file said so (otherwise the model type decides,
	// as in llama.cpp). AddSpacePrefix likewise (SentencePiece only).
	AddBOS, HasAddBOS                 bool
	AddEOS, HasAddEOS                 bool
	AddSpacePrefix, HasAddSpacePrefix bool

	ChatTemplate string // tokenizer.chat_template (Jinja), "" when absent
}

// NewVocab returns an empty Vocab with every special id -1.
func NewVocab() *Vocab {
	return &Vocab{BOS: -1, EOS: -1, EOT: -1, EOM: -1, Pad: -1, Unknown: -1}
}

type modelKind int

const (
	kindBPE modelKind = iota
	kindSPM
)

// Tokenizer encodes and decodes text with one vocabulary.
type Tokenizer struct {
	kind  modelKind
	model string
	pre   string

	tokens []string
	types  []TokenType
	scores []float32
	ids    map[string]int32

	bos, eos, eot, eom, pad, unk int32
	addBOS, addEOS               bool
	addSpacePrefix               bool

	eog      []int32 // sorted
	specials []int32 // control, user-defined and unknown tokens, longest text first
	userDef  bool    // some special is user-defined (matched even without ParseSpecial)

	// byte-level BPE
	preKind      preKind
	ignoreMerges bool
	bpe          *bpe

	// SentencePiece
	byteTok     [256]int32 // <0xNN> token of each byte, -1 when none
	spmWordSafe bool       // words can be merged one at a time (see mergeSPM)

	pieces []string // decoded bytes of each token (control text included)
	hidden []bool   // left out of Decode: control, unknown, unused tokens

	chatTemplate string
	notes        []string
}

// These recognize LLaMA-3's vocabulary when a file does not
// name its pre-tokenizer (Microsoft's BitNet b1.58 2B4T file does not).
const (
	llama3Size    = 128256
	llama3BOSID   = 128000
	llama3BOSText = "<|begin_of_text|>"
)

// New checks a vocabulary and builds its tokenizer. Every inconsistency is
// an error that says what is wrong: ids out of range, arrays of different
// lengths, duplicate tokens, malformed merges, unknown model or pre-tokenizer.
func New(v *Vocab) (*Tokenizer, error) {
	if v == nil {
		return nil, fmt.Errorf("tokenizer: no vocabulary")
	}
	// Copies, so that later edits to v cannot change the tokenizer.
	t := &Tokenizer{model: v.Model, tokens: slices.Clone(v.Tokens), chatTemplate: v.ChatTemplate}
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: the vocabulary has no tokens")
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("tokenizer: %d tokens do not fit 32-bit ids", n)
	}
	switch v.Model {
	case "gpt2":
		t.kind = kindBPE
	case "llama":
		t.kind = kindSPM
	default:
		return nil, fmt.Errorf("tokenizer: unknown tokenizer model %q (bitvk supports gpt2, byte-level BPE, and llama, SentencePiece)", v.Model)
	}
	if err := t.setTypes(v); err != nil {
		return nil, err
	}
	if v.Scores != nil {
		if len(v.Scores) != n {
			return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
		}
		t.scores = slices.Clone(v.Scores)
	}
	t.ids = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if s == "" {
			continue // llama.cpp renames it; it can never match
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokenizer: token %q appears twice, as ids %d and %d", s, j, i)
		}
		t.ids[s] = int32(i)
	}
	if err := t.setSpecialIDs(v); err != nil {
		return nil, err
	}
	switch t.kind {
	case kindBPE:
		if err := t.initBPE(v); err != nil {
			return nil, err
		}
	case kindSPM:
		t.initSPM(v)
	}
	if v.HasAddEOS {
		t.addEOS = v.AddEOS
	}
	if v.HasAddBOS {
		t.addBOS = v.AddBOS
	}
	if t.addBOS && t.bos < 0 {
		if v.HasAddBOS {
			return nil, fmt.Errorf("tokenizer: the vocabulary asks for a BOS token but has no BOS id")
		}
		t.addBOS = false
		t.notes = append(t.notes, "the vocabulary has no BOS id, so none is added")
	}
	if t.addEOS && t.eos < 0 {
		return nil, fmt.Errorf("tokenizer: the vocabulary asks for an EOS token but has no EOS id")
	}
	t.findEndOfGeneration()
	t.findSpecials()
	t.buildPieces()
	return t, nil
}

func (t *Tokenizer) setTypes(v *Vocab) error {
	n := len(v.Tokens)
	t.types = make([]TokenType, n)
	if v.Types == nil {
		for i := range t.types {
			t.types[i] = TypeNormal
		}
		return nil
	}
	if len(v.Types) != n {
		return fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	for i, ty := range v.Types {
		if ty < int32(TypeUndefined) || ty > int32(TypeByte) {
			return fmt.Errorf("tokenizer: token %d %q has type %d (valid types are 0 to 6)", i, v.Tokens[i], ty)
		}
		t.types[i] = TokenType(ty)
	}
	return nil
}

func (t *Tokenizer) setSpecialIDs(v *Vocab) error {
	n := int32(len(v.Tokens))
	for _, s := range []struct {
		name string
		id   int32
		dst  *int32
	}{{"BOS", v.BOS, &t.bos}, {"EOS", v.EOS, &t.eos}, {"EOT", v.EOT, &t.eot}, {"EOM", v.EOM, &t.eom}, {"padding", v.Pad, &t.pad}, {"unknown", v.Unknown, &t.unk}} {
		if s.id < -1 || s.id >= n {
			return fmt.Errorf("tokenizer: %s token id %d is out of range (the vocabulary has %d tokens)", s.name, s.id, n)
		}
		*s.dst = s.id
	}
	return nil
}

func (t *Tokenizer) initBPE(v *Vocab) error {
	if v.Merges == nil {
		return fmt.Errorf("tokenizer: byte-level BPE vocabulary (gpt2) has no merges")
	}
	t.pre = v.Pre
	if t.pre == "" {
		n := len(v.Tokens)
		if n == llama3Size && v.Tokens[llama3BOSID] == llama3BOSText {
			t.pre = "llama-bpe"
			t.notes = append(t.notes, "the vocabulary names no pre-tokenizer (tokenizer.ggml.pre); it is LLaMA-3's, so llama-bpe is used")
		} else {
			t.pre = "default"
			t.notes = append(t.notes, "the vocabulary names no pre-tokenizer (tokenizer.ggml.pre); using llama.cpp's default, which may split text differently from the model's training")
		}
	}
	kind, ok := preTokenizers[t.pre]
	if !ok {
		return fmt.Errorf("tokenizer: unknown pre-tokenizer %q (bitvk knows %s)", t.pre, strings.Join(PreTokenizers(), ", "))
	}
	t.preKind = kind
	if kind == preLlama3 {
		// LLaMA-3's tokenizer takes whole-word tokens before merging and
		// adds BOS unless the file says otherwise (llama.cpp does the same).
		t.ignoreMerges = true
		t.addBOS = true
	}
	m, err := newBPE(v.Tokens, t.ids, v.Merges)
	if err != nil {
		return err
	}
	t.bpe = m
	if m.missing > 0 {
		t.notes = append(t.notes, fmt.Sprintf("the vocabulary lacks %d of the 256 byte tokens: text with those bytes loses them", m.missing))
	}
	return nil
}

func (t *Tokenizer) initSPM(v *Vocab) {
	t.pre = ""
	n := int32(len(v.Tokens))
	// llama.cpp's defaults for SentencePiece vocabularies that do not say.
	for _, d := range []struct {
		dst  *int32
		id   int32
		have bool
	}{{&t.bos, 1, v.BOS >= 0}, {&t.eos, 2, v.EOS >= 0}, {&t.unk, 0, v.Unknown >= 0}} {
		if !d.have && d.id < n {
			*d.dst = d.id
		}
	}
	t.addBOS = true
	t.addSpacePrefix = true
	if v.HasAddSpacePrefix {
		t.addSpacePrefix = v.AddSpacePrefix
	}
	t.spmWordSafe = wordSafe(v.Tokens)
	const hex = "0123456789ABCDEF"
	for b := 0; b < 256; b++ {
		t.byteTok[b] = -1
		if id, ok := t.ids["<0x"+string(hex[b>>4])+string(hex[b&15])+">"]; ok {
			t.byteTok[b] = id
		} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
			t.byteTok[b] = id
		}
	}
}

// eotTexts are tokens that end a turn, in the order llama.cpp looks for an
// EOT id when the file gives none.
var eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}

// eogTexts are tokens that end generation, as llama.cpp lists them (for the
// vocabularies of the families bitvk runs).
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<｜end▁of▁sentence｜>"}

// findEndOfGeneration fills in EOT and EOM from token text when the file does
// not give them, and collects the end-of-generation set: EOS, EOT, EOM and
// every token named in eogTexts. Such tokens count as control tokens even if
// the file typed them otherwise (llama.cpp does the same).
func (t *Tokenizer) findEndOfGeneration() {
	if t.eot < 0 {
		for _, s := range eotTexts {
			if id, ok := t.ids[s]; ok {
				t.eot = id
				break
			}
		}
	}
	if t.eom < 0 {
		if id, ok := t.ids["<|eom_id|>"]; ok {
			t.eom = id
		}
	}
	set := map[int32]bool{}
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok {
			set[id] = true
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id >= 0 {
			set[id] = true
		}
	}
	for id := range set {
		t.eog = append(t.eog, id)
		if t.types[id] != TypeControl && t.types[id] != TypeUserDefined {
			t.types[id] = TypeControl
		}
	}
	slices.Sort(t.eog)
}

// findSpecials lists the tokens matched as a whole in the input before
// tokenizing, longest first so that a longer one wins over its prefix.
func (t *Tokenizer) findSpecials() {
	for id, ty := range t.types {
		if (ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown) && t.tokens[id] != "" {
			t.specials = append(t.specials, int32(id))
			if ty == TypeUserDefined {
				t.userDef = true
			}
		}
	}
	sort.SliceStable(t.specials, func(i, j int) bool {
		return len(t.tokens[t.specials[i]]) > len(t.tokens[t.specials[j]])
	})
}

// EncodeOptions change what Encode adds and parses.
type EncodeOptions struct {
	// NoBOS leaves out the BOS (and EOS) tokens the vocabulary asks for.
	NoBOS bool
	// ParseSpecial makes the text of control tokens in the input (such as
	// "<|eot_id|>") their ids; otherwise it is tokenized as plain text.
	// User-defined tokens are always matched.
	ParseSpecial bool
	// Plain, with ParseSpecial, are byte ranges of the input in which
	// control-token text stays plain text (the messages inside a rendered
	// chat template: Template.ApplyRanges). Ascending, not overlapping.
	Plain []Range
}

// Range is the bytes [Start, End) of a text.
type Range struct{ Start, End int }

// fragment is a piece of the input: raw text, or a special token (id >= 0).
type fragment struct {
	text string
	id   int32
	off  int // where text starts in the input
}

// partition cuts the special tokens out of text. It takes each special in
// turn, longest first, and splits every remaining raw fragment around its
// occurrences, as llama.cpp does.
//
// An occurrence that overlaps one of the plain ranges is left as text.
func (t *Tokenizer) partition(text string, parseSpecial bool, plain []Range) []fragment {
	if text == "" {
		return nil // not even SentencePiece's space prefix
	}
	frags := []fragment{{text: text, id: -1}}
	inPlain := func(lo, hi int) bool {
		for _, r := range plain {
			if lo < r.End && r.Start < hi {
				return true
			}
		}
		return false
	}
	if !parseSpecial && !t.userDef {
		return frags
	}
	for _, id := range t.specials {
		if !parseSpecial && t.types[id] != TypeUserDefined {
			continue
		}
		sp := t.tokens[id]
		var next []fragment
		found := false
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, sp) {
				next = append(next, f)
				continue
			}
			// from: the start of the text not yet emitted; at: where the
			// search goes on (past an occurrence left as text).
			from, at := 0, 0
			for {
				i := strings.Index(f.text[at:], sp)
				if i < 0 {
					break
				}
				i += at
				if inPlain(f.off+i, f.off+i+len(sp)) {
					at = i + 1
					continue
				}
				found = true
				if i > from {
					next = append(next, fragment{text: f.text[from:i], id: -1, off: f.off + from})
				}
				next = append(next, fragment{id: id, off: f.off + i})
				from = i + len(sp)
				at = from
			}
			if from < len(f.text) {
				next = append(next, fragment{text: f.text[from:], id: -1, off: f.off + from})
			}
		}
		if found {
			frags = next
		}
	}
	return frags
}

// Encode returns the token ids of text: BOS first when the vocabulary asks
// for it (unless o.NoBOS), special tokens as o.ParseSpecial says.
func (t *Tokenizer) Encode(text string, o EncodeOptions) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if t.addBOS && !o.NoBOS {
		out = append(out, t.bos)
	}
	var s scratch
	prevSpecial := true // SentencePiece puts its space prefix at the start and after specials
	for _, f := range t.partition(text, o.ParseSpecial, o.Plain) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		switch t.kind {
		case kindBPE:
			out = t.encodeBPE(f.text, &s, out)
		case kindSPM:
			out = t.encodeSPM(f.text, prevSpecial, out)
		}
		prevSpecial = false
	}
	if t.addEOS && !o.NoBOS {
		out = append(out, t.eos)
	}
	return out
}

// Model is the tokenizer model: "gpt2" or "llama".
func (t *Tokenizer) Model() string { return t.model }

// Pre is the pre-tokenizer in use (gpt2 only): the file's, or the one
// chosen when the file names none (see Notes).
func (t *Tokenizer) Pre() string { return t.pre }

// Len is the number of tokens.
func (t *Tokenizer) Len() int { return len(t.tokens) }

// Token is the text of a token as the vocabulary spells it (GPT-2's byte
// encoding, SentencePiece's ▁); "" for an id out of range.
func (t *Tokenizer) Token(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// Type is the type of a token (TypeUndefined for an id out of range).
func (t *Tokenizer) Type(id int32) TokenType {
	if !t.valid(id) {
		return TypeUndefined
	}
	return t.types[id]
}

// ID looks up a token by its vocabulary text.
func (t *Tokenizer) ID(text string) (int32, bool) {
	id, ok := t.ids[text]
	return id, ok
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

// BOS, EOS and EOT are the special ids, -1 when the vocabulary has none.
func (t *Tokenizer) BOS() int32 { return t.bos }
func (t *Tokenizer) EOS() int32 { return t.eos }
func (t *Tokenizer) EOT() int32 { return t.eot }

// AddsBOS reports whether Encode puts BOS first (unless told not to).
func (t *Tokenizer) AddsBOS() bool { return t.addBOS }

// IsEOG reports whether id ends generation (EOS, EOT, <|eot_id|>,
// <|end_of_text|>, <|im_end|>, </s>, …).
func (t *Tokenizer) IsEOG(id int32) bool {
	_, found := slices.BinarySearch(t.eog, id)
	return found
}

// EOG lists the ids that end generation, in increasing order.
func (t *Tokenizer) EOG() []int32 { return slices.Clone(t.eog) }

// IsControl reports whether id is a control token (BOS, EOS, <|eot_id|>, …).
func (t *Tokenizer) IsControl(id int32) bool { return t.Type(id) == TypeControl }

// ChatTemplate is the file's chat template (Jinja text), "" when absent.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// Notes are one-line remarks about choices New made for a vocabulary that
// left something out (such as the pre-tokenizer), for the caller to log once.
func (t *Tokenizer) Notes() []string { return slices.Clone(t.notes) }

// PreTokenizers lists the pre-tokenizer names bitvk knows.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
