package convert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// hfSpec describes a small Hugging Face checkpoint for a test to write.
type hfSpec struct {
	class, act string
	packed     bool  // projections as U8 + weight_scale (Microsoft's layout)
	projType   DType // float projections: F32, F16 or BF16
	tied       bool
	quant      map[string]any // quantization_config, nil for none
	layers     int
	embd, ffn  int
	heads, kv  int
	seed       uint64
	tokJSON    bool // write tokenizer.json and tokenizer_config.json from the built-in vocabulary
}

func bitnetSpec() hfSpec {
	return hfSpec{class: "BitNetForCausalLM", act: "relu2", packed: true, tied: true,
		quant:  map[string]any{"quant_method": "bitnet", "linear_class": "bitlinear", "quantization_mode": "offline"},
		layers: 2, embd: 256, ffn: 512, heads: 4, kv: 2, seed: 1, tokJSON: true}
}

// hfModel is a written checkpoint and what its GGUF must hold.
type hfModel struct {
	dir    string
	cfg    *nn.Config
	vocab  *tokenizer.Vocab     // the built-in vocabulary the tokenizer files describe
	codes  map[string][]int8    // projection HF name → ternary codes, HF row order
	gamma  map[string]float32   // projection HF name → per-tensor scale
	wscale map[string]float32   // packed projection HF name → its weight_scale
	floats map[string][]float32 // norm and embedding HF name → values as stored
}

// builtinVocab is the synthetic models' vocabulary as a tokenizer.Vocab.
func builtinVocab(t testing.TB) (*tokenizer.Vocab, string) {
	t.Helper()
	b, err := synth.Build(synth.Options{Shape: synth.Shapes["tiny"]})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	if err := b.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := nn.LoadVocab(f)
	if err != nil {
		t.Fatal(err)
	}
	return v, path
}

// writeTokenizerJSON writes v as transformers' tokenizer files: normal
// tokens in model.vocab, control tokens as special added tokens, merges as
// pairs, LLaMA-3's split.
func writeTokenizerJSON(t testing.TB, dir string, v *tokenizer.Vocab) {
	vocab := map[string]int{}
	var added []map[string]any
	for i, tok := range v.Tokens {
		if v.Types[i] == nn.TokenControl {
			added = append(added, map[string]any{"id": i, "content": tok, "special": true, "normalized": false})
		} else {
			vocab[tok] = i
		}
	}
	var merges [][2]string
	for _, m := range v.Merges {
		var a, b string
		fmt.Sscanf(m, "%s %s", &a, &b)
		merges = append(merges, [2]string{a, b})
	}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), map[string]any{
		"version": "1.0", "added_tokens": added, "normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": preTokenizerRegexes["llama-bpe"]}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"model": map[string]any{"type": "BPE", "byte_fallback": false, "ignore_merges": true, "vocab": vocab, "merges": merges},
	})
	writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"bos_token":     v.Tokens[v.BOS],
		"eos_token":     map[string]any{"content": v.Tokens[v.EOS], "special": true},
		"chat_template": "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}",
	})
}

// writeHF writes the checkpoint s describes into a new directory.
func writeHF(t testing.TB, s hfSpec) *hfModel {
	t.Helper()
	v, _ := builtinVocab(t)
	arch, err := nn.HFArch(s.class)
	if err != nil {
		t.Fatal(err)
	}
	c := &nn.Config{Arch: arch, Layers: s.layers, Embd: s.embd, FFN: s.ffn, Heads: s.heads, KVHeads: s.kv,
		HeadDim: s.embd / s.heads, RopeDim: s.embd / s.heads, RopeBase: 500000, Eps: 1e-5, Context: 64,
		Vocab: len(v.Tokens), SubNorms: arch != nn.ArchLlama}
	m := &hfModel{dir: t.TempDir(), cfg: c, vocab: v, codes: map[string][]int8{}, gamma: map[string]float32{}, wscale: map[string]float32{}, floats: map[string][]float32{}}
	cfg := map[string]any{
		"architectures": []string{s.class}, "hidden_act": s.act, "vocab_size": c.Vocab, "hidden_size": c.Embd,
		"intermediate_size": c.FFN, "num_hidden_layers": c.Layers, "num_attention_heads": c.Heads,
		"num_key_value_heads": c.KVHeads, "max_position_embeddings": c.Context, "rms_norm_eps": c.Eps,
		"rope_theta": c.RopeBase, "tie_word_embeddings": s.tied, "bos_token_id": v.BOS, "eos_token_id": v.EOS,
		"rope_scaling": nil, "torch_dtype": "bfloat16",
	}
	if s.quant != nil {
		cfg["quantization_config"] = s.quant
	}
	writeJSON(t, filepath.Join(m.dir, "config.json"), cfg)
	if s.tokJSON {
		writeTokenizerJSON(t, m.dir, v)
	}
	table, err := nn.HFTensors(c, s.tied)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(s.seed, 7))
	var tensors []stTensor
	for _, e := range table {
		if e.Role != nn.HFProjection {
			vals := make([]float32, e.In*e.Out)
			for i := range vals {
				if e.Role == nn.HFNorm {
					vals[i] = 1 + float32(r.NormFloat64()*0.1)
				} else {
					vals[i] = float32(r.NormFloat64() * 0.5)
				}
			}
			shape := []uint64{uint64(e.Out), uint64(e.In)}
			if e.Role == nn.HFNorm {
				shape = shape[1:]
			}
			data := bf16Bytes(vals)
			m.floats[e.HF] = decoded(t, "BF16", data)
			tensors = append(tensors, stTensor{e.HF, "BF16", shape, data})
			continue
		}
		if s.packed {
			codes := make([]int8, e.In*e.Out)
			for i := range codes {
				codes[i] = int8(r.IntN(3)) - 1
			}
			ws := 1 + float32(r.IntN(8))*0.25 // exact in BF16
			m.codes[e.HF], m.gamma[e.HF], m.wscale[e.HF] = codes, float32(1/float64(ws)), ws
			tensors = append(tensors,
				stTensor{e.HF, "U8", []uint64{uint64(e.Out / 4), uint64(e.In)}, packHF(codes, e.Out, e.In)},
				stTensor{e.HF + "_scale", "BF16", []uint64{1}, bf16Bytes([]float32{ws})})
			continue
		}
		vals := make([]float32, e.In*e.Out)
		for i := range vals {
			vals[i] = float32(r.NormFloat64() * 0.02)
		}
		var data []byte
		switch s.projType {
		case "F32":
			data = f32Bytes(vals)
		case "F16":
			data = f16Bytes(vals)
		default:
			data = bf16Bytes(vals)
		}
		m.codes[e.HF], m.gamma[e.HF] = Absmean(decoded(t, s.projType, data))
		tensors = append(tensors, stTensor{e.HF, s.projType, []uint64{uint64(e.Out), uint64(e.In)}, data})
	}
	writeFile(t, filepath.Join(m.dir, SingleFile), buildSafetensors(t, tensors, map[string]string{"format": "pt"}))
	return m
}

func decoded(t testing.TB, dtype DType, data []byte) []float32 {
	t.Helper()
	if dtype == "" {
		dtype = "BF16"
	}
	v, err := decodeFloats("test", TensorInfo{Name: "x", DType: dtype, Shape: []uint64{uint64(len(data) / dtype.Size())}}, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkGGUF opens a converted file as bitvk does, checks every tensor
// against the checkpoint, and runs a few tokens through nn/ref.
func checkGGUF(t *testing.T, path string, m *hfModel, tt, head gguf.Type) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c, err := nn.ParseConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != m.cfg.Arch || c.Layers != m.cfg.Layers || c.Embd != m.cfg.Embd || c.FFN != m.cfg.FFN ||
		c.KVHeads != m.cfg.KVHeads || c.Vocab != m.cfg.Vocab || c.RopeBase != m.cfg.RopeBase || c.Eps != m.cfg.Eps {
		t.Errorf("config %+v, want %+v", c, m.cfg)
	}
	tied := !slices.ContainsFunc(f.Tensors, func(ti gguf.TensorInfo) bool { return ti.Name == nn.TensorOutput })
	table, err := nn.HFTensors(m.cfg, tied)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range table {
		ti, ok := f.Tensor(e.GGUF)
		if !ok {
			t.Fatalf("%s missing", e.GGUF)
		}
		nt := nn.Tensor{Name: e.GGUF, Type: ti.Type, In: e.In, Out: e.Out, Data: f.TensorData(ti)}
		switch e.Role {
		case nn.HFProjection:
			if ti.Type != tt {
				t.Errorf("%s is %s, want %s", e.GGUF, ti.Type, tt)
			}
			vals, scales, _, err := nt.Ternary()
			if err != nil {
				t.Fatal(err)
			}
			want := m.codes[e.HF]
			if e.PermuteHeads > 0 {
				want, _ = permuteRows(want, e.Out, e.In, e.PermuteHeads)
			}
			if !slices.Equal(vals, want) {
				t.Errorf("%s: ternary codes differ from the checkpoint's", e.GGUF)
			}
			if g := m.gamma[e.HF]; tt == gguf.TypeI2_S && scales[0] != g || tt != gguf.TypeI2_S && scales[0] != nn.RoundF16(g) {
				t.Errorf("%s: scale %v, want γ = %v", e.GGUF, scales[0], g)
			}
		default:
			got, err := nt.Floats()
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(m.floats[e.HF])
			switch {
			case e.Role == nn.HFNorm && ti.Type != gguf.TypeF32,
				e.Role == nn.HFEmbedding && ti.Type != gguf.TypeF16 && !(tied && ti.Type == head),
				e.Role == nn.HFOutput && ti.Type != head:
				t.Errorf("%s is %s", e.GGUF, ti.Type)
			}
			if ti.Type == gguf.TypeF16 {
				for i := range want {
					want[i] = nn.RoundF16(want[i])
				}
			}
			if ti.Type != gguf.TypeQ8_0 && !slices.Equal(got, want) {
				t.Errorf("%s: values differ from the checkpoint's", e.GGUF)
			}
		}
	}
	model, err := ref.New(c, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{m.vocab.BOS, 40, 41, 300 % int32(c.Vocab)} {
		logits, err := model.Forward(id)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range logits {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("logit %d is %v", i, x)
			}
		}
	}
	return f
}
