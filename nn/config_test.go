package nn_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

// tinyBuilder returns the builder of a tiny synthetic bitnet-b1.58 model,
// for tests to edit before writing.
func tinyBuilder(t *testing.T) *gguf.Builder {
	t.Helper()
	b, err := synth.Build(synth.Options{Shape: synth.Shapes["tiny"], Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, b *gguf.Builder) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func load(f *gguf.File) (*nn.Config, *nn.Weights, error) {
	c, err := nn.ParseConfig(f)
	if err != nil {
		return nil, nil, err
	}
	w, err := nn.LoadWeights(f, c)
	return c, w, err
}

func setMeta(b *gguf.Builder, key string, v gguf.Value) {
	for i := range b.Meta {
		if b.Meta[i].Key == key {
			b.Meta[i].Value = v
			return
		}
	}
	b.Meta = append(b.Meta, gguf.KV{Key: key, Value: v})
}

func dropMeta(b *gguf.Builder, key string) {
	for i := range b.Meta {
		if b.Meta[i].Key == key {
			b.Meta = append(b.Meta[:i], b.Meta[i+1:]...)
			return
		}
	}
}

func dropTensors(b *gguf.Builder, suffix string) {
	kept := b.Tensors[:0]
	for _, t := range b.Tensors {
		if !strings.HasSuffix(t.Name, suffix) {
			kept = append(kept, t)
		}
	}
	b.Tensors = kept
}

// toLlama turns a bitnet-b1.58 builder into a ternary llama one (Falcon3 1.58
// style): llama.* keys, no sub-norms, an untied F16 output.weight.
func toLlama(b *gguf.Builder) {
	for i := range b.Meta {
		if k, ok := strings.CutPrefix(b.Meta[i].Key, nn.ArchBitNetB158+"."); ok {
			b.Meta[i].Key = nn.ArchLlama + "." + k
		}
	}
	setMeta(b, nn.KeyArchitecture, gguf.Str(nn.ArchLlama))
	dropTensors(b, "sub_norm.weight")
	emb := b.Tensors[0]
	emb.Name = nn.TensorOutput
	b.Tensors = append(b.Tensors, emb)
}

func TestParseSyntheticModel(t *testing.T) {
	s := synth.Shapes["tiny"]
	c, w, err := load(parse(t, tinyBuilder(t)))
	if err != nil {
		t.Fatal(err)
	}
	want := nn.Config{Arch: nn.ArchBitNetB158, Name: "bitvk synthetic", Layers: s.Layers, Embd: s.Embd, FFN: s.FFN, Heads: s.Heads,
		KVHeads: s.KVHeads, HeadDim: s.Embd / s.Heads, RopeDim: s.Embd / s.Heads, RopeBase: s.RopeBase, Eps: s.Eps, Context: s.Context,
		Vocab: synth.BuiltinVocab(0).Tokens, Activation: nn.ReLUSquared, SubNorms: true}
	if *c != want {
		t.Errorf("config\n got %+v\nwant %+v", *c, want)
	}
	if !w.TiedOutput || w.Output.Name != nn.TensorTokenEmbd || len(w.Layers) != s.Layers {
		t.Errorf("weights: tied %v, output %s, %d layers", w.TiedOutput, w.Output.Name, len(w.Layers))
	}
	k := w.Layers[1].AttnK
	if k.Type != gguf.TypeI2_S || k.In != s.Embd || k.Out != c.KVDim() || len(k.Data) != s.Embd*c.KVDim()/4+32 {
		t.Errorf("attn_k: %s %d×%d, %d bytes", k.Type, k.In, k.Out, len(k.Data))
	}
	if w.Layers[0].FFNSubNorm.In != s.FFN {
		t.Errorf("ffn_sub_norm has %d values", w.Layers[0].FFNSubNorm.In)
	}
}

func TestParseFamilies(t *testing.T) {
	b := tinyBuilder(t)
	toLlama(b)
	c, w, err := load(parse(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if c.Activation != nn.SiLU || c.SubNorms || w.TiedOutput || w.Output.Name != nn.TensorOutput {
		t.Errorf("llama: %v, sub-norms %v, tied %v", c.Activation, c.SubNorms, w.TiedOutput)
	}
	// llama.cpp rotates llama's heads in adjacent pairs (its converter
	// permutes Q and K to match), BitNet's in NEOX pairs.
	if !c.RopeInterleaved {
		t.Error("llama: RoPE in NEOX pairs, want adjacent (interleaved) pairs")
	}
	if w.Layers[0].AttnSubNorm.Data != nil {
		t.Error("llama: a sub-norm was loaded")
	}

	b = tinyBuilder(t)
	for i := range b.Meta {
		if k, ok := strings.CutPrefix(b.Meta[i].Key, nn.ArchBitNetB158+"."); ok {
			b.Meta[i].Key = nn.ArchBitNet + "." + k
		}
	}
	setMeta(b, nn.KeyArchitecture, gguf.Str(nn.ArchBitNet))
	c, _, err = load(parse(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if c.Activation != nn.SiLU || !c.SubNorms || c.RopeInterleaved {
		t.Errorf("bitnet: %v, sub-norms %v, interleaved RoPE %v", c.Activation, c.SubNorms, c.RopeInterleaved)
	}
}

func TestParseErrors(t *testing.T) {
	arch := func(s string) string { return nn.ArchKey(nn.ArchBitNetB158, s) }
	for _, c := range []struct {
		name string
		edit func(b *gguf.Builder)
		want string
	}{
		{"unknown arch", func(b *gguf.Builder) { setMeta(b, nn.KeyArchitecture, gguf.Str("gpt-neox")) }, `"gpt-neox" is not supported`},
		{"no arch", func(b *gguf.Builder) { dropMeta(b, nn.KeyArchitecture) }, `"general.architecture": missing`},
		{"no block count", func(b *gguf.Builder) { dropMeta(b, arch(nn.SuffixBlockCount)) }, "block_count\": missing"},
		{"block count a string", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixBlockCount), gguf.Str("2")) }, "not an integer"},
		{"zero heads", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixHeadCount), gguf.U32(0)) }, "out of range"},
		{"heads do not divide", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixHeadCount), gguf.U32(3)) }, "not a multiple of the 3 heads"},
		{"kv heads do not divide", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixHeadCountKV), gguf.U32(3)) }, "not a multiple of the 3 KV heads"},
		{"eps", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixLayerNormRMSEps), gguf.F32(0)) }, "epsilon"},
		{"vocab mismatch", func(b *gguf.Builder) { setMeta(b, arch(nn.SuffixVocabSize), gguf.U32(7)) }, "has 279 rows"},
		{"missing tensor", func(b *gguf.Builder) { dropTensors(b, "blk.1.ffn_up.weight") }, "tensor blk.1.ffn_up.weight is missing"},
		{"vocabulary only", func(b *gguf.Builder) { b.Tensors = nil }, "holds no tensors: it is a vocabulary-only GGUF"},
		{"missing sub-norm", func(b *gguf.Builder) { dropTensors(b, "blk.0.attn_sub_norm.weight") }, "attn_sub_norm.weight is missing"},
		{"misshapen tensor", func(b *gguf.Builder) {
			for i := range b.Tensors {
				if b.Tensors[i].Name == "blk.0.attn_k.weight" {
					b.Tensors[i].Dims = []uint64{128, 256} // same bytes, wrong shape
				}
			}
		}, "blk.0.attn_k.weight has shape [128 256], want [256 128]"},
		{"projection not ternary", func(b *gguf.Builder) {
			for i := range b.Tensors {
				if b.Tensors[i].Name == "blk.0.attn_q.weight" {
					b.Tensors[i] = gguf.TensorSpec{Name: b.Tensors[i].Name, Type: gguf.TypeF16, Dims: []uint64{256, 256}, Data: make([]byte, 2*256*256)}
				}
			}
		}, "blk.0.attn_q.weight is F16, not ternary"},
		{"separate scales", func(b *gguf.Builder) {
			b.Tensors = append(b.Tensors, gguf.TensorSpec{Name: "blk.0.attn_q.scale", Type: gguf.TypeF32, Dims: []uint64{1}, Data: make([]byte, 4)})
		}, "separate weight scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := tinyBuilder(t)
			c.edit(b)
			_, _, err := load(parse(t, b))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
	b := tinyBuilder(t)
	toLlama(b)
	b.Tensors = append(b.Tensors, gguf.TensorSpec{Name: "blk.0.attn_sub_norm.weight", Type: gguf.TypeF32, Dims: []uint64{256}, Data: make([]byte, 1024)})
	if _, _, err := load(parse(t, b)); err == nil || !strings.Contains(err.Error(), "mixes families") {
		t.Errorf("llama with a sub-norm: %v", err)
	}
}
