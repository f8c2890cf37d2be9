package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// inspectReport is what `bitvk inspect` shows, and exactly what --json prints.
type inspectReport struct {
	File      string          `json:"file"`
	Size      uint64          `json:"size"`
	Version   uint32          `json:"version"`
	Alignment uint64          `json:"alignment"`
	DataStart uint64          `json:"data_start"`
	Metadata  []metaEntry     `json:"metadata"`
	Tensors   []tensorEntry   `json:"tensors"`
	Totals    inspectTotals   `json:"totals"`
	Model     *modelEntry     `json:"model"`
	Ternary   []ternaryEntry  `json:"ternary,omitempty"`
	TernaryIn *ternarySummary `json:"ternary_summary,omitempty"`
}

// modelEntry says whether the file is a complete BitNet-family model, as
// bitvk checks one before loading it, and its configuration.
type modelEntry struct {
	Valid   bool       `json:"valid"`
	Problem string     `json:"problem,omitempty"` // why not
	Config  *nn.Config `json:"config,omitempty"`
}

type metaEntry struct {
	Key    string `json:"key"`
	Type   string `json:"type"`
	Value  any    `json:"value"`            // the value; for long arrays, the first elements
	Length int    `json:"length,omitempty"` // arrays: the number of elements
}

type tensorEntry struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Shape    []uint64 `json:"shape"` // ggml order: input dimension first
	Elements uint64   `json:"elements"`
	Bytes    uint64   `json:"bytes"`
	Offset   uint64   `json:"offset"` // file offset of the data
}

type inspectTotals struct {
	Tensors              int     `json:"tensors"`
	Elements             uint64  `json:"elements"`
	Bytes                uint64  `json:"bytes"`
	BitsPerWeight        float64 `json:"bits_per_weight"`
	TernaryTensors       int     `json:"ternary_tensors"`
	TernaryElements      uint64  `json:"ternary_elements"`
	TernaryBytes         uint64  `json:"ternary_bytes"`
	TernaryBitsPerWeight float64 `json:"ternary_bits_per_weight"`
}

// ternaryEntry is one ternary tensor's histogram (--ternary).
type ternaryEntry struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Neg         float64 `json:"neg"`  // share of −1
	Zero        float64 `json:"zero"` // share of 0
	Pos         float64 `json:"pos"`  // share of +1
	Invalid     uint64  `json:"invalid"`
	ScaleMin    float32 `json:"scale_min"`
	ScaleMax    float32 `json:"scale_max"`
	Entropy     float64 `json:"entropy_bits"` // of the −1/0/+1 histogram, ≤ log2 3
	StorageBits float64 `json:"storage_bits"` // bits per weight the tensor takes in the file
	Error       string  `json:"error,omitempty"`
}

type ternarySummary struct {
	Entropy     float64 `json:"entropy_bits"`
	StorageBits float64 `json:"storage_bits"`
	Invalid     uint64  `json:"invalid"`
}

const metaArrayShown = 8 // array elements shown before summarizing

func runInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "[flags] FILE.gguf|FILE.chnb", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object, for scripts")
	ternary := fs.Bool("ternary", false, "count −1/0/+1 in every ternary tensor: shares, scale, entropy")
	full := fs.Bool("full", false, "print arrays whole instead of summarizing them")
	modelPath := fs.String("m", "", "model or vocabulary `file` (GGUF) whose tokenizer decodes a CHNB table's chains and checks their ids")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, "want one GGUF or CHNB file, got %d arguments", len(pos))
	}
	if isCHNBFile(pos[0]) {
		if *ternary || *full {
			return usageError(fs, "--ternary and --full are for GGUF files; %s is a CHNB chain table", pos[0])
		}
		return inspectChains(pos[0], *modelPath, *asJSON, stdout)
	}
	if *modelPath != "" {
		return usageError(fs, "-m decodes the chains of a CHNB table; %s is not one (inspect a GGUF file without -m)", pos[0])
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	shown := metaArrayShown
	if *full {
		shown = math.MaxInt
	}
	r := buildReport(pos[0], f, shown)
	r.Model = checkModel(f)
	if *ternary {
		r.addTernary(f)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.print(stdout)
	return nil
}

func buildReport(path string, f *gguf.File, shown int) *inspectReport {
	r := &inspectReport{File: path, Size: f.Size, Version: f.Version, Alignment: f.Alignment, DataStart: f.DataStart}
	for _, kv := range f.Meta {
		e := metaEntry{Key: kv.Key, Type: kv.Value.Describe(), Value: jsonValue(kv.Value, shown)}
		if kv.Value.Type() == gguf.TypeArray {
			e.Length = kv.Value.Len()
		}
		r.Metadata = append(r.Metadata, e)
	}
	tot := &r.Totals
	for i := range f.Tensors {
		t := &f.Tensors[i]
		n := t.Elements()
		r.Tensors = append(r.Tensors, tensorEntry{Name: t.Name, Type: t.Type.String(), Shape: t.Dims, Elements: n, Bytes: t.Size, Offset: f.DataStart + t.Offset})
		tot.Tensors++
		tot.Elements += n
		tot.Bytes += t.Size
		if t.Type.Ternary() {
			tot.TernaryTensors++
			tot.TernaryElements += n
			tot.TernaryBytes += t.Size
		}
	}
	tot.BitsPerWeight = bitsPer(tot.Bytes, tot.Elements)
	tot.TernaryBitsPerWeight = bitsPer(tot.TernaryBytes, tot.TernaryElements)
	return r
}

func bitsPer(bytes, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(bytes) * 8 / float64(n)
}

// checkModel parses the model configuration and weight table as bitvk
// would before running the file.
func checkModel(f *gguf.File) *modelEntry {
	c, err := nn.ParseConfig(f)
	if err != nil {
		return &modelEntry{Problem: err.Error()}
	}
	if _, err := nn.LoadWeights(f, c); err != nil {
		return &modelEntry{Problem: err.Error(), Config: c}
	}
	return &modelEntry{Valid: true, Config: c}
}

// addTernary histograms every ternary tensor, several at a time.
func (r *inspectReport) addTernary(f *gguf.File) {
	var idx []int
	for i := range f.Tensors {
		if f.Tensors[i].Type.Ternary() {
			idx = append(idx, i)
		}
	}
	entries := make([]ternaryEntry, len(idx))
	stats := make([]gguf.TernaryStats, len(idx))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				t := &f.Tensors[idx[k]]
				e := ternaryEntry{Name: t.Name, Type: t.Type.String(), StorageBits: bitsPer(t.Size, t.Elements())}
				s, err := gguf.TernaryHistogram(t.Type, f.TensorData(t), t.Elements())
				if err != nil {
					e.Error = err.Error()
				} else {
					stats[k] = s
					e.Neg, e.Zero, e.Pos = s.Fractions()
					e.Invalid, e.ScaleMin, e.ScaleMax, e.Entropy = s.Invalid, s.ScaleMin, s.ScaleMax, s.Entropy()
				}
				entries[k] = e
			}
		}()
	}
	for k := range idx {
		next <- k
	}
	close(next)
	wg.Wait()
	r.Ternary = entries
	var all gguf.TernaryStats
	for _, s := range stats {
		all.Neg += s.Neg
		all.Zero += s.Zero
		all.Pos += s.Pos
		all.Invalid += s.Invalid
	}
	r.TernaryIn = &ternarySummary{Entropy: all.Entropy(), StorageBits: r.Totals.TernaryBitsPerWeight, Invalid: all.Invalid}
}

// jsonValue turns a metadata value into something encoding/json can print:
// long arrays cut to their first elements, NaN and infinities as strings.
func jsonValue(v gguf.Value, shown int) any {
	if v.Type() != gguf.TypeArray {
		switch x := v.Any().(type) {
		case float32:
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Sprint(x)
			}
			// The shortest decimal that reads back as this float32, not the
			// float64 expansion (1e-05, not 0.000009999999747378752).
			return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
		case float64:
			return jsonFloat(x)
		}
		return v.Any()
	}
	n := min(v.Len(), shown)
	out := make([]any, 0, n)
	switch a := v.Any().(type) {
	case []gguf.Value:
		for _, e := range a[:n] {
			out = append(out, jsonValue(e, shown))
		}
	default:
		for i := 0; i < n; i++ {
			out = append(out, jsonValue(v.Index(i), shown))
		}
	}
	return out
}

func jsonFloat(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Sprint(x)
	}
	return x
}

func (r *inspectReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s: GGUF version %d, %s, alignment %d, data at byte %d\n", r.File, r.Version, humanBytes(r.Size), r.Alignment, r.DataStart)
	fmt.Fprintf(w, "\nmetadata (%d keys):\n", len(r.Metadata))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range r.Metadata {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Key, m.Type, formatMeta(m))
	}
	tw.Flush()

	nameW := 4
	for _, t := range r.Tensors {
		nameW = max(nameW, len(t.Name))
	}
	if len(r.Tensors) == 0 {
		fmt.Fprintf(w, "\ntensors: none (a vocabulary-only file)\n")
	} else {
		fmt.Fprintf(w, "\ntensors (%d; shape in ggml order, input dimension first; offset in the file):\n", len(r.Tensors))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  %-*s\ttype\tshape\tbytes\toffset\t\n", nameW, "name")
		for _, t := range r.Tensors {
			fmt.Fprintf(tw, "  %-*s\t%s\t%s\t%d\t%d\t\n", nameW, t.Name, t.Type, formatShape(t.Shape), t.Bytes, t.Offset)
		}
		tw.Flush()
	}

	tot := r.Totals
	if m := r.Model; m.Valid {
		c := m.Config
		fmt.Fprintf(w, "\nmodel: %s, %d layers, width %d, FFN %d (%s), %d heads (%d KV, head dim %d), context %d, vocabulary %d; configuration and weights check out\n",
			c.Arch, c.Layers, c.Embd, c.FFN, c.Activation, c.Heads, c.KVHeads, c.HeadDim, c.Context, c.Vocab)
	} else {
		fmt.Fprintf(w, "\nmodel: not a complete BitNet-family model: %s\n", m.Problem)
	}
	fmt.Fprintf(w, "\ntotal: %d tensors, %d weights, %s, %.3f bits per weight\n", tot.Tensors, tot.Elements, humanBytes(tot.Bytes), tot.BitsPerWeight)
	if tot.TernaryTensors > 0 {
		fmt.Fprintf(w, "ternary: %d tensors, %d weights (%.1f%%), %s, %.3f bits per weight\n", tot.TernaryTensors, tot.TernaryElements,
			100*float64(tot.TernaryElements)/float64(tot.Elements), humanBytes(tot.TernaryBytes), tot.TernaryBitsPerWeight)
	}
	if r.TernaryIn == nil {
		return
	}
	fmt.Fprintf(w, "\nternary tensors (shares of −1/0/+1, entropy of that histogram, bits stored):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  %-*s\ttype\t−1\t0\t+1\tscale\tentropy\tstored\t\n", nameW, "name")
	for _, e := range r.Ternary {
		if e.Error != "" {
			fmt.Fprintf(tw, "  %-*s\t%s\t%s\t\t\t\t\t\t\n", nameW, e.Name, e.Type, e.Error)
			continue
		}
		scale := fmt.Sprintf("%.6g", e.ScaleMin)
		if e.ScaleMax != e.ScaleMin {
			scale = fmt.Sprintf("%.4g…%.4g", e.ScaleMin, e.ScaleMax)
		}
		fmt.Fprintf(tw, "  %-*s\t%s\t%.1f%%\t%.1f%%\t%.1f%%\t%s\t%.3f\t%.3f\t\n", nameW, e.Name, e.Type, 100*e.Neg, 100*e.Zero, 100*e.Pos, scale, e.Entropy, e.StorageBits)
	}
	tw.Flush()
	s := r.TernaryIn
	fmt.Fprintf(w, "\nternary weights: entropy %.3f bits per weight (at most log2 3 = %.3f), stored in %.3f\n", s.Entropy, math.Log2(3), s.StorageBits)
	if s.Invalid > 0 {
		fmt.Fprintf(w, "WARNING: %d stored codes are not a valid ternary value (see the tensors above): this file is damaged or not ternary\n", s.Invalid)
	}
}

func formatMeta(m metaEntry) string {
	b, err := json.Marshal(m.Value)
	if err != nil {
		return fmt.Sprint(m.Value)
	}
	s := string(b)
	if m.Length > 0 {
		if arr, ok := m.Value.([]any); ok && len(arr) < m.Length {
			s = strings.TrimSuffix(s, "]") + fmt.Sprintf(", … %d elements]", m.Length)
		}
	}
	return s
}

func formatShape(d []uint64) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, "×")
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
