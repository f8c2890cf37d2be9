package convert

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// Options says how to convert.
type Options struct {
	Type gguf.Type // ternary projections: I2_S (the default, 0 means it), TQ2_0 or TQ1_0
	Head gguf.Type // the output head (the embedding when tied): F16 (0 means it) or Q8_0

	// PTQ quantizes the float projections of a model not trained ternary
	// with absmean (post-training quantization: lossy).
	PTQ bool

	// Vocab, when set, is a GGUF file whose tokenizer.* keys are copied
	// instead of reading tokenizer.json.
	Vocab string

	Name string    // general.name; "" takes the directory's name
	Log  io.Writer // notes, and per-matrix histograms under PTQ; nil for none

	// Progress, when set, is called after each tensor is written.
	Progress func(done, total int)

	// Context, when set, stops the conversion when it ends (Ctrl-C): the
	// partial output is removed and a file already at the output kept.
	Context context.Context
}

// Summary says what Convert wrote.
type Summary struct {
	Arch       string
	Layers     int
	Tensors    int
	Packed     int  // projections read packed (U8 + weight_scale)
	Ternarized int  // projections ternarized from float weights
	Lossy      bool // post-training quantization
	FileBytes  int64
}

// plan is one tensor to write: where it comes from and how.
type plan struct {
	nn.HFTensor
	src    TensorInfo
	file   *Safetensors
	scale  TensorInfo // packed projections: the weight_scale tensor
	sfile  *Safetensors
	packed bool
	typ    gguf.Type
}

// Convert reads the Hugging Face checkpoint in dir and writes the GGUF
// file out (replaced only once complete). Every problem found before
// writing is reported; nothing is guessed.
func Convert(dir, out string, o Options) (*Summary, error) {
	if o.Type == 0 {
		o.Type = gguf.TypeI2_S
	}
	if o.Head == 0 {
		o.Head = gguf.TypeF16
	}
	fileType, ok := map[gguf.Type]uint32{gguf.TypeI2_S: nn.FileTypeI2_S, gguf.TypeTQ2_0: nn.FileTypeTQ2_0, gguf.TypeTQ1_0: nn.FileTypeTQ1_0}[o.Type]
	if !ok {
		return nil, fmt.Errorf("ternary type %s: convert writes I2_S, TQ2_0 or TQ1_0", o.Type)
	}
	if o.Head != gguf.TypeF16 && o.Head != gguf.TypeQ8_0 {
		return nil, fmt.Errorf("head type %s: convert writes F16 or Q8_0", o.Head)
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	info, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	c := info.Config
	c.Name = o.Name
	if c.Name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		c.Name = filepath.Base(abs)
	}
	var vocab []gguf.KV
	if o.Vocab != "" {
		vocab, err = vocabFromGGUF(o.Vocab, c.Vocab)
	} else {
		vocab, err = vocabFromHF(dir, c.Vocab, info.BOS, info.EOS)
	}
	if err != nil {
		return nil, err
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	plans, err := makePlans(ck, info, o, logf)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Arch: c.Arch, Layers: c.Layers, Tensors: len(plans)}
	for _, p := range plans {
		if p.Role == nn.HFProjection && p.packed {
			sum.Packed++
		} else if p.Role == nn.HFProjection {
			sum.Ternarized++
		}
	}
	sum.Lossy = !info.Ternary && sum.Ternarized > 0
	if sum.Lossy {
		logf("--ptq absmean: %s is a float model; quantizing its %d projections to ternary after training is LOSSY: expect it to be much worse than the original and than a model trained ternary", info.Class, sum.Ternarized)
	}
	b := &gguf.Builder{Version: 3, Meta: c.Metadata(fileType)}
	b.Meta = append(b.Meta, vocab...)
	b.Meta = append(b.Meta, gguf.KV{Key: nn.KeyQuantizationVersion, Value: gguf.U32(2)})
	for i, p := range plans {
		spec := gguf.TensorSpec{Name: p.GGUF, Type: p.typ, Dims: []uint64{uint64(p.In), uint64(p.Out)}}
		if p.Out == 1 {
			spec.Dims = spec.Dims[:1]
		}
		spec.Fill = func(w io.Writer) error {
			data, err := p.encode(info, sum.Lossy, logf)
			if err != nil {
				return err
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
			if o.Progress != nil {
				o.Progress(i+1, len(plans))
			}
			return nil
		}
		b.Tensors = append(b.Tensors, spec)
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if err := b.WriteFileContext(ctx, out); err != nil {
		return nil, err
	}
	return sum, nil
}

// makePlans matches the model's weight table to the checkpoint: every
// tensor present, of a readable type and the shape config.json implies,
// and no checkpoint tensor left over.
func makePlans(ck *Checkpoint, info *modelInfo, o Options, logf func(string, ...any)) ([]plan, error) {
	c := info.Config
	_, _, hasHead := ck.Tensor(nn.HFLMHead)
	tied := !hasHead
	if info.Tied != nil {
		tied = *info.Tied
	}
	if tied && hasHead {
		logf("note: config.json ties the head to the embedding; %s in the checkpoint is not used", nn.HFLMHead)
	}
	table, err := nn.HFTensors(c, tied)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{nn.HFLMHead: tied && hasHead}
	var plans []plan
	var errs, floatProj []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	for _, t := range table {
		p := plan{HFTensor: t}
		var ok bool
		p.src, p.file, ok = ck.Tensor(t.HF)
		if !ok {
			bad("tensor %s is missing", t.HF)
			continue
		}
		used[t.HF] = true
		floatType := p.src.DType == "F32" || p.src.DType == "F16" || p.src.DType == "BF16"
		switch t.Role {
		case nn.HFEmbedding, nn.HFOutput, nn.HFNorm:
			want := []uint64{uint64(t.Out), uint64(t.In)}
			if t.Role == nn.HFNorm {
				want = want[1:]
			}
			if !floatType || !sameShape(p.src.Shape, want) {
				bad("tensor %s is %s %v, want F32, F16 or BF16 of shape %v", t.HF, p.src.DType, p.src.Shape, want)
			}
			p.typ = gguf.TypeF32
			switch {
			case t.Role == nn.HFOutput || t.Role == nn.HFEmbedding && tied:
				p.typ = o.Head
			case t.Role == nn.HFEmbedding:
				p.typ = gguf.TypeF16
			}
			if p.typ == gguf.TypeQ8_0 && t.In%32 != 0 {
				bad("tensor %s: Q8_0 needs rows of a multiple of 32 values, the model's are %d (use --head f16)", t.HF, t.In)
			}
		case nn.HFProjection:
			p.typ = o.Type
			scaleName := t.HF + nn.HFWeightScaleSuffix
			scale, sfile, hasScale := ck.Tensor(scaleName)
			used[scaleName] = hasScale
			switch {
			case p.src.DType == "U8":
				p.packed, p.scale, p.sfile = true, scale, sfile
				want := []uint64{uint64(t.Out / 4), uint64(t.In)}
				if t.Out%4 != 0 || !sameShape(p.src.Shape, want) {
					bad("tensor %s is U8 %v: packed ternary weights of a %d×%d matrix have shape %v", t.HF, p.src.Shape, t.Out, t.In, want)
				}
				if !hasScale {
					bad("tensor %s holds packed ternary weights but %s is missing", t.HF, scaleName)
				} else if scale.Elements() != 1 || !(scale.DType == "F32" || scale.DType == "F16" || scale.DType == "BF16") {
					bad("tensor %s is %s %v, want one F32, F16 or BF16 value", scaleName, scale.DType, scale.Shape)
				}
				if o.PTQ {
					bad("--ptq absmean quantizes float weights, but %s is already ternary (packed U8)", t.HF)
				}
			case floatType:
				want := []uint64{uint64(t.Out), uint64(t.In)}
				if !sameShape(p.src.Shape, want) {
					bad("tensor %s has shape %v, want %v", t.HF, p.src.Shape, want)
				}
				if hasScale {
					bad("tensor %s holds float weights beside %s: bitvk cannot tell whether they are already scaled", t.HF, scaleName)
				}
				floatProj = append(floatProj, t.HF+" is "+string(p.src.DType))
			default:
				bad("tensor %s is %s: a projection must be U8 (packed ternary) or F32, F16, BF16 (float master weights)", t.HF, p.src.DType)
			}
			switch bs := p.typ.BlockSize(); {
			case p.typ == gguf.TypeI2_S && t.In%128 != 0:
				bad("tensor %s: I2_S needs rows of a multiple of 128 values, the model's are %d", t.HF, t.In)
			case t.In%bs != 0:
				bad("tensor %s: %s needs rows of a multiple of %d values, the model's are %d (use --type i2_s)", t.HF, p.typ, bs, t.In)
			}
		}
		plans = append(plans, p)
	}
	if len(floatProj) > 0 && !info.Ternary && !o.PTQ {
		msg := fmt.Sprintf("%s in %s is a float model (%s, and config.json has no BitNet quantization_config): it was not trained ternary; add --ptq absmean to quantize it anyway (lossy)", info.Class, ck.Dir, floatProj[0])
		if len(errs) == 0 {
			return nil, errors.New(msg)
		}
		bad("%s", msg)
	}
	if len(errs) > 0 {
		if len(errs) > 8 {
			errs = append(errs[:8], fmt.Sprintf("… and %d more problems", len(errs)-8))
		}
		return nil, fmt.Errorf("%s does not hold the %s model config.json describes:\n  %s", ck.Dir, c.Arch, strings.Join(errs, "\n  "))
	}
	if info.Ternary && o.PTQ {
		logf("note: --ptq is not needed: %s was trained ternary, and its float weights are ternarized with absmean anyway", info.Class)
	}
	var extra []string
	for _, n := range ck.Names() {
		if !used[n] && !strings.HasSuffix(n, "rotary_emb.inv_freq") {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		more := ""
		if len(extra) > 5 {
			more = fmt.Sprintf(" and %d more", len(extra)-5)
			extra = extra[:5]
		}
		return nil, fmt.Errorf("%s holds tensors that a %s model does not have: %s%s (a different architecture than config.json says?)", ck.Dir, c.Arch, strings.Join(extra, ", "), more)
	}
	return plans, nil
}

func sameShape(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// encode produces the tensor's GGUF bytes.
func (p *plan) encode(info *modelInfo, lossy bool, logf func(string, ...any)) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("%s (from %s in %s): %w", p.GGUF, p.HF, p.file.Path, err)
	}
	if p.Role != nn.HFProjection {
		w, err := p.file.Floats(p.src)
		if err != nil {
			return fail(err)
		}
		switch p.typ {
		case gguf.TypeF32:
			out := make([]byte, 4*len(w))
			for i, v := range w {
				binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
			}
			return out, nil
		case gguf.TypeF16:
			for i, v := range w {
				if math.Abs(float64(v)) > 65504 || v != v {
					return fail(fmt.Errorf("value %d (%g) does not fit F16", i, v))
				}
			}
			return gguf.EncodeF16(w), nil
		default:
			out, err := gguf.EncodeQ8_0(w)
			if err != nil {
				return fail(err)
			}
			return out, nil
		}
	}
	codes, gamma, err := p.ternary(info)
	if err != nil {
		return fail(err)
	}
	if lossy {
		logf("  %-26s %s  γ = %.6g", p.GGUF, countCodes(codes), gamma)
	}
	if p.PermuteHeads > 0 {
		if codes, err = permuteRows(codes, p.Out, p.In, p.PermuteHeads); err != nil {
			return fail(err)
		}
	}
	if p.typ == gguf.TypeI2_S {
		out, err := gguf.EncodeI2_S(codes, gamma)
		if err != nil {
			return fail(err)
		}
		return out, nil
	}
	// TQ2_0 and TQ1_0 keep a scale per 256 values: ggml's quantizer, given
	// γ·codes, takes d = γ in every block with a nonzero weight and gets
	// the codes back.
	w := make([]float32, len(codes))
	for i, c := range codes {
		w[i] = float32(c) * gamma
	}
	var out []byte
	if p.typ == gguf.TypeTQ2_0 {
		out, err = gguf.EncodeTQ2_0(w)
	} else {
		out, err = gguf.EncodeTQ1_0(w)
	}
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// ternary returns the projection's codes ([Out][In] row-major, HF row
// order) and per-tensor scale.
func (p *plan) ternary(info *modelInfo) ([]int8, float32, error) {
	if !p.packed {
		w, err := p.file.Floats(p.src)
		if err != nil {
			return nil, 0, err
		}
		for i, v := range w {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, 0, fmt.Errorf("weight %d is %g", i, v)
			}
		}
		codes, gamma := Absmean(w)
		return codes, gamma, nil
	}
	packed, err := p.file.Data(p.src)
	if err != nil {
		return nil, 0, err
	}
	codes, err := UnpackHF(packed, p.Out, p.In)
	if err != nil {
		return nil, 0, err
	}
	ws, err := p.sfile.Floats(p.scale)
	if err != nil {
		return nil, 0, err
	}
	gamma, err := scaleFromHF(ws[0], info.ScaleDivides)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", p.scale.Name, err)
	}
	return codes, gamma, nil
}
