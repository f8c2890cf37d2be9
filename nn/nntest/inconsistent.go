package nntest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

// Stage is the step of loading a model that must reject a file.
type Stage string

// The steps of loading a model, in order (as bitvk's commands take them).
const (
	StageParse     Stage = "gguf.Parse"
	StageConfig    Stage = "nn.ParseConfig"
	StageWeights   Stage = "nn.LoadWeights"
	StageTokenizer Stage = "nn.NewTokenizer"
	StageBackend   Stage = "backend"
	StageRun       Stage = "Forward" // the backend took the file but cannot run it: never a case's Stage
	StageNone      Stage = ""        // every step accepts the file
)

// Inconsistent is a model file that the GGUF parser reads (or, for
// StageParse, a shape it refuses) but whose parts disagree: the tiny
// synthetic model (synth.Shapes["tiny"]: 2 blocks, width 256, FFN 768, 4
// heads of 64, 2 KV heads, context 512, 279 tokens) with one thing changed.
type Inconsistent struct {
	Name string
	// Edit changes the model before it is written.
	Edit func(b *gguf.Builder)
	// Patch changes the written bytes, for what gguf.Builder refuses to
	// write; nil for most.
	Patch func(file []byte) error
	// Stage is the first step that must reject the file, Want a part of
	// its error. StageNone: the file is valid and every step, the
	// backend's included, must accept it.
	Stage Stage
	Want  string
}

// tiny shape numbers the cases refer to.
const (
	tinyTokens = 279 // synth.BuiltinVocab(0)
	tinyEmbd   = 256
	tinyFFN    = 768
)

// archKey is the bitnet-b1.58 key of suffix.
func archKey(suffix string) string { return nn.ArchKey(nn.ArchBitNetB158, suffix) }

// Inconsistencies lists the inconsistent files every loading path must
// reject with a clear error, and a few unusual files it must accept.
//
// NaN and Inf in norm weights and in a ternary tensor's scale are errors,
// where llama.cpp loads the file: it checks values only with
// --check-tensors, which then rejects it ("tensor has invalid data"). A
// non-finite norm weight reaches every later activation: loaded, it gave
// NaN logits on the CPU backend and finite but meaningless ones on the
// Vulkan backend, silently wrong output either way. The check reads a few
// kilobytes a block (the norms, one float per ternary tensor), so bitvk
// makes --check-tensors' choice by default for those tensors; the large
// float tensors (the embedding and head: 656 MB in BitNet b1.58 2B4T) are
// not scanned at load. Both backends already refused a non-finite ternary
// scale when repacking.
//
// A tokenizer with fewer tokens than the embedding has rows is valid (an
// embedding padded to a round size, as bitvk convert --vocab may write:
// those rows decode as ""); one with more tokens is not, since the
// tokenizer would produce ids the model cannot embed.
func Inconsistencies() []Inconsistent {
	u32 := func(suffix string, v uint32) func(*gguf.Builder) {
		return func(b *gguf.Builder) { setMeta(b, archKey(suffix), gguf.U32(v)) }
	}
	f32 := func(suffix string, v float32) func(*gguf.Builder) {
		return func(b *gguf.Builder) { setMeta(b, archKey(suffix), gguf.F32(v)) }
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	return []Inconsistent{
		// The model's shape in metadata.
		{Name: "head_count 0", Edit: u32(nn.SuffixHeadCount, 0), Stage: StageConfig, Want: "attention.head_count = 0 is out of range"},
		{Name: "head_count_kv 0", Edit: u32(nn.SuffixHeadCountKV, 0), Stage: StageConfig, Want: "attention.head_count_kv = 0 is out of range"},
		{Name: "head_count_kv not dividing head_count", Edit: u32(nn.SuffixHeadCountKV, 3), Stage: StageConfig, Want: "4 heads are not a multiple of the 3 KV heads"},
		{Name: "head_count_kv above head_count", Edit: u32(nn.SuffixHeadCountKV, 8), Stage: StageConfig, Want: "4 heads are not a multiple of the 8 KV heads"},
		{Name: "embedding_length not divisible by head_count", Edit: u32(nn.SuffixHeadCount, 6), Stage: StageConfig, Want: "embedding width 256 is not a multiple of the 6 heads"},
		{Name: "head dimension odd", Edit: func(b *gguf.Builder) {
			setMeta(b, archKey(nn.SuffixHeadCount), gguf.U32(256))
			setMeta(b, archKey(nn.SuffixHeadCountKV), gguf.U32(256))
		}, Stage: StageConfig, Want: "head dimension 1 is odd"},
		{Name: "head_count huge", Edit: u32(nn.SuffixHeadCount, math.MaxInt32), Stage: StageConfig, Want: "not a multiple of the 2147483647 heads"},
		{Name: "rope dimension odd", Edit: u32(nn.SuffixRopeDimCount, 63), Stage: StageConfig, Want: "RoPE dimension 63 must be even"},
		{Name: "rope dimension above the head dimension", Edit: u32(nn.SuffixRopeDimCount, 128), Stage: StageConfig, Want: "RoPE dimension 128 must be even and at most the head dimension 64"},
		{Name: "rope dimension 0", Edit: u32(nn.SuffixRopeDimCount, 0), Stage: StageConfig, Want: "rope.dimension_count = 0 is out of range"},
		{Name: "rope dimension below the head dimension", Edit: u32(nn.SuffixRopeDimCount, 32), Stage: StageNone}, // partial rotary: valid
		{Name: "context_length 0", Edit: u32(nn.SuffixContextLength, 0), Stage: StageConfig, Want: "context_length = 0 is out of range"},
		{Name: "context_length 2^31", Edit: func(b *gguf.Builder) { setMeta(b, archKey(nn.SuffixContextLength), gguf.U64(1<<31)) }, Stage: StageConfig, Want: "context_length = 2147483648 is out of range"},
		// A context no machine holds the K/V cache of: the backend says so
		// before allocating it (the file itself is consistent).
		{Name: "context_length 2^31-1", Edit: u32(nn.SuffixContextLength, math.MaxInt32), Stage: StageBackend, Want: "context of 2147483647 positions"},
		{Name: "block_count 0", Edit: u32(nn.SuffixBlockCount, 0), Stage: StageConfig, Want: "block_count = 0 is out of range"},
		{Name: "block_count above the blocks present", Edit: u32(nn.SuffixBlockCount, 3), Stage: StageWeights, Want: "metadata bitnet-b1.58.block_count = 3, but the file has tensors of blocks 0 to 1 only"},
		{Name: "block_count huge", Edit: u32(nn.SuffixBlockCount, math.MaxInt32), Stage: StageWeights, Want: "metadata bitnet-b1.58.block_count = 2147483647, but the file has tensors of blocks 0 to 1 only"},
		{Name: "block_count below the blocks present", Edit: u32(nn.SuffixBlockCount, 1), Stage: StageWeights, Want: "tensor blk.1.attn_norm.weight belongs to block 1, beyond bitnet-b1.58.block_count = 1 (the file has blocks 0 to 1)"},
		{Name: "feed_forward_length mismatch", Edit: u32(nn.SuffixFeedForward, 1024), Stage: StageWeights,
			Want: "tensor blk.0.ffn_gate.weight has shape [256 768], want [256 1024] (embedding_length × feed_forward_length)"},
		{Name: "feed_forward_length huge", Edit: u32(nn.SuffixFeedForward, math.MaxInt32), Stage: StageWeights, Want: "want [256 2147483647]"},
		{Name: "embedding_length mismatch", Edit: u32(nn.SuffixEmbeddingLength, 512), Stage: StageWeights,
			Want: "tensor token_embd.weight has shape [256 279], want [512 279] (embedding_length × vocabulary)"},
		{Name: "embedding_length huge", Edit: func(b *gguf.Builder) {
			setMeta(b, archKey(nn.SuffixEmbeddingLength), gguf.U32(1<<30))
			dropMeta(b, archKey(nn.SuffixRopeDimCount))
		}, Stage: StageWeights, Want: "want [1073741824 279]"},

		// The vocabulary.
		{Name: "vocab_size mismatching token_embd", Edit: u32(nn.SuffixVocabSize, 7), Stage: StageConfig, Want: "vocab_size = 7 but token_embd.weight has 279 rows"},
		{Name: "vocab_size not an integer", Edit: func(b *gguf.Builder) { setMeta(b, archKey(nn.SuffixVocabSize), gguf.Str("279")) }, Stage: StageConfig,
			Want: `"bitnet-b1.58.vocab_size": is a string, not an integer`},
		{Name: "tokenizer with more tokens than token_embd rows", Edit: func(b *gguf.Builder) {
			dropMeta(b, archKey(nn.SuffixVocabSize))
			resize(b, nn.TensorTokenEmbd, tinyEmbd, tinyTokens-1)
		}, Stage: StageConfig, Want: "metadata tokenizer.ggml.tokens has 279 tokens but token_embd.weight has 278 rows"},
		{Name: "tokenizer with fewer tokens than token_embd rows", Edit: func(b *gguf.Builder) {
			setMeta(b, archKey(nn.SuffixVocabSize), gguf.U32(tinyTokens+9))
			resize(b, nn.TensorTokenEmbd, tinyEmbd, tinyTokens+9)
		}, Stage: StageNone}, // a padded embedding: valid
		{Name: "bos id outside the vocabulary", Edit: func(b *gguf.Builder) { setMeta(b, nn.KeyBOS, gguf.U32(tinyTokens)) }, Stage: StageTokenizer, Want: "BOS token id 279 is out of range"},
		{Name: "eos id outside the vocabulary", Edit: func(b *gguf.Builder) { setMeta(b, nn.KeyEOS, gguf.U32(1<<31-1)) }, Stage: StageTokenizer, Want: "EOS token id 2147483647 is out of range"},
		{Name: "eos id beyond 32 bits", Edit: func(b *gguf.Builder) { setMeta(b, nn.KeyEOS, gguf.U64(1<<40)) }, Stage: StageTokenizer, Want: "token id 1099511627776 is out of range"},

		// Numbers that must be finite and positive.
		{Name: "rms epsilon negative", Edit: f32(nn.SuffixLayerNormRMSEps, -1e-5), Stage: StageConfig, Want: "RMSNorm epsilon -1e-05 is not in (0, 1]"},
		{Name: "rms epsilon NaN", Edit: f32(nn.SuffixLayerNormRMSEps, nan), Stage: StageConfig, Want: "RMSNorm epsilon NaN is not in (0, 1]"},
		{Name: "rms epsilon Inf", Edit: f32(nn.SuffixLayerNormRMSEps, inf), Stage: StageConfig, Want: "RMSNorm epsilon +Inf is not in (0, 1]"},
		{Name: "rope freq_base 0", Edit: f32(nn.SuffixRopeFreqBase, 0), Stage: StageConfig, Want: "RoPE base 0 must be a finite number above 1"},
		{Name: "rope freq_base negative", Edit: f32(nn.SuffixRopeFreqBase, -10000), Stage: StageConfig, Want: "RoPE base -10000 must be"},
		{Name: "rope freq_base NaN", Edit: f32(nn.SuffixRopeFreqBase, nan), Stage: StageConfig, Want: "RoPE base NaN must be"},
		{Name: "rope freq_base Inf", Edit: f32(nn.SuffixRopeFreqBase, inf), Stage: StageConfig, Want: "RoPE base +Inf must be"},
		{Name: "NaN in a norm weight", Edit: poke(LayerName(0, nn.AttnNorm), 4*17, nan), Stage: StageWeights, Want: "blk.0.attn_norm.weight: value 17 is NaN"},
		{Name: "Inf in a sub-norm weight", Edit: poke(LayerName(1, nn.FFNSubNorm), 4*700, float32(math.Inf(-1))), Stage: StageWeights, Want: "blk.1.ffn_sub_norm.weight: value 700 is -Inf"},
		{Name: "NaN in output_norm", Edit: poke(nn.TensorOutputNorm, 0, nan), Stage: StageWeights, Want: "output_norm.weight: value 0 is NaN"},
		{Name: "NaN I2_S scale", Edit: poke(LayerName(1, nn.AttnV), tinyEmbd*128/4, nan), Stage: StageWeights, Want: "blk.1.attn_v.weight: the I2_S scale is NaN"},
		// nn does not read every block of a TQ tensor at load; the backends
		// do, as they repack it, and check each block's scale.
		{Name: "NaN TQ2_0 block scale", Edit: func(b *gguf.Builder) {
			retype(LayerName(0, nn.AttnQ), gguf.TypeTQ2_0)(b)
			t := find(b, LayerName(0, nn.AttnQ))
			binary.LittleEndian.PutUint16(t.Data[5*66+64:], 0x7e00) // block 5's float16 scale d, after its 64 bytes of codes
		}, Stage: StageBackend, Want: "blk.0.attn_q.weight: a block scale (NaN) is not finite"},
		{Name: "Inf I2_S scale", Edit: poke(LayerName(0, nn.FFNDown), tinyFFN*tinyEmbd/4, inf), Stage: StageWeights, Want: "blk.0.ffn_down.weight: the I2_S scale is +Inf"},

		// Tensors.
		{Name: "missing tensor", Edit: func(b *gguf.Builder) { drop(b, LayerName(1, nn.FFNUp)) }, Stage: StageWeights, Want: "tensor blk.1.ffn_up.weight is missing"},
		{Name: "missing output_norm", Edit: func(b *gguf.Builder) { drop(b, nn.TensorOutputNorm) }, Stage: StageWeights, Want: "tensor output_norm.weight is missing"},
		{Name: "missing token_embd", Edit: func(b *gguf.Builder) { drop(b, nn.TensorTokenEmbd) }, Stage: StageConfig, Want: "tensor token_embd.weight is missing"},
		{Name: "tensor of the wrong shape", Edit: func(b *gguf.Builder) { find(b, LayerName(0, nn.AttnK)).Dims = []uint64{128, 256} }, Stage: StageWeights,
			Want: "tensor blk.0.attn_k.weight has shape [128 256], want [256 128] (embedding_length × attention.head_count_kv·head dimension)"},
		{Name: "norm of the wrong length", Edit: func(b *gguf.Builder) { resize(b, LayerName(0, nn.FFNNorm), 128, 1) }, Stage: StageWeights,
			Want: "tensor blk.0.ffn_norm.weight has shape [128], want [256] (embedding_length)"},
		{Name: "norm with a second dimension", Edit: func(b *gguf.Builder) { resize(b, LayerName(0, nn.FFNNorm), 128, 2) }, Stage: StageWeights,
			Want: "tensor blk.0.ffn_norm.weight has shape [128 2], want [256]"},
		{Name: "token_embd of three dimensions", Edit: func(b *gguf.Builder) { find(b, nn.TensorTokenEmbd).Dims = []uint64{tinyEmbd, 93, 3} }, Stage: StageConfig,
			Want: "tensor token_embd.weight has shape [256 93 3], want [embedding, vocabulary]"},
		{Name: "ternary tensor stored as F32", Edit: retype(LayerName(0, nn.AttnQ), gguf.TypeF32), Stage: StageWeights, Want: "tensor blk.0.attn_q.weight is F32, not ternary"},
		{Name: "ternary tensor stored as Q4_0", Edit: retype(LayerName(1, nn.FFNGate), gguf.TypeQ4_0), Stage: StageWeights, Want: "tensor blk.1.ffn_gate.weight is Q4_0, not ternary"},
		{Name: "ternary tensor stored as TL2", Edit: retype(LayerName(1, nn.FFNGate), gguf.TypeTL2), Stage: StageWeights, Want: "tensor blk.1.ffn_gate.weight is TL2, which bitvk cannot run"},
		{Name: "norm stored as I2_S", Edit: retype(LayerName(0, nn.AttnNorm), gguf.TypeI2_S), Stage: StageWeights, Want: "tensor blk.0.attn_norm.weight is I2_S: bitvk cannot read it"},
		{Name: "I2_S rows not a multiple of 128", Patch: patchDim(LayerName(0, nn.AttnQ), 0, 200), Stage: StageParse, Want: "I2_S needs rows of a multiple of 128 values, but dim 0 is 200"},
		{Name: "TQ2_0 rows not a multiple of 256", Edit: retype(LayerName(0, nn.AttnQ), gguf.TypeTQ2_0), Patch: patchDim(LayerName(0, nn.AttnQ), 0, 128), Stage: StageParse,
			Want: "TQ2_0 needs rows of a multiple of 256 values, but dim 0 is 128"},
		{Name: "output head with the wrong number of rows", Edit: func(b *gguf.Builder) { addOutput(b, tinyEmbd, tinyTokens+1) }, Stage: StageWeights,
			Want: "tensor output.weight has shape [256 280], want [256 279] (embedding_length × vocabulary)"},
		{Name: "output head with the wrong width", Edit: func(b *gguf.Builder) { addOutput(b, 2*tinyEmbd, tinyTokens) }, Stage: StageWeights,
			Want: "tensor output.weight has shape [512 279], want [256 279]"},
		{Name: "output head not float", Edit: func(b *gguf.Builder) { addOutput(b, tinyEmbd, tinyTokens); retype(nn.TensorOutput, gguf.TypeTQ2_0)(b) }, Stage: StageWeights,
			Want: "tensor output.weight is TQ2_0: bitvk cannot read it"},
		{Name: "untied output head", Edit: func(b *gguf.Builder) { addOutput(b, tinyEmbd, tinyTokens) }, Stage: StageNone}, // valid
	}
}

// LayerName is the tensor name of weight t of block l.
func LayerName(l int, t nn.LayerTensor) string { return nn.LayerTensorName(l, t) }

// InconsistentFile writes the tiny model with ic's change and parses it;
// the error is the parser's.
func InconsistentFile(ic Inconsistent) (*gguf.File, error) {
	b, err := synth.Build(synth.Options{Shape: synth.Shapes["tiny"], Seed: 1})
	if err != nil {
		return nil, err
	}
	if err := materialize(b); err != nil {
		return nil, err
	}
	if ic.Edit != nil {
		ic.Edit(b)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("nntest: writing case %q: %w", ic.Name, err)
	}
	if ic.Patch != nil {
		if err := ic.Patch(buf.Bytes()); err != nil {
			return nil, fmt.Errorf("nntest: patching case %q: %w", ic.Name, err)
		}
	}
	return gguf.Parse(buf.Bytes())
}

// LoadInconsistent takes ic's file through the steps of loading a model,
// newBackend last (with the model's own context; skipped when nil), and
// returns the first step that failed and its error: StageRun when the
// backend took the file but could not run two tokens with finite logits or
// close cleanly, StageNone and nil when all went well.
func LoadInconsistent(ic Inconsistent, newBackend Factory) (stage Stage, err error) {
	f, err := InconsistentFile(ic)
	if err != nil {
		return StageParse, err
	}
	c, err := nn.ParseConfig(f)
	if err != nil {
		return StageConfig, err
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		return StageWeights, err
	}
	if _, err := nn.NewTokenizer(f); err != nil {
		return StageTokenizer, err
	}
	if newBackend == nil {
		return StageNone, nil
	}
	b, err := newBackend(c, w, 0)
	if err != nil {
		return StageBackend, err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			stage, err = StageRun, fmt.Errorf("nntest: closing the backend: %w", cerr)
		}
	}()
	// A file every step accepts must also run: two tokens, finite logits.
	logits := make([]float32, 2*c.Vocab)
	if err := b.Forward([]int32{1, int32(c.Vocab - 1)}, 0, logits); err != nil {
		return StageRun, fmt.Errorf("nntest: the backend took the model but Forward failed: %w", err)
	}
	for i, x := range logits {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return StageRun, fmt.Errorf("nntest: the backend took the model but logit %d of token %d is %v", i%c.Vocab, i/c.Vocab, x)
		}
	}
	return StageNone, nil
}

// Budgets of one case: loading the tiny model takes well under a second
// and a few megabytes (the Vulkan backend's device memory is not counted).
const (
	caseTimeout  = 60 * time.Second
	caseAllocMax = 256 << 20
)

// RejectsInconsistent loads every case of Inconsistencies, newBackend last
// (nil: the nn steps only, where a StageBackend case must pass them), and
// fails the test where a step panics, takes more than a minute, allocates
// more than 256 MiB, accepts a file it must reject or rejects a valid one,
// or rejects at another step or with an error that lacks the case's words.
func RejectsInconsistent(t *testing.T, newBackend Factory) {
	for _, ic := range Inconsistencies() {
		t.Run(strings.ReplaceAll(ic.Name, " ", "_"), func(t *testing.T) {
			want := ic.Stage
			if newBackend == nil && want == StageBackend {
				want = StageNone
			}
			type result struct {
				stage Stage
				err   error
				alloc uint64
				panic string
			}
			done := make(chan result, 1)
			go func() {
				var r result
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				defer func() {
					if p := recover(); p != nil {
						r.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
					}
					runtime.ReadMemStats(&after)
					r.alloc = after.TotalAlloc - before.TotalAlloc
					done <- r
				}()
				r.stage, r.err = LoadInconsistent(ic, newBackend)
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(caseTimeout):
				t.Fatalf("loading did not finish in %v (a hang, or work proportional to a huge number in the file)", caseTimeout)
			}
			switch {
			case r.panic != "":
				t.Fatalf("loading panicked: %s", r.panic)
			case r.alloc > caseAllocMax:
				t.Errorf("loading allocated %d MiB (at most %d expected)", r.alloc>>20, caseAllocMax>>20)
			}
			switch {
			case want == StageNone && r.err != nil:
				t.Errorf("%s rejected a valid file: %v", r.stage, r.err)
			case want == StageNone:
			case r.err == nil:
				t.Errorf("every step accepted the file; want %s to reject it with an error saying %q", want, ic.Want)
			case r.stage != want:
				t.Errorf("%s rejected it (%v); want %s to, saying %q", r.stage, r.err, want, ic.Want)
			case !strings.Contains(r.err.Error(), ic.Want):
				t.Errorf("%s: error\n\t%v\nwant one saying\n\t%s", r.stage, r.err, ic.Want)
			default:
				t.Logf("%s: %v", r.stage, r.err)
			}
		})
	}
}

// materialize writes the data of tensors generated on the fly into Data,
// so that cases can edit it.
func materialize(b *gguf.Builder) error {
	for i := range b.Tensors {
		t := &b.Tensors[i]
		if t.Fill == nil {
			continue
		}
		var buf bytes.Buffer
		if err := t.Fill(&buf); err != nil {
			return err
		}
		t.Data, t.Fill = buf.Bytes(), nil
	}
	return nil
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

// find returns the tensor named name (the builder's own, to edit); every
// case names a tensor the tiny model has.
func find(b *gguf.Builder, name string) *gguf.TensorSpec {
	for i := range b.Tensors {
		if b.Tensors[i].Name == name {
			return &b.Tensors[i]
		}
	}
	panic("nntest: the tiny model has no tensor " + name)
}

func drop(b *gguf.Builder, name string) {
	for i := range b.Tensors {
		if b.Tensors[i].Name == name {
			b.Tensors = append(b.Tensors[:i], b.Tensors[i+1:]...)
			return
		}
	}
	panic("nntest: the tiny model has no tensor " + name)
}

// resize gives a float tensor the shape [in, out] ([in] when out is 1),
// keeping its type, its data cut or extended with copies of its start.
func resize(b *gguf.Builder, name string, in, out int) {
	t := find(b, name)
	t.Dims = []uint64{uint64(in)}
	if out > 1 {
		t.Dims = append(t.Dims, uint64(out))
	}
	size, err := gguf.DataSize(t.Type, uint64(in*out))
	if err != nil {
		panic(err)
	}
	data := make([]byte, size)
	for n := 0; n < len(data); {
		n += copy(data[n:], t.Data)
	}
	t.Data = data
}

// retype stores a tensor as typ, its shape kept and its data zeros.
func retype(name string, typ gguf.Type) func(*gguf.Builder) {
	return func(b *gguf.Builder) {
		t := find(b, name)
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		size, err := gguf.DataSize(typ, n)
		if err != nil {
			panic(err)
		}
		t.Type, t.Data = typ, make([]byte, size)
	}
}

// poke writes the float32 v at byte offset off of a tensor's data.
func poke(name string, off int, v float32) func(*gguf.Builder) {
	return func(b *gguf.Builder) {
		t := find(b, name)
		data := bytes.Clone(t.Data)
		binary.LittleEndian.PutUint32(data[off:], math.Float32bits(v))
		t.Data = data
	}
}

// addOutput adds an untied F16 output head of shape [in, out].
func addOutput(b *gguf.Builder, in, out int) {
	data := make([]byte, 2*in*out)
	for i := 0; i < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], gguf.F32ToF16(float32(i%97)/1000))
	}
	b.Tensors = append(b.Tensors, gguf.TensorSpec{Name: nn.TensorOutput, Type: gguf.TypeF16, Dims: []uint64{uint64(in), uint64(out)}, Data: data})
}

// patchDim sets dimension d of a tensor in a written file's tensor table,
// finding the tensor by its length-prefixed name.
func patchDim(name string, d int, v uint64) func([]byte) error {
	return func(file []byte) error {
		key := binary.LittleEndian.AppendUint64(nil, uint64(len(name)))
		key = append(key, name...)
		at := bytes.Index(file, key)
		if at < 0 {
			return fmt.Errorf("no tensor %s", name)
		}
		at += len(key)
		if n := binary.LittleEndian.Uint32(file[at:]); d >= int(n) {
			return fmt.Errorf("tensor %s has %d dimensions", name, n)
		}
		binary.LittleEndian.PutUint64(file[at+4+8*d:], v)
		return nil
	}
}

// BadConfig is a configuration a caller built by hand (not ParseConfig)
// that disagrees with itself or with its weights: backends must refuse it
// rather than trust it.
type BadConfig struct {
	Name string
	Edit func(c *nn.Config)
	Want string
}

// BadConfigs lists the edits of the tiny model's configuration that
// RejectsBadConfig tries.
func BadConfigs() []BadConfig {
	return []BadConfig{
		{"no heads", func(c *nn.Config) { c.Heads = 0 }, "heads must be positive"},
		{"no KV heads", func(c *nn.Config) { c.KVHeads = 0 }, "KV heads must be positive"},
		{"KV heads not dividing", func(c *nn.Config) { c.KVHeads = 3 }, "not a multiple of the 3 KV heads"},
		{"head dimension disagreeing", func(c *nn.Config) { c.HeadDim = 32 }, "head dimension 32 is not the embedding width 256 over the 4 heads"},
		{"no head dimension", func(c *nn.Config) { c.HeadDim, c.RopeDim = 0, 0 }, "head dimension 0 is not"},
		{"odd RoPE dimension", func(c *nn.Config) { c.RopeDim = 33 }, "RoPE dimension 33 must be even"},
		{"no context", func(c *nn.Config) { c.Context = 0 }, "context length must be positive"},
		{"NaN epsilon", func(c *nn.Config) { c.Eps = float32(math.NaN()) }, "RMSNorm epsilon NaN"},
		{"zero RoPE base", func(c *nn.Config) { c.RopeBase = 0 }, "RoPE base 0"},
		{"more layers than weights", func(c *nn.Config) { c.Layers = 3 }, "3 layers but the weights have 2"},
		{"fewer layers than weights", func(c *nn.Config) { c.Layers = 1 }, "1 layers but the weights have 2"},
		{"vocabulary beyond the embedding", func(c *nn.Config) { c.Vocab = 300 }, "tensor token_embd.weight is [256 279], but the configuration wants [256 300]"},
		{"FFN width disagreeing", func(c *nn.Config) { c.FFN = 512 }, "tensor blk.0.ffn_gate.weight is [256 768], but the configuration wants [256 512]"},
		{"family disagreeing", func(c *nn.Config) { c.SubNorms = false }, "the configuration has no sub-norms but blk.0.attn_sub_norm.weight is given"},
	}
}

// RejectsBadConfig gives newBackend the tiny model's weights with each of
// BadConfigs' configurations and fails the test where it panics or accepts
// one, or rejects it with an error that lacks the case's words.
func RejectsBadConfig(t *testing.T, newBackend Factory) {
	m := NewModel(t, "tiny", StoreI2S, 1)
	for _, bc := range BadConfigs() {
		t.Run(strings.ReplaceAll(bc.Name, " ", "_"), func(t *testing.T) {
			c := *m.Config
			bc.Edit(&c)
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
					}
				}()
				b, err := newBackend(&c, m.Weights, 16)
				if err == nil {
					b.Close()
				}
				return err
			}()
			switch {
			case err == nil:
				t.Errorf("the backend accepted %+v; want an error saying %q", c, bc.Want)
			case !strings.Contains(err.Error(), bc.Want):
				t.Errorf("error\n\t%v\nwant one saying\n\t%s", err, bc.Want)
			}
		})
	}
}
