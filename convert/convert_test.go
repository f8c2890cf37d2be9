package convert

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/train"
)

func convertOK(t *testing.T, dir string, o Options) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "model.gguf")
	var log bytes.Buffer
	o.Log = &log
	if _, err := Convert(dir, out, o); err != nil {
		t.Fatalf("convert: %v\n%s", err, log.String())
	}
	return out, log.String()
}

// TestMicrosoftLayout converts a checkpoint laid out as
// microsoft/bitnet-b1.58-2B-4T is (U8 weights packed four to a byte, a
// BF16 weight_scale per matrix that divides, BF16 norms and embedding, a
// tokenizer.json) and checks every tensor, the vocabulary, and a forward
// pass; then the same with TQ2_0, TQ1_0 and a Q8_0 head.
func TestMicrosoftLayout(t *testing.T) {
	m := writeHF(t, bitnetSpec())
	out, _ := convertOK(t, m.dir, Options{Name: "ms"})
	f := checkGGUF(t, out, m, gguf.TypeI2_S, gguf.TypeF16)
	got, err := nn.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	v := m.vocab
	if got.Model != "gpt2" || got.Pre != "llama-bpe" || !slices.Equal(got.Tokens, v.Tokens) || !slices.Equal(got.Types, v.Types) ||
		!slices.Equal(got.Merges, v.Merges) || got.BOS != v.BOS || got.EOS != v.EOS || got.EOT != v.EOT {
		t.Errorf("vocabulary differs:\n got %+v\nwant %+v", got, v)
	}
	if !strings.Contains(got.ChatTemplate, "<|start_header_id|>") {
		t.Errorf("chat template %q", got.ChatTemplate)
	}
	if _, err := nn.NewTokenizer(f); err != nil {
		t.Error(err)
	}
	if name, _ := f.String(nn.KeyName); name != "ms" {
		t.Errorf("general.name %q", name)
	}
	// Deterministic: a second conversion writes the same bytes.
	again, _ := convertOK(t, m.dir, Options{Name: "ms"})
	if !sameFile(t, out, again) {
		t.Error("two conversions of one checkpoint differ")
	}
	for _, c := range []struct{ tt, head gguf.Type }{{gguf.TypeTQ2_0, gguf.TypeF16}, {gguf.TypeTQ1_0, gguf.TypeF16}, {gguf.TypeI2_S, gguf.TypeQ8_0}} {
		out, _ := convertOK(t, m.dir, Options{Type: c.tt, Head: c.head})
		checkGGUF(t, out, m, c.tt, c.head)
	}
}

// TestAutoBitLinearScaleMultiplies: with linear_class autobitlinear,
// transformers multiplies by weight_scale, so it is γ itself.
func TestAutoBitLinearScaleMultiplies(t *testing.T) {
	s := bitnetSpec()
	s.quant = map[string]any{"quant_method": "bitnet", "linear_class": "autobitlinear"}
	m := writeHF(t, s)
	for name, ws := range m.wscale {
		m.gamma[name] = ws
	}
	out, _ := convertOK(t, m.dir, Options{})
	checkGGUF(t, out, m, gguf.TypeI2_S, gguf.TypeF16)
}

// TestFloatMasters converts float master weights (Microsoft's -bf16
// repository, 1bitLLM's F16 models with their own sub-norm names and an
// untied head) by absmean.
func TestFloatMasters(t *testing.T) {
	s := bitnetSpec()
	s.packed, s.projType, s.quant = false, "BF16", nil
	m := writeHF(t, s)
	out, log := convertOK(t, m.dir, Options{})
	checkGGUF(t, out, m, gguf.TypeI2_S, gguf.TypeF16)
	if strings.Contains(log, "LOSSY") {
		t.Errorf("a QAT checkpoint is not lossy: %s", log)
	}

	s = bitnetSpec()
	s.class, s.act, s.packed, s.projType, s.quant, s.tied = "BitnetForCausalLM", "silu", false, "F16", nil, false
	m = writeHF(t, s)
	if _, _, ok := must(OpenCheckpoint(m.dir)).Tensor("model.layers.1.self_attn.inner_attn_ln.weight"); !ok {
		t.Fatal("1bitLLM's sub-norm name is not in the checkpoint")
	}
	out, _ = convertOK(t, m.dir, Options{})
	f := checkGGUF(t, out, m, gguf.TypeI2_S, gguf.TypeF16)
	if a, _ := f.String(nn.KeyArchitecture); a != nn.ArchBitNet {
		t.Errorf("architecture %s", a)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPTQLlama quantizes an ordinary float LLaMA checkpoint on request
// only, says it is lossy with a histogram per matrix, and reorders Q and K
// rows for GGUF's llama.
func TestPTQLlama(t *testing.T) {
	s := bitnetSpec()
	s.class, s.act, s.packed, s.projType, s.quant, s.tied = "LlamaForCausalLM", "silu", false, "F32", nil, false
	m := writeHF(t, s)
	if _, err := Convert(m.dir, filepath.Join(t.TempDir(), "x.gguf"), Options{}); err == nil || !strings.Contains(err.Error(), "add --ptq absmean") {
		t.Fatalf("float llama without --ptq: %v", err)
	}
	out, log := convertOK(t, m.dir, Options{PTQ: true})
	f := checkGGUF(t, out, m, gguf.TypeI2_S, gguf.TypeF16)
	if a, _ := f.String(nn.KeyArchitecture); a != nn.ArchLlama {
		t.Errorf("architecture %s", a)
	}
	if !strings.Contains(log, "LOSSY") || strings.Count(log, "γ =") != 7*s.layers || !strings.Contains(log, "blk.1.ffn_down.weight") {
		t.Errorf("log:\n%s", log)
	}
}

// TestTrainerRoundTrip trains a tiny model, exports it with the trainer's
// GGUF and Hugging Face exporters, converts the Hugging Face directory,
// and gets the trainer's GGUF byte for byte.
func TestTrainerRoundTrip(t *testing.T) {
	_, vpath := builtinVocab(t)
	vf, err := gguf.Open(vpath)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := nn.NewTokenizer(vf)
	vf.Close()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("and the king said unto the people: go to the city.\n", 40)
	d, err := train.Tokenize(tok, []train.Text{{Name: "train", Body: []byte(text)}})
	if err != nil {
		t.Fatal(err)
	}
	shape := train.Shape{Vocab: tok.Len(), Layers: 2, Embd: 128, FFN: 256, Heads: 4, KVHeads: 2, Context: 16, RopeBase: 10000, Eps: 1e-5}
	h := train.DefaultHyper()
	h.Steps, h.Warmup, h.LR = 3, 1, 1e-2
	tr, err := train.New(train.Options{Shape: shape, Hyper: h, Batch: 2, Seed: 5, Threads: 1}, d, d, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	meta, err := train.VocabMeta(vpath)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(t.TempDir(), "trainer.gguf")
	if err := train.ExportGGUF(want, "round trip", tr.Model, meta); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(t.TempDir(), "hf")
	if err := train.ExportHF(hf, tr.Model, tok.BOS(), tok.EOS()); err != nil {
		t.Fatal(err)
	}
	got, _ := convertOK(t, hf, Options{Vocab: vpath, Name: "round trip"})
	if !sameFile(t, got, want) {
		a, b := must(gguf.Open(got)), must(gguf.Open(want))
		defer a.Close()
		defer b.Close()
		for i, kv := range b.Meta {
			if i >= len(a.Meta) || a.Meta[i].Key != kv.Key || a.Meta[i].Value.Describe() != kv.Value.Describe() {
				t.Errorf("metadata %d: %v, want %s = %s", i, a.Meta[min(i, len(a.Meta)-1)], kv.Key, kv.Value.Describe())
			}
		}
		for _, ti := range b.Tensors {
			ta, ok := a.Tensor(ti.Name)
			if !ok || !bytes.Equal(a.TensorData(ta), b.TensorData(&ti)) {
				t.Errorf("tensor %s differs", ti.Name)
			}
		}
		t.Fatal("the converted trainer checkpoint differs from the trainer's own GGUF")
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
