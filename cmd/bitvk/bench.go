package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/synth"
)

// benchResult is one test of one configuration, with llama-bench's field
// names (so tools that read its JSON read ours) plus the roofline.
type benchResult struct {
	ModelType     string    `json:"model_type"`
	ModelSize     int64     `json:"model_size"`
	ModelNParams  int64     `json:"model_n_params"`
	Backend       string    `json:"backend"`
	Kernels       string    `json:"kernels"`
	CPUInfo       string    `json:"cpu_info"` // the machine's CPU (cpu.Name), as llama-bench reports it
	GPUInfo       string    `json:"gpu_info,omitempty"`
	Fused         *bool     `json:"fused,omitempty"`   // Vulkan: whether a decode step runs fused (--fuse)
	Tune          string    `json:"vk_tune,omitempty"` // Vulkan: the kernel shapes changed from the defaults (BITVK_VK_TUNE)
	Head          string    `json:"head"`
	NThreads      int       `json:"n_threads"`
	NPrompt       int       `json:"n_prompt"`
	NGen          int       `json:"n_gen"`
	NDepth        int       `json:"n_depth"` // tokens in the cache before the test (-d), untimed
	AvgNs         int64     `json:"avg_ns"`
	StddevNs      int64     `json:"stddev_ns"`
	AvgTs         float64   `json:"avg_ts"`
	StddevTs      float64   `json:"stddev_ts"`
	SamplesNs     []int64   `json:"samples_ns"`
	SamplesTs     []float64 `json:"samples_ts"`
	BandwidthGBs  float64   `json:"bandwidth_gbs"`
	BytesPerToken int64     `json:"bytes_per_token,omitempty"`
	RooflineTs    float64   `json:"roofline_ts,omitempty"`
	RooflineShare *float64  `json:"roofline_share"` // decode only; null for prompt tests
	// Prompt tests: the ternary multiply-adds per token, the int8
	// multiply-accumulate peak of the threads used (CPU:
	// cpu.Int8PeakThreads, all of them at once, before and after the
	// repetitions) or of the device (Vulkan: gpu.Backend.MeasureInt8Peak,
	// through the kernels' dot4) and the share of it the prompt's rate is.
	MACsPerToken  int64        `json:"macs_per_token,omitempty"`
	Int8PeakGMACs float64      `json:"int8_peak_gmacs,omitempty"`
	Int8Share     *float64     `json:"int8_share,omitempty"`
	Profile       *profileJSON `json:"profile,omitempty"` // with --profile
}

// profileJSON is where one pass of a test spends its time (bench
// --profile): a decode step at the test's last position, or the prompt's
// first chunk. Vulkan: GPU time per dispatch label; CPU: wall time per
// stage, and the time the calling thread waited for its helpers.
type profileJSON struct {
	Tokens          int              `json:"tokens"`
	Pos             int              `json:"pos"`
	GPUNs           float64          `json:"gpu_ns,omitempty"`
	WallNs          float64          `json:"wall_ns"`
	WaitNs          float64          `json:"wait_ns,omitempty"` // CPU`
	Dispatches      int              `json:"dispatches"`
	Barriers        int              `json:"barriers"`
	Transfers       int              `json:"transfers"`
	SubmitsPerToken float64          `json:"submits_per_token"`
	AllLogits       bool             `json:"all_logits,omitempty"` // a verification pass (bench --verify --profile)
	Kernels         []gpu.KernelTime `json:"kernels"`
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[-m MODEL | -hf ORG/REPO[:FILE] | --shape tiny|small|2b] [-p 128] [-n 64] [-t 1,2] [-r 3] [--json]", stderr)
	path := fs.String("m", "", "model `file` (GGUF); default: the built-in synthetic model of --shape")
	var hf string
	addHFFlag(fs, &hf)
	shape := fs.String("shape", "2b", "synthetic model shape when no -m is given: tiny, small, 2b")
	nPrompt := fs.String("p", "128", "prompt lengths to time, comma-separated (0: no prompt test)")
	nGen := fs.String("n", "64", "generation lengths to time, comma-separated (0: no generation test)")
	nDepth := fs.String("d", "0", "context depths, comma-separated: each test runs after this many tokens are already in the cache (prefilled untimed), as llama-bench's -d")
	threads := fs.String("t", "", "thread counts, comma-separated (default: one per CPU)")
	reps := fs.Int("r", 3, "repetitions of each test")
	heads := fs.String("head", "stored", "output heads to time, comma-separated: stored (the file's type), f16, q8, q8_0, q6_k, q4_0")
	backends := fs.String("backend", "auto", "backends to time, comma-separated: auto, cpu, vulkan")
	fuses := fs.String("fuse", "auto", "Vulkan decode steps, comma-separated to time each: auto (the norms, RoPE and the K/V write fused into the products on a GPU, not on a CPU device), on, off")
	kernelSets := fs.String("kernels", "", "CPU kernel `sets`, comma-separated to time each (see bitvk version; default: the fastest this CPU runs)")
	device := fs.Int("device", -1, "Vulkan device `index` (default: the best)")
	asJSON := fs.Bool("json", false, "print a JSON array of results (llama-bench's field names)")
	profile := fs.Bool("profile", false, "print where a decode step and the prompt's last chunk (with --verify: the passes of one token and of the most) spend their time: Vulkan, every dispatch with GPU timestamps; CPU, each stage of the pass and the waits for helper threads")
	drafts := fs.String("draft", "", "time greedy decoding with these drafting `modes`, comma-separated (off, lookup, chains, auto), on the prompt of --prompt-file, on -m or the built-in trained model (random weights accept no drafts)")
	promptFile := fs.String("prompt-file", "", "with --draft, the prompt (text `file`)")
	draftMax := fs.Int("draft-max", nn.DefaultDraftMax, "with --draft, the most tokens drafted per pass; with --verify, the largest k timed")
	chains := fs.String("chains", "", "with --draft, chain buckets (CHNB `file`) instead of those beside the model")
	serveURL := fs.String("serve", "", "time a running server at this `URL` (bitvk serve, or any OpenAI-compatible one): -c streams at once, each -n tokens of the --prompt-file prompt")
	clients := fs.String("c", "1,4", "with --serve, numbers of concurrent streams, comma-separated")
	apiKey := fs.String("api-key", "", "with --serve, the server's API key (default: $BITVK_API_KEY)")
	draftEvery := fs.Bool("draft-every", false, "with --draft, verify every draft, without the backoff: what the drafters guess right and what verifying it all costs")
	verify := fs.Bool("verify", false, "time the verification pass: k+1 tokens with every token's logits, over a one-token step, k = 0…--draft-max")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case *path != "" && hf != "":
		return usageError(fs, "give -m or -hf, not both")
	}
	prompts, err := intList(*nPrompt, 0)
	if err != nil {
		return usageError(fs, "-p: %v", err)
	}
	gens, err := intList(*nGen, 0)
	if err != nil {
		return usageError(fs, "-n: %v", err)
	}
	depths, err := intList(*nDepth, 0)
	if err != nil {
		return usageError(fs, "-d: %v", err)
	}
	ts := []int{0}
	if *threads != "" {
		if ts, err = intList(*threads, 1); err != nil {
			return usageError(fs, "-t: %v", err)
		}
	}
	if *reps < 1 {
		return usageError(fs, "-r must be at least 1")
	}
	headList := strings.Split(*heads, ",")
	backendList := strings.Split(*backends, ",")
	var fuseList []gpu.Fusion
	for _, f := range strings.Split(*fuses, ",") {
		mode, ok := fusionModes[f]
		if !ok {
			return usageError(fs, "--fuse: unknown mode %q (choose auto, on or off)", f)
		}
		fuseList = append(fuseList, mode)
	}
	kernelList := []string{""}
	if *kernelSets != "" {
		kernelList = strings.Split(*kernelSets, ",")
		for _, k := range kernelList {
			if err := checkKernelSet(k); err != nil || k == "" {
				return usageError(fs, "--kernels: %q is not a kernel set this CPU runs (%s)", k, strings.Join(cpu.KernelNames(), ", "))
			}
		}
	}
	for _, h := range headList {
		for _, be := range backendList {
			bf := backendFlags{backend: be, head: h}
			if err := bf.check(fs); err != nil {
				return err
			}
		}
	}
	if flagGiven(fs, "d") && (*serveURL != "" || *drafts != "" || *verify) {
		return usageError(fs, "-d goes with the prompt and generation tests, not --serve, --draft or --verify")
	}
	if *profile && (*serveURL != "" || *drafts != "") {
		return usageError(fs, "--profile goes with the prompt, generation and --verify tests, not --serve or --draft")
	}
	if *serveURL != "" {
		if *drafts != "" || *verify || *path != "" || hf != "" {
			return usageError(fs, "--serve times a running server: give no --draft, --verify, -m or -hf")
		}
		if u, err := url.Parse(*serveURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError(fs, "--serve %q is not an http(s) URL such as http://127.0.0.1:8080", *serveURL)
		}
		cs, err := intList(*clients, 1)
		if err != nil {
			return usageError(fs, "-c: %v", err)
		}
		if len(gens) != 1 || gens[0] < 1 {
			return usageError(fs, "with --serve, give one generation length -n (≥ 1)")
		}
		sb := serveBench{url: *serveURL, key: *apiKey, clients: cs, n: gens[0], reps: *reps, asJSON: *asJSON, timeout: 30 * time.Minute,
			prompt: "In the beginning God created the heaven and the earth."}
		if sb.key == "" {
			sb.key = os.Getenv("BITVK_API_KEY")
		}
		if *promptFile != "" {
			if sb.prompt, err = readPromptFile(*promptFile); err != nil {
				return err
			}
		}
		return runServeBench(sb, stdout, stderr)
	}
	shapeSet := flagGiven(fs, "shape")
	if *drafts != "" {
		if *verify {
			return usageError(fs, "give --draft or --verify, not both")
		}
		db := draftBench{src: modelSource{path: *path, hf: hf, notes: stderr}, modes: strings.Split(*drafts, ","), n: 128, reps: *reps, asJSON: *asJSON}
		if shapeSet {
			db.src.shape = *shape
		}
		if !db.src.given() {
			return usageError(fs, "give one of -m, -hf and --shape")
		}
		if len(gens) != 1 || gens[0] < 1 {
			return usageError(fs, "with --draft, give one generation length -n (≥ 1)")
		}
		db.n = gens[0]
		db.df = draftFlags{mode: "off", max: *draftMax, chains: *chains}
		db.every = *draftEvery
		for _, mode := range db.modes {
			d := db.df
			d.mode = mode
			if err := d.check(fs); err != nil {
				return err
			}
		}
		if *chains != "" && !slices.ContainsFunc(db.modes, func(m string) bool { return m == "chains" || m == "auto" }) {
			return usageError(fs, "--chains is used by --draft chains or auto")
		}
		if len(headList) != 1 || len(backendList) != 1 || len(ts) != 1 {
			return usageError(fs, "with --draft, give one --head, one --backend and one -t")
		}
		db.bf = backendFlags{backend: backendList[0], head: headList[0], threads: ts[0], device: *device, notes: stderr}
		if *promptFile == "" {
			return usageError(fs, "--draft needs the prompt: --prompt-file FILE")
		}
		if db.prompt, err = readPromptFile(*promptFile); err != nil {
			return err
		}
		return runDraftBench(db, stdout, stderr)
	}
	if *promptFile != "" || *chains != "" {
		return usageError(fs, "--prompt-file goes with --draft or --serve, --chains with --draft")
	}
	if *draftMax < 1 || *draftMax > nn.MaxDraft {
		return usageError(fs, "--draft-max %d: want 1..%d", *draftMax, nn.MaxDraft)
	}
	positive := func(v int) bool { return v > 0 }
	if !*verify && !slices.ContainsFunc(prompts, positive) && !slices.ContainsFunc(gens, positive) {
		return usageError(fs, "nothing to time: every -p and -n is 0")
	}
	if !flagGiven(fs, "m") && !flagGiven(fs, "hf") {
		if _, ok := synth.Shapes[*shape]; !ok {
			return usageError(fs, "unknown shape %q (choose from %s)", *shape, strings.Join(synth.ShapeNames(), ", "))
		}
	}
	if hf != "" {
		if *path, err = pullModel(hf, stderr); err != nil {
			return err
		}
	}
	var results []benchResult
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !*asJSON {
		fmt.Fprintln(tw, "model\tsize\tparams\tbackend\thead\tthreads\ttest\tt/s\troofline\t")
	}
	if *path == "" {
		fmt.Fprintf(stderr, "writing the synthetic %s model…\n", *shape)
		tmp, cleanup, err := writeSynth(*shape)
		if err != nil {
			return err
		}
		defer cleanup()
		*path = tmp
	}
	// A test needs a context as long as itself: say so before loading.
	if longest := slices.Max(append(slices.Clone(prompts), gens...)); !*verify {
		limit, err := (&modelSource{path: *path}).contextLimit()
		if err != nil {
			return err
		}
		if d := slices.Max(depths); longest+d > limit {
			return fmt.Errorf("a test of %d tokens (-p or -n) at depth %d (-d) needs a context of %d positions; the model holds at most %d", longest, d, longest+d, limit)
		}
	}
	if *verify {
		return runVerifyBench(*path, backendList, headList, kernelList, ts, *device, *draftMax, *reps, *asJSON, *profile, stdout, stderr)
	}
	bandwidth := map[string]float64{} // by backend and threads
	var bwOrder []string
	for _, be := range backendList {
		be = chooseBackend(backendFlags{backend: be, device: *device, notes: stderr})
		fl, kl := fuseList, kernelList
		if be != "vulkan" {
			fl = fl[:1] // the CPU has no fusion to choose
		} else {
			kl = kl[:1] // nor Vulkan CPU kernel sets
		}
		for _, head := range headList {
			for _, fuse := range fl {
				for _, ks := range kl {
					if err := benchBackend(benchRun{be, head, fuse, ks, *device, *path, ts, prompts, gens, depths, *reps, *asJSON, *profile}, tw, stderr, bandwidth, &bwOrder, &results); err != nil {
						return err
					}
				}
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(results) > 0 {
		fmt.Fprintf(stdout, "cpu: %s, %d logical CPUs\n", results[0].CPUInfo, runtime.NumCPU())
	}
	for _, k := range bwOrder {
		fmt.Fprintf(stdout, "memory bandwidth: %.1f GB/s on %s (roofline = bandwidth / bytes read per token)%s\n", bandwidth[k]/1e9, k, reprobed(results, k))
	}
	printPeaks(stdout, results)
	printScaling(stdout, results)
	for _, r := range results {
		if r.Profile != nil {
			printProfile(stdout, r)
		}
	}
	return nil
}

// printPeaks says, once per backend and kernel set, which int8 peak the
// prompt tests' shares divide by.
func printPeaks(w io.Writer, results []benchResult) {
	seen := map[string]bool{}
	for _, r := range results {
		k := r.Backend + r.GPUInfo + r.Kernels
		if r.Int8Share == nil || seen[k] {
			continue
		}
		seen[k] = true
		if r.Backend == "CPU" {
			fmt.Fprintf(w, "int8 peak: %.0f GMAC/s on one thread (%s probe; a prompt's share = tokens/s · %.3g ternary multiply-adds per token / the probe run on all its threads at once%s)\n",
				cpuPeaks[r.Kernels], r.Kernels, float64(r.MACsPerToken), sharedCores(results, r.Kernels))
		} else {
			fmt.Fprintf(w, "int8 peak: %.0f GMAC/s on %s (int8_peak kernel, %s; a prompt's share = tokens/s · %.3g ternary multiply-adds per token / the peak)\n",
				r.Int8PeakGMACs, r.GPUInfo, r.Kernels, float64(r.MACsPerToken))
		}
	}
}

// printScaling says, for each CPU decode test run on several thread
// counts (one head, kernel set, length and depth), how many times the
// fewest threads' tok/s each larger count decodes at, beside how many
// times their bandwidth the read probe found beside its repetitions (the
// rooflines' ratio): decode is memory-bound, so the first should follow
// the second.
func printScaling(w io.Writer, results []benchResult) {
	type test struct {
		head, kernels string
		gen, depth    int
	}
	base := map[test]benchResult{}
	var order []test
	var decode []benchResult
	for _, r := range results {
		if r.Backend != "CPU" || r.NGen == 0 || r.NPrompt != 0 || r.AvgTs <= 0 || r.BandwidthGBs <= 0 {
			continue
		}
		decode = append(decode, r)
		k := test{r.Head, r.Kernels, r.NGen, r.NDepth}
		b, ok := base[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || r.NThreads < b.NThreads {
			base[k] = r
		}
	}
	for _, k := range order {
		b := base[k]
		for _, r := range decode {
			if (test{r.Head, r.Kernels, r.NGen, r.NDepth}) != k || r.NThreads <= b.NThreads {
				continue
			}
			depth := ""
			if k.depth > 0 {
				depth = fmt.Sprintf(" @ d%d", k.depth)
			}
			fmt.Fprintf(w, "thread scaling: tg%d%s, %s head, %s: %d threads %.2f× the tok/s of %d, with %.2f× the bandwidth beside them (%.1f against %.1f GB/s)\n",
				k.gen, depth, k.head, k.kernels, r.NThreads, r.AvgTs/b.AvgTs, b.NThreads, r.BandwidthGBs/b.BandwidthGBs, r.BandwidthGBs, b.BandwidthGBs)
		}
	}
}

// sharedCores describes the all-threads peaks of the CPU prompt tests of
// kernel set set against one thread's, by thread count: where n threads
// reach less than 0.8·n times one, they share cores, and the text says so.
func sharedCores(results []benchResult, set string) string {
	one := cpuPeaks[set]
	lo, hi := map[int]float64{}, map[int]float64{}
	var counts []int
	for _, r := range results {
		if r.Backend != "CPU" || r.Kernels != set || r.Int8Share == nil || r.NThreads < 2 || one == 0 {
			continue
		}
		n, p := r.NThreads, r.Int8PeakGMACs
		if _, ok := lo[n]; !ok {
			counts = append(counts, n)
			lo[n], hi[n] = p, p
		}
		lo[n], hi[n] = min(lo[n], p), max(hi[n], p)
	}
	var parts []string
	for _, n := range counts {
		part := fmt.Sprintf("%d threads %.0f, %.2f× one", n, lo[n], lo[n]/one)
		if hi[n] > lo[n] {
			part = fmt.Sprintf("%d threads %.0f-%.0f, %.2f-%.2f× one", n, lo[n], hi[n], lo[n]/one, hi[n]/one)
		}
		if lo[n] < 0.8*float64(min(n, runtime.NumCPU()))*one {
			part += ": they shared cores at times"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// kernelsLabel names a result's kernels, ", fused" for a Vulkan decode
// step that runs fused (--fuse), and the Vulkan kernel shapes changed from
// the defaults (BITVK_VK_TUNE).
func kernelsLabel(r benchResult) string {
	l := r.Kernels
	if r.Fused != nil && *r.Fused {
		l += ", fused"
	}
	if r.Tune != "" {
		l += ", " + r.Tune
	}
	return l
}

// fusionModes are --fuse's values.
var fusionModes = map[string]gpu.Fusion{"auto": gpu.FuseAuto, "on": gpu.FuseOn, "off": gpu.FuseOff}

// benchRun is one backend, head and fusion of a bench command.
type benchRun struct {
	backend, head string
	fuse          gpu.Fusion
	kernels       string // the CPU kernel set; "": the default
	device        int
	path          string
	threads       []int
	prompts, gens []int
	depths        []int // -d: tokens in the cache before each test
	reps          int
	asJSON        bool
	profile       bool
}

// benchBackend times every test of one backend and head, measuring the
// memory bandwidth it is held to the first time it meets that device.
func benchBackend(br benchRun, tw io.Writer, stderr io.Writer, bandwidth map[string]float64, bwOrder *[]string, results *[]benchResult) error {
	ts := br.threads
	if br.backend == "vulkan" {
		ts = []int{0} // threads are the CPU backend's
	}
	prompts, gens, head := br.prompts, br.gens, br.head
	for _, t := range ts {
		{
			bf := backendFlags{backend: br.backend, device: br.device, threads: t, head: br.head, fuse: br.fuse, kernels: br.kernels}
			longest := 1
			for _, p := range prompts {
				longest = max(longest, p)
			}
			for _, g := range gens {
				longest = max(longest, g)
			}
			bf.ctx = longest + slices.Max(br.depths)
			m, err := openModel(br.path, bf)
			if err != nil {
				return err
			}
			var probe *cpu.BandwidthProbe
			closeAll := func() {
				m.Close()
				if probe != nil {
					probe.Close()
				}
			}
			threadsUsed := t
			var key string
			var measure, reprobe func() (float64, error)
			switch b := m.backend.(type) {
			case *cpu.Backend:
				threadsUsed = b.Threads()
				key = cpuKey(threadsUsed)
				if d := b.DecodeThreads(); d != threadsUsed && slices.ContainsFunc(gens, func(g int) bool { return g > 0 }) {
					fmt.Fprintf(stderr, "bench: this model decodes on %d thread of the %d (it reads under 16 MiB a token: a step's hand-offs would cost more than they save); its prompts take all %d\n", d, threadsUsed, threadsUsed)
				}
				// The CPU's probe is taken again between a decode test's
				// repetitions (see timeTest): a VM's bandwidth moves with
				// its neighbours' load, and a roofline measured at another
				// moment than the decode says little.
				if probe, err = cpu.NewBandwidthProbe(threadsUsed, 512<<20); err != nil {
					closeAll()
					return err
				}
				measure = func() (float64, error) { return probe.Measure(5) }
				reprobe = func() (float64, error) { return probe.Measure(2) }
			case *gpu.Backend:
				threadsUsed = 0
				key = b.Device().Name
				measure = func() (float64, error) { return b.MeasureBandwidth(512<<20, 5) }
			}
			if _, ok := bandwidth[key]; !ok {
				if bandwidth[key], err = measure(); err != nil {
					closeAll()
					return err
				}
				*bwOrder = append(*bwOrder, key)
			}
			base := benchBase(m, head, threadsUsed, bandwidth[key])
			if b, ok := m.backend.(*gpu.Backend); ok && slices.ContainsFunc(prompts, func(p int) bool { return p > 0 }) {
				// The device's peak through the kernel set's dot4, once
				// per device and set (--head and --fuse do not change it).
				pk := key + ", " + b.Kernels()
				if _, ok := gpuPeaks[pk]; !ok {
					if gpuPeaks[pk], err = b.MeasureInt8Peak(5); err != nil {
						closeAll()
						return err
					}
				}
				base.Int8PeakGMACs = gpuPeaks[pk] / 1e9
			}
			var tests []benchResult
			for _, d := range br.depths {
				base := base
				if d > 0 {
					// At a depth the K/V cache is a real part of a decode
					// step's read: its mean length over the test.
					base.BytesPerToken += kvBytes(*m.config, d)
					base.RooflineTs = base.BandwidthGBs * 1e9 / float64(base.BytesPerToken)
				}
				for _, p := range prompts {
					if p > 0 {
						r := base
						r.NPrompt, r.NDepth = p, d
						tests = append(tests, r)
					}
				}
				for _, g := range gens {
					if g > 0 {
						r := base
						r.NGen, r.NDepth = g, d
						tests = append(tests, r)
					}
				}
			}
			for _, r := range tests {
				fmt.Fprintf(stderr, "timing %s…\n", testName(r))
				if err := timeTest(m, &r, br.reps, reprobe); err != nil {
					closeAll()
					return err
				}
				if br.profile {
					if r.Profile, err = profileTest(m.backend, r, br.reps); err != nil {
						closeAll()
						return err
					}
				}
				*results = append(*results, r)
				if !br.asJSON {
					printBenchRow(tw, r)
				}
			}
			closeAll()
		}
	}
	return nil
}

// benchBase fills what every test of one loaded model shares.
func benchBase(m *model, head string, threads int, bw float64) benchResult {
	var size, params int64
	for i := range m.file.Tensors {
		size += int64(m.file.Tensors[i].Size)
		params += int64(m.file.Tensors[i].Elements())
	}
	ternary := m.weights.Layers[0].AttnQ.Type
	r := benchResult{
		ModelType:    fmt.Sprintf("%s %s %s", m.config.Arch, paramLabel(params), ternary),
		ModelSize:    size,
		ModelNParams: params,
		Backend:      "CPU",
		CPUInfo:      cpu.Name(),
		Head:         string(m.head),
		NThreads:     threads,
		BandwidthGBs: bw / 1e9,
	}
	switch b := m.backend.(type) {
	case *cpu.Backend:
		r.Kernels = b.Kernels()
	case *gpu.Backend:
		r.Backend = "Vulkan"
		r.Kernels = b.Kernels()
		r.GPUInfo = b.Device().Name
		fused := b.Fused()
		r.Fused = &fused
		r.Tune = b.Tuning().Changed().String()
	}
	r.BytesPerToken = bytesPerToken(m)
	r.RooflineTs = bw / float64(r.BytesPerToken)
	return r
}

// bytesPerToken is what one decode step reads from memory: every ternary
// projection, the norms and the output head as the backend holds it
// (each backend says what its head reads, HeadBytes; otherwise m.head:
// float16 rows; int8 rows and a scale per row with q8; int8 codes and a
// float32 scale per group for the block types).
// The K/V cache read grows with the position; bench's short runs keep it
// under 1% of the weights, and it is left out.
func bytesPerToken(m *model) int64 {
	var n int64
	w := m.weights
	for _, L := range w.Layers {
		for _, t := range []nn.Tensor{L.AttnNorm, L.AttnQ, L.AttnK, L.AttnV, L.AttnOutput, L.AttnSubNorm, L.FFNNorm, L.FFNGate, L.FFNUp, L.FFNDown, L.FFNSubNorm} {
			n += int64(len(t.Data))
		}
	}
	n += int64(len(w.OutputNorm.Data))
	weights := int64(w.Output.In * w.Output.Out)
	if hb, ok := m.backend.(interface{ HeadBytes() int64 }); ok {
		return n + hb.HeadBytes() // the head as the backend holds it
	}
	switch g := m.head.Group(); {
	case m.head == nn.HeadQ8:
		n += weights + 4*int64(w.Output.Out)
	case g > 0:
		n += weights + 4*weights/int64(g)
	default:
		n += 2 * weights
	}
	return n
}

// kvBytes is what a decode step at position pos reads of the K/V cache:
// both halves, float16, every layer and KV head (both backends store them
// so). Bench counts it only at a depth (-d), at the depth itself.
func kvBytes(c nn.Config, pos int) int64 {
	return int64(c.Layers) * 2 * int64(c.KVHeads*c.HeadDim) * 2 * int64(pos)
}

// timeTest runs one test reps times after a warm-up: a prompt test
// evaluates NPrompt tokens in one batch from an empty cache; a generation
// test evaluates NGen tokens one at a time, each with its logits. With
// probe, a generation test's roofline is the mean of the bandwidths it
// measures before each repetition and after the last.
func timeTest(m *model, r *benchResult, reps int, probe func() (float64, error)) error {
	rng := rand.New(rand.NewPCG(uint64(r.NPrompt), uint64(r.NGen)))
	n := max(r.NPrompt, r.NGen)
	toks := make([]int32, r.NDepth+n)
	for i := range toks {
		toks[i] = int32(rng.IntN(m.config.Vocab))
	}
	e := m.engine
	once := func() (time.Duration, error) {
		e.Reset()
		if r.NDepth > 0 { // the depth, untimed, as a prompt
			if _, err := e.Eval(toks[:r.NDepth]); err != nil {
				return 0, fmt.Errorf("filling the context to depth %d: %w", r.NDepth, err)
			}
		}
		toks := toks[r.NDepth:]
		start := time.Now()
		if r.NPrompt > 0 {
			_, err := e.Eval(toks)
			return time.Since(start), err
		}
		for _, t := range toks {
			if _, err := e.Eval([]int32{t}); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	if _, err := once(); err != nil { // warm-up
		return err
	}
	var bws []float64
	reprobe := func() error {
		if probe == nil || r.NGen == 0 {
			return nil
		}
		bw, err := probe()
		bws = append(bws, bw)
		return err
	}
	// A CPU prompt's peak: its threads' int8 probe run all at once, before
	// the repetitions and after them; the threads may share cores, and a
	// virtual machine's host may change that from minute to minute.
	_, onCPU := m.backend.(*cpu.Backend)
	var peaks []float64
	peakProbe := func() error {
		if !onCPU || r.NPrompt == 0 {
			return nil
		}
		p, err := cpu.Int8PeakThreads(r.Kernels, min(r.NThreads, runtime.NumCPU()), 100*time.Millisecond)
		peaks = append(peaks, p)
		return err
	}
	if err := peakProbe(); err != nil {
		return err
	}
	for i := 0; i < reps; i++ {
		if err := reprobe(); err != nil {
			return err
		}
		d, err := once()
		if err != nil {
			return err
		}
		r.SamplesNs = append(r.SamplesNs, d.Nanoseconds())
		r.SamplesTs = append(r.SamplesTs, float64(n)/d.Seconds())
	}
	if err := reprobe(); err != nil {
		return err
	}
	if err := peakProbe(); err != nil {
		return err
	}
	if len(bws) > 0 {
		bw, _ := meanSDf(bws)
		r.BandwidthGBs = bw / 1e9
		r.RooflineTs = bw / float64(r.BytesPerToken)
	}
	r.AvgNs, r.StddevNs = meanSD(r.SamplesNs)
	r.AvgTs, r.StddevTs = meanSDf(r.SamplesTs)
	if r.NGen > 0 && r.RooflineTs > 0 {
		share := r.AvgTs / r.RooflineTs
		r.RooflineShare = &share
	} else {
		r.BytesPerToken, r.RooflineTs = 0, 0
	}
	if len(peaks) > 0 {
		if _, err := int8Peak(r.Kernels); err != nil { // one core's, printed beside
			return err
		}
		r.Int8PeakGMACs, _ = meanSDf(peaks)
	}
	if r.NPrompt > 0 && r.Int8PeakGMACs > 0 {
		r.MACsPerToken = ternaryMACs(m.weights)
		share := r.AvgTs * float64(r.MACsPerToken) / 1e9 / r.Int8PeakGMACs
		r.Int8Share = &share
	} else {
		r.Int8PeakGMACs = 0
	}
	return nil
}

// cpuKey names the CPU with threads workers among bench's devices.
func cpuKey(threads int) string { return fmt.Sprintf("the CPU with %d threads", threads) }

// reprobed describes the bandwidths the decode tests on the CPU of key
// measured between their repetitions (timeTest), which their rooflines use.
func reprobed(results []benchResult, key string) string {
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		if r.Backend == "CPU" && r.NGen > 0 && cpuKey(r.NThreads) == key {
			lo, hi = min(lo, r.BandwidthGBs), max(hi, r.BandwidthGBs)
		}
	}
	if hi == 0 {
		return ""
	}
	return fmt.Sprintf("; beside each decode test's repetitions %.1f-%.1f GB/s, its roofline's", lo, hi)
}

// gpuPeaks holds gpu.Backend.MeasureInt8Peak by device and kernel set,
// measured once per run.
var gpuPeaks = map[string]float64{}

// cpuPeaks holds cpu.Int8Peak by kernel set, measured once per run.
var cpuPeaks = map[string]float64{}

// int8Peak returns one core's int8 peak in GMAC/s with the kernel set
// called set, measured the first time a run asks.
func int8Peak(set string) (float64, error) {
	if p, ok := cpuPeaks[set]; ok {
		return p, nil
	}
	p, err := cpu.Int8Peak(set, 200*time.Millisecond)
	if err != nil {
		return 0, err
	}
	cpuPeaks[set] = p
	return p, nil
}

// ternaryMACs is the multiply-adds of a token's ternary projections.
func ternaryMACs(w *nn.Weights) int64 {
	var n int64
	for _, L := range w.Layers {
		for _, t := range []nn.Tensor{L.AttnQ, L.AttnK, L.AttnV, L.AttnOutput, L.FFNGate, L.FFNUp, L.FFNDown} {
			n += int64(t.In) * int64(t.Out)
		}
	}
	return n
}

// profileTest times the dispatches of one pass of a test: the decode
// step at the generation test's last position, or the prompt test's last
// chunk (the whole prompt when it fits one pass): the one whose attention
// reads the most of the cache, which a long prompt spends most of its
// time on.
func profileTest(be nn.Backend, r benchResult, reps int) (*profileJSON, error) {
	n, pos := 1, r.NDepth+r.NGen-1
	batch := be.(interface{ Batch() int }).Batch() // both backends say theirs
	if r.NPrompt > 0 {
		n = min(r.NPrompt, batch)
		pos = r.NDepth + r.NPrompt - n
	}
	p, err := profilePass(be, n, pos, reps, false)
	if err == nil && r.NPrompt > 0 && p.Dispatches > 0 {
		p.SubmitsPerToken = math.Ceil(float64(r.NPrompt)/float64(batch)) / float64(r.NPrompt)
	}
	return p, err
}

// profilePass times the stages (CPU) or dispatches (Vulkan) of a pass of
// n tokens at positions pos…: with all, a verification pass (every
// token's logits); else a decode step (n = 1) or a prompt chunk.
func profilePass(be nn.Backend, n, pos, reps int, all bool) (*profileJSON, error) {
	if c, ok := be.(*cpu.Backend); ok {
		prof := c.ProfileForward
		if all {
			prof = c.ProfileVerify
		}
		p, err := prof(n, pos, max(reps, 5))
		if err != nil {
			return nil, err
		}
		out := &profileJSON{Tokens: p.Tokens, Pos: p.Pos, WallNs: p.WallNanoseconds, WaitNs: p.WaitNanoseconds, AllLogits: all}
		for _, st := range p.Stages {
			k := gpu.KernelTime{Label: st.Label, Kernel: st.Kernel, Calls: st.Calls, Nanoseconds: st.Nanoseconds,
				Share: st.Nanoseconds / p.WallNanoseconds, Bytes: st.Bytes, WaitNs: st.WaitNanoseconds, MACs: st.MACs}
			if st.Bytes > 0 {
				k.GBs = float64(st.Bytes) / st.Nanoseconds
			}
			if st.MACs > 0 && st.Nanoseconds > 0 {
				k.GMACs = float64(st.MACs) / st.Nanoseconds
			}
			out.Kernels = append(out.Kernels, k)
		}
		return out, nil
	}
	b := be.(*gpu.Backend)
	prof := b.ProfileForward
	if all {
		prof = b.ProfileVerify
	}
	p, err := prof(n, pos, reps)
	if err != nil {
		return nil, err
	}
	return &profileJSON{Tokens: p.Tokens, Pos: p.Pos, GPUNs: p.GPUNanoseconds, WallNs: p.WallNanoseconds,
		Dispatches: p.Counts.Dispatches, Barriers: p.Counts.Barriers, Transfers: p.Counts.Transfers,
		SubmitsPerToken: 1 / float64(n), AllLogits: all, Kernels: p.ByLabel()}, nil
}

// printProfile prints one test's profile: a line of totals, then a row
// per stage of the pass, most time first.
func printProfile(w io.Writer, r benchResult) {
	p := r.Profile
	what := fmt.Sprintf("greedy decode step at position %d", p.Pos)
	test := testName(r)
	switch {
	case p.AllLogits:
		what = fmt.Sprintf("a verification pass of 1 token (k = 0 drafted) at position %d, its logits", p.Pos)
		if p.Tokens > 1 {
			what = fmt.Sprintf("a verification pass of %d tokens (k = %d drafted) at positions %d-%d, every token's logits", p.Tokens, p.Tokens-1, p.Pos, p.Pos+p.Tokens-1)
		}
		test = "verify"
	case r.NPrompt > 0:
		what = fmt.Sprintf("the prompt's last chunk, %d tokens at positions %d-%d", p.Tokens, p.Pos, p.Pos+p.Tokens-1)
	}
	if r.Backend == "CPU" {
		fmt.Fprintf(w, "\nprofile of %s, %s head, CPU (%s), %d threads: %s, %.1f µs; the calling thread waited %.1f µs (%.1f%%) for its helpers (hand-offs and imbalance, inside the stages' times)\n",
			test, r.Head, r.Kernels, r.NThreads, what, p.WallNs/1e3, p.WaitNs/1e3, 100*p.WaitNs/p.WallNs)
	} else {
		fmt.Fprintf(w, "\nprofile of %s, %s head, %s (%s): %s, GPU %.1f µs (submit and wait %.1f µs); %d dispatches, %d barriers, %d transfers per pass, %.3g submits per token\n",
			test, r.Head, r.GPUInfo, kernelsLabel(r), what, p.GPUNs/1e3, p.WallNs/1e3, p.Dispatches, p.Barriers, p.Transfers, p.SubmitsPerToken)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	cpuWaits := r.Backend == "CPU" && r.NThreads > 1
	head := "stage\tkernel\tcalls\ttime µs\tshare\tMB\tGB/s\t"
	if cpuWaits {
		head += "waited µs\t"
	}
	fmt.Fprintln(tw, head)
	for _, k := range p.Kernels {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f%%\t%.2f\t%.1f\t", k.Label, k.Kernel, k.Calls, k.Nanoseconds/1e3, 100*k.Share, float64(k.Bytes)/1e6, k.GBs)
		if cpuWaits {
			fmt.Fprintf(tw, "%.1f\t", k.WaitNs/1e3)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	// A prompt's products are bound by their multiply-adds: set against the
	// int8 probe run on the test's threads, they say how much of the
	// prompt's share of the peak the kernels lose and how much the rest of
	// the pass does.
	if r.Backend == "CPU" && r.NPrompt > 0 && r.Int8PeakGMACs > 0 {
		for _, k := range p.Kernels {
			if k.GMACs > 0 {
				threads := "threads"
				if r.NThreads == 1 {
					threads = "thread"
				}
				fmt.Fprintf(w, "%s: %.1f GMAC/s, %.0f%% of the int8 peak of %.0f GMAC/s on %d %s (the whole pass: %.0f%%)\n",
					k.Label, k.GMACs, 100*k.GMACs/r.Int8PeakGMACs, r.Int8PeakGMACs, r.NThreads, threads, 100*float64(r.MACsPerToken)*float64(p.Tokens)/p.WallNs/r.Int8PeakGMACs)
			}
		}
	}
}

// testName is llama-bench's name of a test: pp128 (prompt), tg64
// (generation), with " @ d4096" after a test at a depth.
func testName(r benchResult) string {
	name := fmt.Sprintf("pp%d", r.NPrompt)
	if r.NGen > 0 {
		name = fmt.Sprintf("tg%d", r.NGen)
	}
	if r.NDepth > 0 {
		name += fmt.Sprintf(" @ d%d", r.NDepth)
	}
	return name
}

func printBenchRow(w io.Writer, r benchResult) {
	test := testName(r)
	roof := ""
	if r.NGen > 0 {
		roof = fmt.Sprintf("%.0f%% of %.1f", 100**r.RooflineShare, r.RooflineTs)
	} else if r.Int8Share != nil {
		roof = fmt.Sprintf("%.0f%% of int8 %.0f", 100**r.Int8Share, r.Int8PeakGMACs)
	}
	fmt.Fprintf(w, "%s\t%.2f GiB\t%.2f B\t%s (%s)\t%s\t%d\t%s\t%.2f ± %.2f\t%s\t\n",
		r.ModelType, float64(r.ModelSize)/(1<<30), float64(r.ModelNParams)/1e9, r.Backend, kernelsLabel(r), r.Head, r.NThreads, test, r.AvgTs, r.StddevTs, roof)
}

func paramLabel(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0fK", float64(n)/1e3)
}

func meanSD(xs []int64) (int64, int64) {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	m, sd := meanSDf(f)
	return int64(m), int64(sd)
}

// meanSDf returns the mean and the sample standard deviation (0 for one sample).
func meanSDf(xs []float64) (float64, float64) {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(xs)-1))
}

// intList parses "1,2,4" into numbers of at least lo.
func intList(s string, lo int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < lo {
			return nil, fmt.Errorf("%q is not a number ≥ %d", f, lo)
		}
		out = append(out, v)
	}
	return out, nil
}
