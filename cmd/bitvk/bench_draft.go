package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// draftBench is bench --draft: greedy decoding of one prompt with each
// drafting mode, timed in the same run, each checked against plain
// decoding's tokens.
type draftBench struct {
	src     modelSource
	bf      backendFlags
	df      draftFlags
	modes   []string
	prompt  string
	n, reps int
	asJSON  bool
	every   bool // verify every draft (no backoff)
}

// draftResult is one mode's row of bench --draft.
type draftResult struct {
	Mode         string    `json:"mode"`
	Drafter      string    `json:"drafter"`
	Backend      string    `json:"backend"`
	NPrompt      int       `json:"n_prompt"`
	NGen         int       `json:"n_gen"`
	AvgTs        float64   `json:"avg_ts"`
	StddevTs     float64   `json:"stddev_ts"`
	SamplesTs    []float64 `json:"samples_ts"`
	SpeedupVsOff float64   `json:"speedup_vs_off"`
	Drafted      int       `json:"draft_n"`
	Accepted     int       `json:"draft_n_accepted"`
	AcceptRate   float64   `json:"accept_rate"`
	MeanAccepted float64   `json:"mean_accepted"`
	Passes       int       `json:"passes"`
	PassesSaved  int       `json:"passes_saved"`
	Lengths      []int     `json:"accepted_lengths"` // [n]: verification passes that kept n drafted tokens
	SameAsOff    bool      `json:"same_as_off"`
}

func runDraftBench(db draftBench, stdout, stderr io.Writer) error {
	m, err := db.src.open(db.bf)
	if err != nil {
		return err
	}
	defer m.Close()
	tok, err := nn.NewTokenizer(m.file)
	if err != nil {
		return fmt.Errorf("bench --draft needs the model's tokenizer: %w", err)
	}
	prompt := tok.Encode(db.prompt, tokenizer.EncodeOptions{})
	if len(prompt) == 0 {
		return errors.New("bench --draft: the prompt is empty")
	}
	n := db.n
	if room := m.engine.Context() - len(prompt); n > room {
		if room < 2 {
			return fmt.Errorf("bench --draft: the prompt's %d tokens leave no room in the context of %d", len(prompt), m.engine.Context())
		}
		fmt.Fprintf(stderr, "bench: -n %d does not fit after the %d-token prompt in the context of %d; generating %d\n", n, len(prompt), m.engine.Context(), room)
		n = room
	}
	fmt.Fprintf(stderr, "%s: %s, %s; prompt %d tokens, %d generated per run, greedy\n", m.path, describe(m.config), m.backend.Name(), len(prompt), n)
	greedy, err := nn.NewSampler(nn.SamplerConfig{})
	if err != nil {
		return err
	}
	var results []draftResult
	var offToks []int32
	var offRate float64
	for _, mode := range db.modes {
		df := db.df
		df.mode = mode
		d, what, err := df.drafter(m)
		if err != nil {
			return err
		}
		r := draftResult{Mode: mode, Drafter: what, Backend: m.backend.Name(), NPrompt: len(prompt), SameAsOff: true}
		if what == "" {
			r.Drafter = "none"
		}
		fmt.Fprintf(stderr, "timing --draft %s…\n", mode)
		var total nn.Stats
		for rep := -1; rep < db.reps; rep++ { // rep -1 warms up
			m.engine.Reset()
			o := nn.GenerateOptions{MaxTokens: n, DraftEvery: db.every}
			df.options(&o, d)
			var toks []int32
			st, err := m.engine.Generate(context.Background(), prompt, o, greedy, func(id int32) error {
				toks = append(toks, id)
				return nil
			})
			if err != nil {
				return err
			}
			if rep < 0 {
				continue
			}
			r.NGen = st.GenTokens
			r.SamplesTs = append(r.SamplesTs, st.GenRate())
			total.GenTokens += st.GenTokens
			total.Draft.Add(st.Draft)
			switch {
			case mode == "off" && offToks == nil:
				offToks = toks
			case offToks != nil && !slices.Equal(toks, offToks):
				r.SameAsOff = false
			}
		}
		r.AvgTs, r.StddevTs = meanSDf(r.SamplesTs)
		if mode == "off" {
			offRate = r.AvgTs
		}
		ds := total.Draft
		r.Drafted, r.Accepted, r.Passes = ds.Drafted/db.reps, ds.Accepted/db.reps, ds.Passes/db.reps
		r.AcceptRate, r.MeanAccepted = ds.AcceptRate(), ds.MeanAccepted()
		r.PassesSaved = max(total.GenTokens-db.reps-ds.Steps, 0) / db.reps
		r.Lengths = histogramLengths(ds)
		results = append(results, r)
	}
	for i := range results {
		if offRate > 0 {
			results[i].SpeedupVsOff = results[i].AvgTs / offRate
		}
	}
	if db.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "draft\ttokens\tt/s\tvs off\tdrafted\tkept\taccept\tkept/pass\tpasses saved\tsame as off\t")
		for _, r := range results {
			vs := "-"
			if r.SpeedupVsOff > 0 {
				vs = fmt.Sprintf("%.2f×", r.SpeedupVsOff)
			}
			same := "yes"
			if !r.SameAsOff {
				same = "NO"
			}
			fmt.Fprintf(tw, "%s\t%d\t%.2f ± %.2f\t%s\t%d\t%d\t%.1f%%\t%.2f\t%d\t%s\t\n", r.Mode, r.NGen, r.AvgTs, r.StddevTs, vs, r.Drafted, r.Accepted, 100*r.AcceptRate, r.MeanAccepted, r.PassesSaved, same)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range results {
			if r.Passes > 0 {
				fmt.Fprintf(stdout, "%s (%s): kept per pass %s\n", r.Mode, r.Drafter, lengthsText(r.Lengths))
			}
		}
	}
	for _, r := range results {
		if !r.SameAsOff {
			return fmt.Errorf("bench --draft: --draft %s generated other tokens than plain decoding (the backend's batched pass rounds differently from its one-token pass)", r.Mode)
		}
	}
	return nil
}

// verifyBench is bench --verify: the time of a pass of k+1 tokens with
// every token's logits (what verifying k drafted tokens costs) over the
// time of a one-token decode step, k = 0…max.
type verifyResult struct {
	Backend   string  `json:"backend"`
	Kernels   string  `json:"kernels"`
	NThreads  int     `json:"n_threads"`
	Drafted   int     `json:"drafted"`
	Tokens    int     `json:"tokens"`
	BestNs    int64   `json:"best_ns"`
	VsOneStep float64 `json:"vs_one_token"`
	// Profile (--profile), of the passes of one token and of the most:
	// where a verification pass spends its time.
	Profile *profileJSON `json:"profile,omitempty"`
	bench   benchResult  // the backend, head and threads, for printProfile
}

// timeVerify times passes of 1…maxK+1 tokens at position pos, after a
// prefix of pos tokens (nn.VerifyCost: the best of reps runs, the k
// interleaved so that drift in the machine's speed touches every k alike).
func timeVerify(m *model, maxK, pos, reps int) ([]verifyResult, error) {
	v := m.config.Vocab
	prefix := make([]int32, pos)
	for i := range prefix {
		prefix[i] = int32((i*7919 + 13) % v)
	}
	if err := m.backend.Forward(prefix, 0, nil); err != nil {
		return nil, err
	}
	times, err := nn.VerifyCost(m.backend, v, pos, maxK, reps+1) // the first round warms up
	if err != nil {
		return nil, err
	}
	out := make([]verifyResult, len(times))
	for k, d := range times {
		out[k] = verifyResult{Drafted: k, Tokens: k + 1, BestNs: d.Nanoseconds(), VsOneStep: float64(d) / float64(times[0])}
	}
	return out, nil
}

func printVerify(w io.Writer, rs []verifyResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\tthreads\tdrafted k\ttokens\tbest ms\tvs 1 token\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s (%s)\t%d\t%d\t%d\t%.2f\t%.2f×\t\n", r.Backend, r.Kernels, r.NThreads, r.Drafted, r.Tokens, float64(r.BestNs)/1e6, r.VsOneStep)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Profile != nil {
			br := r.bench
			br.Profile = r.Profile
			printProfile(w, br)
		}
	}
	return nil
}

// readPromptFile reads bench --prompt-file.
func readPromptFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("%s: the prompt file is empty", path)
	}
	return string(b), nil
}

// verifyPos is where bench --verify's passes start: after a prompt of this
// many tokens, as a decode step after a pp128 prompt would.
const verifyPos = 128

// runVerifyBench is bench --verify over every backend, head and thread
// count named.
func runVerifyBench(path string, backends, heads, kernelSets []string, threads []int, device, maxK, reps int, asJSON, profile bool, stdout, stderr io.Writer) error {
	var all []verifyResult
	for _, be := range backends {
		be = chooseBackend(backendFlags{backend: be, device: device, notes: stderr})
		ts, ks := threads, kernelSets
		if be == "vulkan" {
			ts, ks = []int{0}, ks[:1]
		}
		for _, head := range heads {
			for _, kset := range ks {
				for _, t := range ts {
					bf := backendFlags{backend: be, device: device, threads: t, head: head, ctx: verifyPos + maxK + 1, kernels: kset}
					m, err := openModel(path, bf)
					if err != nil {
						return err
					}
					fmt.Fprintf(stderr, "timing verification passes on %s…\n", m.backend.Name())
					rs, err := timeVerify(m, maxK, verifyPos, reps)
					if err != nil {
						m.Close()
						return err
					}
					base := benchBase(m, head, t, 0)
					if cb, ok := m.backend.(*cpu.Backend); ok {
						base.NThreads = cb.Threads()
					}
					for i := range rs {
						rs[i].Backend, rs[i].Kernels, rs[i].NThreads, rs[i].bench = base.Backend, base.Kernels, base.NThreads, base
					}
					if profile { // the one-token pass and the largest
						for _, i := range []int{0, len(rs) - 1} {
							if rs[i].Profile, err = profilePass(m.backend, rs[i].Tokens, verifyPos, reps, true); err != nil {
								m.Close()
								return err
							}
						}
					}
					all = append(all, rs...)
					m.Close()
				}
			}
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	return printVerify(stdout, all)
}
