package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/nntest"
	"github.com/bitvk/bitvk/nn/ref"
	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// vocabFile writes the built-in synthetic vocabulary (byte-level BPE with
// LLaMA-3's special tokens) as a GGUF the trainer can read.
func vocabFile(t *testing.T) (string, *tokenizer.Tokenizer) {
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
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		t.Fatal(err)
	}
	return path, tok
}

// corpus is a small repetitive text a tiny model learns fast.
func corpus(lines int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	subj := []string{"the lord", "the king", "the people", "his son"}
	verb := []string{"said unto", "went to", "spake unto", "came to"}
	obj := []string{"the city.", "the house.", "the land.", "them."}
	var sb strings.Builder
	for i := 0; i < lines; i++ {
		sb.WriteString("and " + subj[r.IntN(4)] + " " + verb[r.IntN(4)] + " " + obj[r.IntN(4)] + "\n")
	}
	return sb.String()
}

func tinyTrainer(t *testing.T, tok *tokenizer.Tokenizer, dir string, steps int) *Trainer {
	t.Helper()
	d, err := Tokenize(tok, []Text{{Name: "train", Body: []byte(corpus(400, 1))}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := Tokenize(tok, []Text{{Name: "valid", Body: []byte(corpus(60, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	s := tinyShape()
	s.Vocab, s.Context = tok.Len(), 32
	h := DefaultHyper()
	h.Steps, h.Warmup, h.LR = steps, 10, 1e-2
	tr, err := New(Options{Shape: s, Hyper: h, Batch: 4, Seed: 3, Threads: 2, CheckpointDir: dir}, d, v, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTrainingLowersLoss(t *testing.T) {
	_, tok := vocabFile(t)
	tr := tinyTrainer(t, tok, "", 150)
	before, err := tr.ValidLoss()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, err := tr.ValidLoss()
	if err != nil {
		t.Fatal(err)
	}
	// The text is four choices of three words after "and": a model that
	// learned it is far below the uniform loss of log(vocab).
	if !(after < before-2) || !(after < 1.5) {
		t.Fatalf("validation loss went from %.3f to %.3f in 150 steps; want a drop of 2 to below 1.5", before, after)
	}
}

func TestCheckpointResumeIsBitExact(t *testing.T) {
	_, tok := vocabFile(t)
	straight := tinyTrainer(t, tok, "", 12)
	if err := straight.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	first := tinyTrainer(t, tok, dir, 12)
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; i < 5; i++ {
		if _, _, err := first.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	cancel() // as Ctrl-C: Run saves and stops before another step
	if err := first.Run(ctx); err != ErrInterrupted {
		t.Fatalf("Run after cancel = %v, want ErrInterrupted", err)
	}
	second := tinyTrainer(t, tok, dir, 12)
	if err := second.Resume(); err != nil {
		t.Fatal(err)
	}
	if second.Step != 5 {
		t.Fatalf("resumed at step %d, want 5", second.Step)
	}
	if err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range straight.Model.Params {
		if math.Float32bits(straight.Model.Params[i]) != math.Float32bits(second.Model.Params[i]) {
			t.Fatalf("parameter %d: %v straight, %v after resume", i, straight.Model.Params[i], second.Model.Params[i])
		}
	}

	// A damaged checkpoint is refused with a clear error, and the file is
	// left as it was.
	path := CheckpointFile(dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	third := tinyTrainer(t, tok, dir, 12)
	if err := third.Resume(); err == nil || !strings.Contains(err.Error(), "CRC-32") {
		t.Fatalf("resume from a damaged checkpoint: %v, want a CRC-32 error", err)
	}
	other := tinyTrainer(t, tok, dir, 12)
	other.Opt.Seed = 99
	data[len(data)/2] ^= 0x40
	os.WriteFile(path, data, 0o644)
	if err := other.Resume(); err == nil || !strings.Contains(err.Error(), "seed") {
		t.Fatalf("resume with another seed: %v, want an error naming the seed", err)
	}
}

// TestExportComputesTheTrainersLogits writes the trained model as GGUF,
// loads it as bitvk does, and runs the reference forward pass: its logits
// are the trainer's (which rounds nothing to F16 in the K/V cache, so they
// agree closely, not bit for bit).
func TestExportComputesTheTrainersLogits(t *testing.T) {
	vpath, tok := vocabFile(t)
	tr := tinyTrainer(t, tok, "", 60)
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	meta, err := VocabMeta(vpath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "model.gguf")
	if err := ExportGGUF(out, "test", tr.Model, meta); err != nil {
		t.Fatal(err)
	}
	om := nntest.OpenModel(t, out)
	c, w := om.Config, om.Weights
	m, err := ref.New(c, w)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("and the king said unto the people", tokenizer.EncodeOptions{})
	if _, err := tr.Model.Forward(ids, nil, 1, len(ids)); err != nil {
		t.Fatal(err)
	}
	want := tr.Model.Logits()
	v := c.Vocab
	for p, id := range ids {
		got, err := m.Forward(id)
		if err != nil {
			t.Fatal(err)
		}
		row := want[p*v : (p+1)*v]
		var maxDiff, maxAbs float64
		for i := range got {
			maxDiff = max(maxDiff, math.Abs(float64(got[i]-row[i])))
			maxAbs = max(maxAbs, math.Abs(float64(row[i])))
		}
		if maxDiff > 0.02*maxAbs+1e-3 {
			t.Errorf("position %d: logits differ by %.4g (largest %.3g)", p, maxDiff, maxAbs)
		}
		if nn.Correlation(got, row) < 0.9999 {
			t.Errorf("position %d: correlation %.6f", p, nn.Correlation(got, row))
		}
	}
	// The I2_S scale is γ = mean|W| of the latent weights.
	q := w.Layers[0].AttnQ
	gamma, err := q.I2SScale()
	if err != nil {
		t.Fatal(err)
	}
	if wantG := absMean(tr.Model.Layout.Views(tr.Model.Params).Layers[0].Q); gamma != wantG {
		t.Errorf("attn_q scale %v, want mean|W| = %v", gamma, wantG)
	}

	// The HF checkpoint: config.json and a safetensors file whose header
	// names every tensor with its shape and whose data round-trips.
	hf := filepath.Join(t.TempDir(), "hf")
	if err := ExportHF(hf, tr.Model, tok.BOS(), tok.EOS()); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(hf, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(st)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(st[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tr.Model.Layout.Tensors {
		var e struct {
			Dtype   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(hdr[tt.HFName], &e); err != nil {
			t.Fatalf("%s: %v", tt.HFName, err)
		}
		if e.Dtype != "F32" || e.Shape[0]*max(1, e.Shape[len(e.Shape)-1]) < tt.Size() && len(e.Shape) == 2 {
			t.Errorf("%s: %+v", tt.HFName, e)
		}
		data := st[8+int(n)+int(e.Offsets[0]):]
		for j, v := range tr.Model.Layout.View(tr.Model.Params, i)[:3] {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:])); got != v {
				t.Fatalf("%s[%d] = %v, want %v", tt.HFName, j, got, v)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(hf, "config.json")); err != nil {
		t.Fatal(err)
	}
}

func TestQuantizersMatchInference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	y := make([]float32, len(x))
	quantizeForward(y, x, len(x), false)
	q, s := ref.Quantize(x)
	for i := range y {
		if y[i] != float32(q[i])/s {
			t.Fatalf("x[%d]=%v: quantized to %v, inference's code %d/%v = %v", i, x[i], y[i], q[i], s, float32(q[i])/s)
		}
	}
	wq := make([]float32, len(x))
	gamma := ternarize(wq, x, false)
	codes, g2 := ternaryCodes(x)
	if gamma != g2 {
		t.Fatalf("γ %v vs %v", gamma, g2)
	}
	for i := range wq {
		if wq[i] != float32(codes[i])*gamma || codes[i] < -1 || codes[i] > 1 {
			t.Fatalf("w[%d]=%v: %v vs code %d·γ", i, x[i], wq[i], codes[i])
		}
	}
	// RoundClip(W/(γ+1e-6)): values above γ/2 in magnitude are ±1.
	for i, v := range x {
		want := int8(0)
		if math.Abs(float64(v)) > float64(gamma)/2*(1+1e-5) {
			want = int8(math.Copysign(1, float64(v)))
		}
		if math.Abs(math.Abs(float64(v))-float64(gamma)/2) > 1e-4 && codes[i] != want {
			t.Fatalf("w=%v γ=%v: code %d, want %d", v, gamma, codes[i], want)
		}
	}
}

func TestBadInput(t *testing.T) {
	_, tok := vocabFile(t)
	if _, err := Tokenize(tok, []Text{{Name: "a.txt", Body: []byte("  \n")}}); err == nil || !strings.Contains(err.Error(), "a.txt: the text is empty") {
		t.Errorf("empty text: %v", err)
	}
	if _, err := Tokenize(tok, []Text{{Name: "b.txt", Body: []byte("ok \xff\xfe")}}); err == nil || !strings.Contains(err.Error(), "offset 3") {
		t.Errorf("non-UTF-8 text: %v", err)
	}
	for _, c := range []struct {
		mod  func(*Shape)
		want string
	}{
		{func(s *Shape) { s.Embd = 100 }, "multiples of 128"},
		{func(s *Shape) { s.Heads = 3 }, "heads"},
		{func(s *Shape) { s.KVHeads = 3 }, "KV heads"},
		{func(s *Shape) { s.Layers = 0 }, "layers must be positive"},
	} {
		s := tinyShape()
		c.mod(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", s, err, c.want)
		}
	}
	d, err := Tokenize(tok, []Text{{Name: "short", Body: []byte("and the lord")}})
	if err != nil {
		t.Fatal(err)
	}
	s := tinyShape()
	s.Vocab, s.Context = tok.Len(), 64
	h := DefaultHyper()
	if _, err := New(Options{Shape: s, Hyper: h, Batch: 1, Threads: 1}, d, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "fewer than one sequence") {
		t.Errorf("text shorter than the context: %v", err)
	}
	h.LR = -1
	if err := h.Validate(); err == nil {
		t.Error("negative learning rate accepted")
	}
}

// TestThreadCountDoesNotChangeWeights: every value is computed by one
// thread in one order whatever the split, so a recipe gives the same
// weights on any number of cores.
func TestThreadCountDoesNotChangeWeights(t *testing.T) {
	_, tok := vocabFile(t)
	var ref []float32
	for _, threads := range []int{1, 2, 3} {
		tr := tinyTrainer(t, tok, "", 6)
		tr.Model.w.n = threads
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = tr.Model.Params
			continue
		}
		for i := range ref {
			if math.Float32bits(ref[i]) != math.Float32bits(tr.Model.Params[i]) {
				t.Fatalf("%d threads: parameter %d is %v, with 1 thread %v", threads, i, tr.Model.Params[i], ref[i])
			}
		}
	}
}
