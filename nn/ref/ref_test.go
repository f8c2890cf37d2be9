package ref

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

func tinyModel(t *testing.T, typ gguf.Type) *Model {
	t.Helper()
	b, err := synth.Build(synth.Options{Shape: synth.Shapes["tiny"], Seed: 11, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := nn.ParseConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(c, w)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var prompt = []int32{274, 72, 101, 108, 108, 111, 32, 119}

func run(t *testing.T, m *Model, tokens []int32) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, tok := range tokens {
		l, err := m.Forward(tok)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func TestForwardIsSane(t *testing.T) {
	m := tinyModel(t, gguf.TypeI2_S)
	logits := run(t, m, prompt)
	for p, l := range logits {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, v := range l {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("position %d: logit %g", p, v)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
		if hi-lo < 0.1 || hi-lo > 100 {
			t.Errorf("position %d: logits span [%g, %g]: the synthetic model should give a spread of a few units", p, lo, hi)
		}
	}
	if equal(logits[0], logits[1]) {
		t.Error("two positions gave the same logits")
	}
	m.Reset()
	again := run(t, m, prompt)
	for p := range logits {
		if !equal(logits[p], again[p]) {
			t.Fatalf("position %d: a second run after Reset differs", p)
		}
	}
}

func equal(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// The TQ2_0 synthetic model holds the I2_S one's weights with per-block
// scales all equal to the tensor scale: the oracle must give the same logits,
// bit for bit (every block sum is an integer times the same F16 scale).
func TestTQ2_0MatchesI2_S(t *testing.T) {
	a := run(t, tinyModel(t, gguf.TypeI2_S), prompt)
	b := run(t, tinyModel(t, gguf.TypeTQ2_0), prompt)
	for p := range a {
		if !equal(a[p], b[p]) {
			t.Fatalf("position %d: TQ2_0 logits differ from I2_S", p)
		}
	}
}

func TestForwardErrors(t *testing.T) {
	m := tinyModel(t, gguf.TypeI2_S)
	if _, err := m.Forward(-1); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("token -1: %v", err)
	}
	if _, err := m.Forward(int32(m.c.Vocab)); err == nil {
		t.Error("token = vocab accepted")
	}
	m.c.Context = 2
	run(t, m, prompt[:2])
	if _, err := m.Forward(1); err == nil || !strings.Contains(err.Error(), "beyond the context length 2") {
		t.Errorf("past the context: %v", err)
	}
}

func TestQuantize(t *testing.T) {
	q, s := Quantize([]float32{1, -1, 0.5, 0.25, 1.0 / 254, 3.0 / 254})
	if s != 127 {
		t.Fatalf("s = %g", s)
	}
	// 0.5·127 = 63.5 → 64 (even), 0.25·127 = 31.75 → 32, 127/254 = 0.5 → 0, 381/254 = 1.5 → 2.
	if want := []int8{127, -127, 64, 32, 0, 2}; !bytes.Equal(int8s(q), int8s(want)) {
		t.Errorf("q = %v, want %v", q, want)
	}
	q, s = Quantize([]float32{0, 0})
	if s != 127/float32(1e-5) || q[0] != 0 {
		t.Errorf("zeros: q %v s %g", q, s)
	}
}

func int8s(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestRMSNormAndRoPE(t *testing.T) {
	y := RMSNorm([]float32{3, 4}, []float32{1, 2}, 0)
	r := math.Sqrt(12.5)
	if math.Abs(float64(y[0])-3/r) > 1e-6 || math.Abs(float64(y[1])-8/r) > 1e-6 {
		t.Errorf("RMSNorm = %v", y)
	}
	x := []float32{1, 2, 3, 4}
	RoPE(x, 0, 4, 10000, false)
	if x[0] != 1 || x[3] != 4 {
		t.Errorf("RoPE at position 0 changed the vector: %v", x)
	}
	x = []float32{1, 0, 0, 0} // pair (0, 2) rotates by pos·1, pair (1, 3) by pos·base^(−1/2)
	RoPE(x, 1, 4, 10000, false)
	if math.Abs(float64(x[0])-math.Cos(1)) > 1e-6 || math.Abs(float64(x[2])-math.Sin(1)) > 1e-6 {
		t.Errorf("RoPE(pos 1) = %v, want cos 1, sin 1 in the NEOX pair (0, 2)", x)
	}
}

// BitLinear against a float64 product of the dequantized weights and inputs.
func TestMatvecMatchesDequantized(t *testing.T) {
	m := tinyModel(t, gguf.TypeI2_S)
	w := &m.layers[0].down
	x := make([]float32, w.in)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	q, s := Quantize(x)
	y := w.matvec(q, s)
	for o := 0; o < w.out; o++ {
		var want float64
		for i := 0; i < w.in; i++ {
			want += float64(w.t[o*w.in+i]) * float64(w.scales[0]) * float64(q[i]) / float64(s)
		}
		if math.Abs(float64(y[o])-want) > 1e-5*math.Max(1, math.Abs(want)) {
			t.Fatalf("row %d: %g, want %g", o, y[o], want)
		}
	}
}
