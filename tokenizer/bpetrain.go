package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Training a byte-level BPE vocabulary, as GPT-2 and LLaMA-3 built theirs:
//
//  1. the text is cut into words by LLaMA-3's pre-tokenizer (llama-bpe, the
//     one Encode uses), and equal words are counted once with their
//     frequency f(w);
//  2. every word starts as its bytes, one symbol each;
//  3. the count of a pair of adjacent symbols (x, y) is
//     c(x, y) = Σ_w f(w)·(occurrences of x y in w),
//     pairs never span two words;
//  4. the pair with the highest count becomes a merge: every occurrence, left
//     to right and not overlapping (so "aaa" makes "aa a"), is replaced by a
//     new symbol, the concatenation of the two; repeat until the vocabulary
//     is full.
//
// Ties go to the lexicographically smallest pair: the smaller left token's
// bytes, then the smaller right token's bytes (Go's string order), so the
// result depends only on the text, never on map order.
//
// Step 4 does not recount: each pair keeps its count and the words it occurs
// in, a merge visits only the words holding its pair and adjusts the counts
// of the pairs around each occurrence, and a max-heap of (count, pair), whose
// entries are checked against the current count when popped, yields the next
// merge. Training 4096 tokens on the 4.1 MB King James Bible takes about
// half a second (BenchmarkTrainBPE).
//
// The vocabulary: the 256 byte tokens in byte order (token b is byte b, in
// GPT-2's byte-to-unicode spelling), one token per merge in merge order, then
// LLaMA-3's special tokens as control tokens. Should two merges ever spell
// the same token ("a bc" and "ab c"; a search over random texts found no
// case), the second reuses the first's id, so that New never sees a
// duplicate token and there would be one merge more than merged tokens.

// trainSpecials are the special tokens a trained vocabulary ends with, in
// this order: BOS, EOS, the chat headers, end of turn.
var trainSpecials = [...]string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

// llama3ChatJinja is the chat template written into a trained vocabulary:
// LLaMA-3's format, <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
// per message with the content trimmed, BOS first (DetectTemplate picks
// bitvk's llama3 template from it).
const llama3ChatJinja = "{{ bos_token }}{% for message in messages %}" +
	"{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}" +
	"{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"

// MinTrainVocab is the smallest vocabulary TrainBPE makes: the 256 byte
// tokens and the special tokens, with no merges.
const MinTrainVocab = 256 + len(trainSpecials)

// TrainInput is one training text and the name errors call it by.
type TrainInput struct {
	Name string // a file name, say
	Text []byte // UTF-8
}

// TrainOptions say how large a vocabulary to train.
type TrainOptions struct {
	// VocabSize is the number of tokens in all: 256 bytes, the merged
	// tokens and the special tokens (at least MinTrainVocab).
	VocabSize int
	// Progress, when not nil, is called after every merge with the number
	// of tokens so far (special tokens included) and VocabSize.
	Progress func(tokens, want int)
}

// TrainStats describe a training run.
type TrainStats struct {
	Bytes       int64 // training text, all inputs
	Words       int64 // pre-tokenized words
	UniqueWords int   // distinct words
	Merges      int   // merges learned (one per merged token)
	Tokens      int64 // the training text's length in tokens once merged (BOS not counted)
}

// TrainBPE learns a byte-level BPE vocabulary from text, in the conventions of
// LLaMA-3 (model gpt2, pre-tokenizer llama-bpe, its special tokens and chat
// template, BOS added). New accepts the result. Errors: an empty input, an
// input that is not UTF-8, a vocabulary smaller than MinTrainVocab, and a
// vocabulary larger than the text has pairs to merge for.
func TrainBPE(inputs []TrainInput, o TrainOptions) (*Vocab, TrainStats, error) {
	var st TrainStats
	if o.VocabSize < MinTrainVocab {
		return nil, st, fmt.Errorf("tokenizer: a vocabulary of %d tokens is too small: the 256 byte tokens and %d special tokens need %d", o.VocabSize, len(trainSpecials), MinTrainVocab)
	}
	if len(inputs) == 0 {
		return nil, st, fmt.Errorf("tokenizer: no training text")
	}
	tr := newTrainer()
	for _, in := range inputs {
		if len(in.Text) == 0 {
			return nil, st, fmt.Errorf("tokenizer: training text %q is empty", in.Name)
		}
		if off, ok := InvalidUTF8(in.Text); !ok {
			return nil, st, fmt.Errorf("tokenizer: training text %q is not UTF-8: byte 0x%02x at offset %d does not begin a valid character (convert the text to UTF-8 first, e.g. with iconv)", in.Name, in.Text[off], off)
		}
		tr.countWords(string(in.Text), trainChunk)
		st.Bytes += int64(len(in.Text))
	}
	st.Words, st.UniqueWords = tr.nWords, len(tr.words)
	tr.countPairs()
	want := o.VocabSize - len(trainSpecials) // byte and merged tokens
	for len(tr.toks) < want {
		key, ok := tr.best()
		if !ok {
			have := len(tr.toks) + len(trainSpecials)
			return nil, st, fmt.Errorf("tokenizer: the training text supports at most %d tokens (256 bytes, %d merged, %d special): after %d merges no two adjacent symbols are left to merge; ask for a vocabulary of %d or fewer, or train on more text",
				have, len(tr.toks)-256, len(trainSpecials), len(tr.merges), have)
		}
		tr.merge(key)
		if o.Progress != nil {
			o.Progress(len(tr.toks)+len(trainSpecials), o.VocabSize)
		}
	}
	st.Merges, st.Tokens = len(tr.merges), tr.nTokens
	v, err := tr.vocab()
	return v, st, err
}

// InvalidUTF8 returns the offset of the first byte of b that does not begin
// a valid UTF-8 character, and false; or 0 and true when b is UTF-8.
func InvalidUTF8(b []byte) (int, bool) {
	if utf8.Valid(b) {
		return 0, true
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i, false
		}
		i += size
	}
	return 0, true // not reached: utf8.Valid said otherwise
}

// trainWord is one distinct pre-tokenized word: its symbols (token ids) as
// merged so far, and how often it occurs in the text.
type trainWord struct {
	syms []int32
	freq int64
}

// pairStat is what the trainer knows of one pair of adjacent symbols: its
// count c(x, y), and the words it occurs in (a superset: a word stays listed
// after merges have taken the pair out of it, and is checked when visited).
type pairStat struct {
	count int64
	words []int32
}

// pairCand is a heap entry: a pair and its count when pushed. An entry whose
// count differs from the pair's current one is stale and skipped; a fresh
// entry is pushed whenever a count changes.
type pairCand struct {
	count       int64
	left, right string // the tokens' bytes, for the tie-break
	key         uint64
}

// before orders the heap: the highest count first, then the smallest pair.
func (a pairCand) before(b pairCand) bool {
	if a.count != b.count {
		return a.count > b.count
	}
	if a.left != b.left {
		return a.left < b.left
	}
	return a.right < b.right
}

type trainer struct {
	toks   []string         // bytes of each token, by id
	ids    map[string]int32 // and back
	merges [][2]int32       // learned merges, in order

	wordIDs map[string]int32 // distinct word → index in words
	words   []trainWord
	nWords  int64 // words in the text
	nTokens int64 // Σ f(w)·len(w.syms): the text's length in symbols

	pairs map[uint64]*pairStat
	heap  minHeap[pairCand]
	delta map[uint64]int64 // count changes of one merge, reused
}

func newTrainer() *trainer {
	tr := &trainer{ids: make(map[string]int32), wordIDs: make(map[string]int32), pairs: make(map[uint64]*pairStat), delta: make(map[uint64]int64)}
	for b := 0; b < 256; b++ {
		tr.toks = append(tr.toks, string([]byte{byte(b)}))
		tr.ids[tr.toks[b]] = int32(b)
	}
	return tr
}

// trainChunk is how much text the pre-tokenizer is given at a time (it
// holds 12 bytes per code point of its input).
const trainChunk = 1 << 20

// countWords adds the words of text to the word table, pre-tokenizing about
// chunk bytes at a time. It cuts the text only just after a newline that an
// ASCII letter follows: the llama-bpe regex never continues a word across
// that point (no alternative takes a newline and then a letter, and the
// letter alternative's optional first character excludes \r and \n), and
// what precedes it splits the same whether the text ends there or goes on
// (a whitespace run ending in a newline is matched by \s*[\r\n]+ either
// way), so the words are those of the whole text.
func (tr *trainer) countWords(text string, chunk int) {
	var cps []cpt
	var ends []int
	for len(text) > 0 {
		n := chunkEnd(text, chunk)
		cps, ends = split(preLlama3, text[:n], cps, ends)
		start := 0
		for _, end := range ends {
			tr.addWord(text[start:end])
			start = end
		}
		text = text[n:]
	}
}

// chunkEnd returns the length of the next chunk of text: the last safe cut
// (see countWords) at or before max bytes, the first one after, or all.
func chunkEnd(text string, max int) int {
	if len(text) <= max {
		return len(text)
	}
	isCut := func(i int) bool { // text[i-1] is a newline and text[i] an ASCII letter
		c := text[i] | 0x20
		return text[i-1] == '\n' && c >= 'a' && c <= 'z'
	}
	for i := max; i > 0; i-- {
		if isCut(i) {
			return i
		}
	}
	for i := max + 1; i < len(text); i++ {
		if isCut(i) {
			return i
		}
	}
	return len(text)
}

func (tr *trainer) addWord(w string) {
	tr.nWords++
	tr.nTokens += int64(len(w))
	if i, ok := tr.wordIDs[w]; ok {
		tr.words[i].freq++
		return
	}
	syms := make([]int32, len(w))
	for i := 0; i < len(w); i++ {
		syms[i] = int32(w[i])
	}
	tr.wordIDs[w] = int32(len(tr.words))
	tr.words = append(tr.words, trainWord{syms: syms, freq: 1})
}

// countPairs counts every adjacent pair of every word and fills the heap.
func (tr *trainer) countPairs() {
	for wi, w := range tr.words {
		for i := 1; i < len(w.syms); i++ {
			tr.stat(pairKey(w.syms[i-1], w.syms[i])).add(w.freq, int32(wi))
		}
	}
	tr.heap = make(minHeap[pairCand], 0, len(tr.pairs))
	for key, p := range tr.pairs {
		tr.push(key, p.count)
	}
	tr.wordIDs = nil // no longer needed
}

func (tr *trainer) stat(key uint64) *pairStat {
	p := tr.pairs[key]
	if p == nil {
		p = &pairStat{}
		tr.pairs[key] = p
	}
	return p
}

// add counts f more occurrences in word w.
func (p *pairStat) add(f int64, w int32) {
	p.count += f
	if n := len(p.words); n == 0 || p.words[n-1] != w {
		p.words = append(p.words, w)
	}
}

func (tr *trainer) push(key uint64, count int64) {
	a, b := int32(key>>32), int32(uint32(key))
	tr.heap.push(pairCand{count: count, left: tr.toks[a], right: tr.toks[b], key: key})
}

// best pops the pair to merge next: the first heap entry that is not stale.
// It reports false when no pair is left.
func (tr *trainer) best() (uint64, bool) {
	for len(tr.heap) > 0 {
		c := tr.heap.pop()
		if p := tr.pairs[c.key]; p != nil && p.count == c.count && c.count > 0 {
			return c.key, true
		}
	}
	return 0, false
}

// merge applies the merge of pair key to every word holding it. For an
// occurrence of a b between neighbours x and y (each present or not),
// x a b y becomes x N y: c(x,a), c(b,y) and c(a,b) lose f(w), c(x,N) and
// c(N,y) gain it. Occurrences are replaced left to right and x is read from
// the merged word, so back-to-back occurrences (a b a b → N N) adjust the
// count of (N, a) added by the first and taken back by the second, and the
// counts stay exact.
func (tr *trainer) merge(key uint64) {
	a, b := int32(key>>32), int32(uint32(key))
	text := tr.toks[a] + tr.toks[b]
	n, ok := tr.ids[text]
	if !ok {
		n = int32(len(tr.toks))
		tr.toks = append(tr.toks, text)
		tr.ids[text] = n
	}
	tr.merges = append(tr.merges, [2]int32{a, b})
	clear(tr.delta)
	merged := tr.pairs[key]
	delete(tr.pairs, key)
	for _, wi := range merged.words {
		w := &tr.words[wi]
		syms, f := w.syms, w.freq
		if !holds(syms, a, b) {
			continue // a stale listing
		}
		out := syms[:0] // compacted in place: out never overtakes the reads at i, i+1, i+2
		for i := 0; i < len(syms); {
			if i+1 >= len(syms) || syms[i] != a || syms[i+1] != b {
				out = append(out, syms[i])
				i++
				continue
			}
			if len(out) > 0 {
				x := out[len(out)-1]
				tr.delta[pairKey(x, a)] -= f
				tr.delta[pairKey(x, n)] += f
				tr.stat(pairKey(x, n)).add(0, wi)
			}
			if i+2 < len(syms) {
				y := syms[i+2]
				tr.delta[pairKey(b, y)] -= f
				tr.delta[pairKey(n, y)] += f
				tr.stat(pairKey(n, y)).add(0, wi)
			}
			out = append(out, n)
			tr.nTokens -= f
			i += 2
		}
		w.syms = out
	}
	for k, d := range tr.delta {
		if k == key { // a merge of (a, a) also counts its own pair down: it is gone
			continue
		}
		p := tr.stat(k)
		p.count += d
		switch {
		case p.count <= 0:
			delete(tr.pairs, k) // no word holds it any more
		case d != 0:
			tr.push(k, p.count)
		}
	}
}

// holds reports whether a b occur adjacent in syms.
func holds(syms []int32, a, b int32) bool {
	for i := 1; i < len(syms); i++ {
		if syms[i-1] == a && syms[i] == b {
			return true
		}
	}
	return false
}

// vocab writes out what was learned in the Vocab form New and GGUF files take.
func (tr *trainer) vocab() (*Vocab, error) {
	v := NewVocab()
	v.Model, v.Pre = "gpt2", "llama-bpe"
	for _, t := range tr.toks {
		v.Tokens = append(v.Tokens, spellGPT2(t))
		v.Types = append(v.Types, int32(TypeNormal))
	}
	v.Merges = make([]string, 0, len(tr.merges)) // not nil: New wants merges, even none
	for _, m := range tr.merges {
		v.Merges = append(v.Merges, spellGPT2(tr.toks[m[0]])+" "+spellGPT2(tr.toks[m[1]]))
	}
	first := int32(len(v.Tokens))
	for _, s := range trainSpecials {
		// The pre-tokenizer splits "<|" from letters, so no learned
		// token can spell a special one; checked all the same, as New
		// would reject the duplicate less clearly.
		if _, dup := tr.ids[s]; dup {
			return nil, fmt.Errorf("tokenizer: a learned token spells the special token %q", s)
		}
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, int32(TypeControl))
	}
	v.BOS, v.EOS, v.EOT = first, first+1, first+4
	v.AddBOS, v.HasAddBOS = true, true
	v.ChatTemplate = llama3ChatJinja
	return v, nil
}

// spellGPT2 writes bytes in GPT-2's byte-to-unicode spelling, as byte-level
// BPE vocabularies store their tokens and merges.
func spellGPT2(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRune[s[i]])
	}
	return b.String()
}
