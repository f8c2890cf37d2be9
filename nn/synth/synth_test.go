package synth

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

func build(t *testing.T, o Options) []byte {
	t.Helper()
	b, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parse(t *testing.T, data []byte) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestConventions checks a synthetic model against the conventions of
// Microsoft's ggml-model-i2_s.gguf: keys and their types, tensor names, types
// and ggml dimension order.
func TestConventions(t *testing.T) {
	s := Shapes["tiny"]
	f := parse(t, build(t, Options{Shape: s, Seed: 7}))
	arch := nn.ArchBitNetB158
	u32 := func(key string, want int) {
		t.Helper()
		v, ok := f.Get(key)
		if !ok || v.Type() != gguf.TypeUint32 {
			t.Errorf("%s: missing or not u32 (%v)", key, v.Describe())
			return
		}
		if got, _ := v.Uint(); got != uint64(want) {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
	f32 := func(key string, want float32) {
		t.Helper()
		v, ok := f.Get(key)
		if !ok || v.Type() != gguf.TypeFloat32 {
			t.Errorf("%s: missing or not f32", key)
			return
		}
		if got, _ := v.Float(); float32(got) != want {
			t.Errorf("%s = %g, want %g", key, got, want)
		}
	}
	if a, _ := f.String(nn.KeyArchitecture); a != arch {
		t.Errorf("architecture %q", a)
	}
	tokens, err := f.Strings(nn.KeyTokens)
	if err != nil {
		t.Fatal(err)
	}
	u32(nn.ArchKey(arch, nn.SuffixVocabSize), len(tokens))
	u32(nn.ArchKey(arch, nn.SuffixContextLength), s.Context)
	u32(nn.ArchKey(arch, nn.SuffixEmbeddingLength), s.Embd)
	u32(nn.ArchKey(arch, nn.SuffixBlockCount), s.Layers)
	u32(nn.ArchKey(arch, nn.SuffixFeedForward), s.FFN)
	u32(nn.ArchKey(arch, nn.SuffixRopeDimCount), s.Embd/s.Heads)
	u32(nn.ArchKey(arch, nn.SuffixHeadCount), s.Heads)
	u32(nn.ArchKey(arch, nn.SuffixHeadCountKV), s.KVHeads)
	f32(nn.ArchKey(arch, nn.SuffixRopeFreqBase), s.RopeBase)
	f32(nn.ArchKey(arch, nn.SuffixLayerNormRMSEps), s.Eps)
	u32(nn.KeyFileType, nn.FileTypeI2_S)
	if m, _ := f.String(nn.KeyTokenizerModel); m != "gpt2" {
		t.Errorf("tokenizer model %q", m)
	}

	hd := s.Embd / s.Heads
	want := map[string]struct {
		typ  gguf.Type
		dims []uint64
	}{
		nn.TensorTokenEmbd:  {gguf.TypeF16, []uint64{uint64(s.Embd), uint64(len(tokens))}},
		nn.TensorOutputNorm: {gguf.TypeF32, []uint64{uint64(s.Embd)}},
	}
	e, ffn, kv := uint64(s.Embd), uint64(s.FFN), uint64(s.KVHeads*hd)
	for l := 0; l < s.Layers; l++ {
		for lt, w := range map[nn.LayerTensor]struct {
			typ  gguf.Type
			dims []uint64
		}{
			nn.AttnNorm: {gguf.TypeF32, []uint64{e}}, nn.AttnSubNorm: {gguf.TypeF32, []uint64{e}},
			nn.FFNNorm: {gguf.TypeF32, []uint64{e}}, nn.FFNSubNorm: {gguf.TypeF32, []uint64{ffn}},
			nn.AttnQ: {gguf.TypeI2_S, []uint64{e, e}}, nn.AttnK: {gguf.TypeI2_S, []uint64{e, kv}},
			nn.AttnV: {gguf.TypeI2_S, []uint64{e, kv}}, nn.AttnOutput: {gguf.TypeI2_S, []uint64{e, e}},
			nn.FFNGate: {gguf.TypeI2_S, []uint64{e, ffn}}, nn.FFNUp: {gguf.TypeI2_S, []uint64{e, ffn}},
			nn.FFNDown: {gguf.TypeI2_S, []uint64{ffn, e}},
		} {
			want[nn.LayerTensorName(l, lt)] = w
		}
	}
	if len(f.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	if _, tied := f.Tensor(nn.TensorOutput); tied {
		t.Error("output.weight present: the head must be tied to token_embd")
	}
	for name, w := range want {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Errorf("tensor %s missing", name)
			continue
		}
		if ti.Type != w.typ || !reflect.DeepEqual(ti.Dims, w.dims) {
			t.Errorf("%s: %s %v, want %s %v", name, ti.Type, ti.Dims, w.typ, w.dims)
		}
	}
}

func TestWeightsLookReal(t *testing.T) {
	f := parse(t, build(t, Options{Shape: Shapes["tiny"], Seed: 3}))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.TensorData(ti)
		switch ti.Type {
		case gguf.TypeI2_S:
			st, err := gguf.TernaryHistogram(ti.Type, data, ti.Elements())
			if err != nil {
				t.Fatal(err)
			}
			neg, zero, pos := st.Fractions()
			for _, share := range []float64{neg, zero, pos} {
				if math.Abs(share-1.0/3) > 0.02 {
					t.Errorf("%s: shares %.3f/%.3f/%.3f, want about a third each", ti.Name, neg, zero, pos)
					break
				}
			}
			if st.Invalid != 0 {
				t.Errorf("%s: %d invalid codes", ti.Name, st.Invalid)
			}
			want := 1 / math.Sqrt(2*float64(ti.Dims[0])/3)
			if s := float64(st.ScaleMin); s < 0.7*want || s > 1.3*want {
				t.Errorf("%s: scale %g, want about %g", ti.Name, s, want)
			}
		case gguf.TypeF32:
			vals := make([]float32, ti.Elements())
			if err := gguf.Decode(ti.Type, data, len(vals), vals); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if v < 0.9 || v > 1.1 {
					t.Fatalf("%s: norm weight %g not near 1", ti.Name, v)
				}
			}
		case gguf.TypeF16:
			vals := make([]float32, ti.Elements())
			if err := gguf.Decode(ti.Type, data, len(vals), vals); err != nil {
				t.Fatal(err)
			}
			var sum, sq float64
			for _, v := range vals {
				sum += float64(v)
				sq += float64(v) * float64(v)
			}
			mean, std := sum/float64(len(vals)), math.Sqrt(sq/float64(len(vals)))
			if math.Abs(mean) > 0.005 || math.Abs(std-0.3/math.Sqrt(12)) > 0.005 {
				t.Errorf("%s: mean %g std %g, want 0 and %g", ti.Name, mean, std, 0.3/math.Sqrt(12))
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	o := Options{Shape: Shapes["tiny"], Seed: 42}
	o.Shape.Embd, o.Shape.FFN, o.Shape.Heads = 1024, 2048, 8 // tensors of several chunks
	a := build(t, o)
	prev := runtime.GOMAXPROCS(1)
	b := build(t, o)
	runtime.GOMAXPROCS(prev)
	if !bytes.Equal(a, b) {
		t.Error("the same seed wrote different bytes on 1 core and on all")
	}
	o.Seed = 43
	if bytes.Equal(a, build(t, o)) {
		t.Error("a different seed wrote the same bytes")
	}
}

// TestTQ2_0HoldsTheSameWeights checks the TQ2_0 variant stores exactly the
// weights of the I2_S one with the same seed.
func TestTQ2_0HoldsTheSameWeights(t *testing.T) {
	i2s := parse(t, build(t, Options{Shape: Shapes["tiny"], Seed: 5}))
	tq := parse(t, build(t, Options{Shape: Shapes["tiny"], Seed: 5, Type: gguf.TypeTQ2_0}))
	if ft, _ := tq.Uint(nn.KeyFileType); ft != nn.FileTypeTQ2_0 {
		t.Errorf("file type %d, want %d", ft, nn.FileTypeTQ2_0)
	}
	n := 0
	for i := range tq.Tensors {
		ti := &tq.Tensors[i]
		if ti.Type != gguf.TypeTQ2_0 {
			continue
		}
		n++
		back, err := gguf.TQ2_0ToI2_S(tq.TensorData(ti), int(ti.Elements()))
		if err != nil {
			t.Fatal(err)
		}
		other, _ := i2s.Tensor(ti.Name)
		if want := i2s.TensorData(other); !bytes.Equal(back[:len(back)-28], want[:len(want)-28]) {
			t.Errorf("%s: TQ2_0 weights differ from the I2_S ones", ti.Name)
		}
	}
	if n != 14 {
		t.Errorf("%d TQ2_0 tensors, want 14", n)
	}
}

func TestVocabFromFile(t *testing.T) {
	path := "../../../shared/testdata/vocab-llama3-bpe.gguf"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test data absent (%v): this test needs ../shared/testdata beside the repository", err)
	}
	v, err := VocabFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v.Tokens != 128256 {
		t.Errorf("%d tokens", v.Tokens)
	}
	s := Shapes["tiny"]
	f := parse(t, build(t, Options{Shape: s, Vocab: v}))
	src, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	copied := 0
	for _, kv := range src.Meta {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		copied++
		got, ok := f.Get(kv.Key)
		if !ok || !reflect.DeepEqual(got, kv.Value) {
			t.Errorf("%s not copied verbatim", kv.Key)
		}
	}
	if copied < 5 {
		t.Errorf("only %d tokenizer keys", copied)
	}
	emb, _ := f.Tensor(nn.TensorTokenEmbd)
	if emb.Dims[1] != 128256 {
		t.Errorf("embedding has %d rows", emb.Dims[1])
	}
	if _, err := VocabFromFile("../../go.mod"); err == nil {
		t.Error("a non-GGUF vocabulary file was accepted")
	}
}

func TestBuiltinVocab(t *testing.T) {
	v := BuiltinVocab(0)
	var tokens []string
	for _, kv := range v.Meta {
		if kv.Key == nn.KeyTokens {
			tokens, _ = kv.Value.Strings()
		}
	}
	if len(tokens) != v.Tokens {
		t.Fatalf("%d tokens, Tokens says %d", len(tokens), v.Tokens)
	}
	seen := map[string]bool{}
	for _, tok := range tokens {
		if seen[tok] {
			t.Errorf("token %q twice", tok)
		}
		seen[tok] = true
	}
	// GPT-2's byte-to-unicode map: space is Ġ, newline Ċ, tab ĉ, 0xAD is Ń.
	for b, want := range map[byte]rune{' ': 'Ġ', '\n': 'Ċ', '\t': 'ĉ', 'a': 'a', 0xAD: 'Ń', 0x7F: 'ġ', 0: 'Ā'} {
		if got := byteToRune(b); got != want {
			t.Errorf("byte %#x → %q, want %q", b, got, want)
		}
	}
	for _, m := range builtinMerges {
		if !seen[m[0]] || !seen[m[1]] || !seen[m[0]+m[1]] {
			t.Errorf("merge %q + %q: a part or the result is not a token", m[0], m[1])
		}
	}
	if got := BuiltinVocab(1000).Tokens; got != 1000 {
		t.Errorf("padded vocabulary has %d tokens, want 1000", got)
	}
}

func TestValidate(t *testing.T) {
	tiny := Shapes["tiny"]
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"zero layers", func(o *Options) { o.Shape.Layers = 0 }, "layers must be positive"},
		{"width not a block", func(o *Options) { o.Shape.Embd, o.Shape.Heads = 200, 4 }, "not a multiple of 128"},
		{"ffn not a TQ2_0 block", func(o *Options) { o.Shape.FFN, o.Type = 640, gguf.TypeTQ2_0 }, "not a multiple of 256"},
		{"heads", func(o *Options) { o.Shape.Heads = 3 }, "heads"},
		{"odd head dim", func(o *Options) { o.Shape.Heads = 256 }, "even"},
		{"kv heads", func(o *Options) { o.Shape.KVHeads = 3 }, "KV heads"},
		{"type", func(o *Options) { o.Type = gguf.TypeQ8_0 }, "I2_S or TQ2_0"},
		{"eps", func(o *Options) { o.Shape.Eps = 0 }, "epsilon"},
	} {
		o := Options{Shape: tiny}
		c.edit(&o)
		if _, err := Build(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestEmbdTypes: a Q8_0, Q6_K or Q4_0 embedding holds exactly the F16
// file's values encoded row by row, and every other tensor is unchanged.
func TestEmbdTypes(t *testing.T) {
	f16 := parse(t, build(t, Options{Shape: Shapes["tiny"], Seed: 5}))
	ref, _ := f16.Tensor(nn.TensorTokenEmbd)
	embd, vocab := int(ref.Dims[0]), int(ref.Dims[1])
	vals := make([]float32, embd*vocab)
	if err := gguf.Decode(gguf.TypeF16, f16.TensorData(ref), len(vals), vals); err != nil {
		t.Fatal(err)
	}
	enc := map[gguf.Type]func([]float32) ([]byte, error){
		gguf.TypeQ8_0: gguf.EncodeQ8_0, gguf.TypeQ6_K: gguf.EncodeQ6_K, gguf.TypeQ4_0: gguf.EncodeQ4_0,
	}
	for typ, encode := range enc {
		f := parse(t, build(t, Options{Shape: Shapes["tiny"], Seed: 5, EmbdType: typ}))
		ti, _ := f.Tensor(nn.TensorTokenEmbd)
		if ti.Type != typ {
			t.Fatalf("%s: token_embd is %s", typ, ti.Type)
		}
		var want []byte
		for r := 0; r < vocab; r++ {
			b, err := encode(vals[r*embd : (r+1)*embd])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, b...)
		}
		if !bytes.Equal(f.TensorData(ti), want) {
			t.Errorf("%s: token_embd is not the F16 values encoded row by row", typ)
		}
		for i := range f.Tensors {
			o := &f.Tensors[i]
			if o.Name == nn.TensorTokenEmbd {
				continue
			}
			other, _ := f16.Tensor(o.Name)
			if !bytes.Equal(f.TensorData(o), f16.TensorData(other)) {
				t.Errorf("%s: tensor %s differs from the F16 file's", typ, o.Name)
			}
		}
	}
	bad := Options{Shape: Shapes["tiny"], EmbdType: gguf.TypeQ5_K}
	if err := bad.Validate(); err == nil {
		t.Errorf("EmbdType Q5_K: no error")
	}
}
