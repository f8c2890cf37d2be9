package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/cpu"
	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/nn/ref"
	"github.com/bitvk/bitvk/nn/synth"
)

func parseIDList(t *testing.T, s string) []int {
	t.Helper()
	var ids []int
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q is not a list of ids", s)
		}
		ids = append(ids, v)
	}
	return ids
}

func TestRunTokens(t *testing.T) {
	path := synthTiny(t)
	args := []string{"run", "-m", path, "--tokens", "274,10,20,30", "-n", "12", "--seed", "7", "-t", "2"}
	code, out, stderr := bitvk(args...)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	ids := parseIDList(t, out)
	if len(ids) != 12 {
		t.Errorf("generated %d ids, want 12: %q", len(ids), out)
	}
	for _, id := range ids {
		if id < 0 || id >= 279 {
			t.Errorf("id %d outside the vocabulary", id)
		}
	}
	for _, want := range []string{"load:", "prompt:", "4 tokens", "generated:", "12 tokens", "tok/s", "stopped: length"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("summary lacks %q:\n%s", want, stderr)
		}
	}
	if _, out2, _ := bitvk(args...); out2 != out {
		t.Errorf("the same --seed gave different output:\n%s\n%s", out, out2)
	}
	// Greedy decoding follows the oracle.
	code, out, stderr = bitvk("run", "-m", path, "--tokens", "274,10", "-n", "5", "--temp", "0", "-t", "1")
	if code != 0 {
		t.Fatalf("greedy run: exit %d: %s", code, stderr)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, _ := nn.ParseConfig(f)
	w, err := nn.LoadWeights(f, c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ref.New(c, w)
	if err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for _, tok := range []int32{274, 10} {
		logits, _ = r.Forward(tok)
	}
	got := parseIDList(t, out)
	first, second := argmax2(logits)
	if logits[first]-logits[second] > 0.5 && got[0] != first {
		t.Errorf("greedy first token %d, oracle %d", got[0], first)
	}
}

func argmax2(x []float32) (int, int) {
	a, b := 0, 1
	if x[b] > x[a] {
		a, b = b, a
	}
	for i := 2; i < len(x); i++ {
		switch {
		case x[i] > x[a]:
			a, b = i, a
		case x[i] > x[b]:
			b = i
		}
	}
	return a, b
}

func TestRunErrors(t *testing.T) {
	path := synthTiny(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--tokens", "1", "-m", path, "--shape", "tiny"}, 2, "only one of"},
		{[]string{"run", "-m", path}, 2, "--tokens"},
		{[]string{"run", "-m", path, "--tokens", "1,x"}, 2, `"x" is not a token id`},
		{[]string{"run", "-m", path, "--tokens", "1,-2"}, 2, "not a token id"},
		{[]string{"run", "-m", path, "--tokens", "1,279"}, 1, "outside the vocabulary"},
		{[]string{"run", "-m", path, "--tokens", "1", "-c", "4096"}, 1, "maximum of 512"},
		{[]string{"run", "-m", path, "--tokens", "1,2,3", "-c", "2"}, 1, "context is full"},
		{[]string{"run", "-m", path, "--tokens", "1", "--backend", "tpu"}, 2, "unknown backend"},
		{[]string{"run", "-m", path, "--tokens", "1", "--head", "q4"}, 2, "--head"},
		{[]string{"run", "-m", path, "--tokens", "1", "-n", "0"}, 2, "-n"},
		{[]string{"run", "-m", path + ".missing", "--tokens", "1"}, 1, "no such file"},
	} {
		code, _, stderr := bitvk(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", tc.args[1:], code, tc.code, tc.msg, stderr)
		}
	}
	// The context fills during generation: a clean stop, not an error. The
	// seed is fixed: a random one sometimes samples an end-of-turn token
	// first.
	code, out, stderr := bitvk("run", "-m", path, "--tokens", "1,2", "-c", "6", "-n", "-1", "--seed", "1")
	if code != 0 || len(parseIDList(t, out)) != 5 || !strings.Contains(stderr, "stopped: context") {
		t.Errorf("generation to a full context: exit %d, %q, %s", code, out, stderr)
	}
}

func TestLogits(t *testing.T) {
	path := synthTiny(t)
	code, out, stderr := bitvk("logits", "-m", path, "--tokens", "274,5,6", "--top", "4", "--batch", "2")
	if code != 0 {
		t.Fatalf("logits: exit %d: %s", code, stderr)
	}
	type line struct {
		Pos   int          `json:"pos"`
		Token int          `json:"token"`
		Top   [][2]float64 `json:"top"`
	}
	var lines []line
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	for i, l := range lines {
		if l.Pos != i || l.Token != []int{274, 5, 6}[i] || len(l.Top) != 4 {
			t.Errorf("line %d: %+v", i, l)
		}
		for j := 1; j < len(l.Top); j++ {
			if l.Top[j][1] > l.Top[j-1][1] {
				t.Errorf("line %d: top not sorted highest first: %v", i, l.Top)
			}
		}
	}
	// --top 0 prints every logit; the first position agrees with the oracle.
	code, out, _ = bitvk("logits", "-m", path, "--tokens", "274", "--top", "0")
	var l line
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil || len(l.Top) != 279 {
		t.Fatalf("--top 0: exit %d, %v, %d logits", code, err, len(l.Top))
	}
	f, _ := gguf.Open(path)
	defer f.Close()
	c, _ := nn.ParseConfig(f)
	w, _ := nn.LoadWeights(f, c)
	r, _ := ref.New(c, w)
	want, _ := r.Forward(274)
	for _, p := range l.Top {
		id, v := int(p[0]), p[1]
		if d := v - float64(want[id]); d > 1e-3 || d < -1e-3 {
			t.Errorf("logit %d = %v, oracle %v", id, v, want[id])
		}
	}
	if code, _, stderr := bitvk("logits", "-m", path, "--tokens", "1", "--top", "-1"); code != 2 || !strings.Contains(stderr, "--top") {
		t.Errorf("--top -1: exit %d %s", code, stderr)
	}
}

func TestBenchJSON(t *testing.T) {
	code, out, stderr := bitvk("bench", "--shape", "tiny", "-p", "8", "-n", "4", "-r", "2", "-t", "1,2", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4 (pp8 and tg4 at 1 and 2 threads)", len(rs))
	}
	for _, r := range rs {
		for _, k := range []string{"model_type", "model_size", "model_n_params", "backend", "n_threads", "n_prompt", "n_gen", "avg_ts", "stddev_ts", "samples_ts", "bandwidth_gbs", "roofline_share"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result lacks %q: %v", k, r)
			}
		}
		if r["avg_ts"].(float64) <= 0 || len(r["samples_ts"].([]any)) != 2 || r["bandwidth_gbs"].(float64) <= 0 {
			t.Errorf("implausible result %v", r)
		}
		if r["cpu_info"] != cpu.Name() {
			t.Errorf("cpu_info %v, want the CPU's name %q", r["cpu_info"], cpu.Name())
		}
		if gen := r["n_gen"].(float64); (gen > 0) != (r["roofline_share"] != nil) {
			t.Errorf("roofline_share is for generation tests only: %v", r)
		}
		checkInt8Share(t, r)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-p", "8", "-n", "4", "-r", "1", "-t", "1,2", "--head", "f16,q8")
	if code != 0 || strings.Count(out, "thread scaling: tg4, ") != 2 || !strings.Contains(out, "f16 head") || !strings.Contains(out, "q8 head") ||
		!regexp.MustCompile(`2 threads [0-9.]+× the tok/s of 1, with [0-9.]+× the bandwidth beside them \([0-9.]+ against [0-9.]+ GB/s\)`).MatchString(out) {
		t.Errorf("bench of one and two threads: a thread scaling line per head: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-p", "8", "-n", "0", "-r", "1")
	if code != 0 || !strings.Contains(out, "% of int8 ") || !strings.Contains(out, "int8 peak: ") {
		t.Errorf("bench table of a prompt test: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "-p", "0", "-n", "2", "-r", "1", "--head", "f16,q8")
	if code != 0 || strings.Count(out, "tg2") != 2 || strings.Contains(out, "pp") || !strings.Contains(out, "GB/s") ||
		!strings.Contains(out, "\ncpu: "+cpu.Name()+", ") {
		t.Errorf("bench table: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := bitvk("bench", "--shape", "huge"); code == 0 || !strings.Contains(stderr, "unknown shape") {
		t.Errorf("unknown shape: exit %d %s", code, stderr)
	}
}

// bench -d runs each test after that many tokens are in the cache: a
// test per depth, named as llama-bench names it, with n_depth in the JSON
// and the K/V cache's read in a decode test's bytes at a depth.
func TestBenchDepth(t *testing.T) {
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-t", "1", "-p", "8", "-n", "4", "-d", "0,20", "-r", "1", "--json")
	if code != 0 {
		t.Fatalf("bench -d: exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench -d --json: %v\n%s", err, out)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4 (pp8 and tg4 at depths 0 and 20)", len(rs))
	}
	bytes := map[float64]float64{}
	for i, r := range rs {
		if d, want := r["n_depth"], float64(20*(i/2)); d != want {
			t.Errorf("result %d: n_depth %v, want %v", i, d, want)
		}
		if r["n_gen"].(float64) > 0 {
			bytes[r["n_depth"].(float64)] = r["bytes_per_token"].(float64)
		}
	}
	// The tiny shape's K/V cache: layers × (K and V) × KV width × 2 bytes
	// per position.
	c := synth.Shapes["tiny"]
	if got, want := bytes[20]-bytes[0], float64(c.Layers*2*c.KVHeads*(c.Embd/c.Heads)*2*20); got != want {
		t.Errorf("a decode step at depth 20 reads %v bytes more than at 0, want %v (the K/V cache)", got, want)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-t", "1", "-p", "0", "-n", "2", "-d", "30", "-r", "1")
	if code != 0 || !strings.Contains(out, "tg2 @ d30") {
		t.Errorf("bench -d table: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-d", "-1"}, "-d"},
		{[]string{"-d", "x"}, "-d"},
		{[]string{"-p", "8", "-n", "0", "-d", "1000000"}, "depth 1000000"},
		{[]string{"-d", "4", "--verify"}, "-d goes with"},
	} {
		code, _, stderr := bitvk(append([]string{"bench", "--shape", "tiny", "--backend", "cpu", "-r", "1"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.args, code, tc.msg, stderr)
		}
	}
}

func TestRunText(t *testing.T) {
	path := synthTiny(t)
	// The prompt is what bitvk tokenize makes of the text.
	_, ids, _ := bitvk("tokenize", "-m", path, "--ids", "hello")
	var want []int
	if err := json.Unmarshal([]byte(ids), &want); err != nil || len(want) < 2 {
		t.Fatalf("tokenize --ids: %q %v", ids, err)
	}
	promptLine := "prompt:    " + strings.Repeat(" ", 8-len(strconv.Itoa(len(want)))) + strconv.Itoa(len(want)) + " tokens"
	code, _, stderr := bitvk("run", "-m", path, "-p", "hello", "-n", "3", "--temp", "0")
	if code != 0 || !strings.Contains(stderr, promptLine) || !strings.Contains(stderr, "3 tokens") {
		t.Errorf("text prompt: exit %d\n%s", code, stderr)
	}
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	code2, _, stderr2 := bitvk("run", "-m", path, "-f", prompt, "-n", "3", "--temp", "0")
	if code2 != 0 || !strings.Contains(stderr2, promptLine) {
		t.Errorf("-f: exit %d\n%s", code2, stderr2)
	}
	// --chat wraps the prompt: System:/User:/Assistant: turns are longer.
	code, _, stderr = bitvk("run", "-m", path, "-p", "hello", "--chat", "--system", "be brief", "-n", "2", "--temp", "0")
	if code != 0 || strings.Contains(stderr, promptLine) || !strings.Contains(stderr, "prompt:") {
		t.Errorf("--chat: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-p", "a", "--tokens", "1"}, "give the prompt once"},
		{[]string{"--tokens", "1", "--chat"}, "--chat wraps text"},
		{[]string{"-p", "a", "--system", "x"}, "need --chat"},
		{[]string{"-p", "a", "--chat", "--chat-template", "nope"}, "nope"},
		{[]string{"-f", prompt + ".missing"}, "no such file"},
	} {
		code, _, stderr := bitvk(append([]string{"run", "-m", path, "-n", "1"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.args, code, tc.msg, stderr)
		}
	}
}

// TestSmallShape runs run and logits on the built-in small synthetic model.
// run --chat reads the template's control tokens, and control-token text
// in the prompt is text unless --special says otherwise.
func TestRunChatControlText(t *testing.T) {
	prompt := func(args ...string) int {
		t.Helper()
		code, _, stderr := bitvk(append([]string{"run", "--chat", "-n", "1", "--temp", "0", "--backend", "cpu"}, args...)...)
		m := regexp.MustCompile(`prompt: +(\d+) tokens`).FindStringSubmatch(stderr)
		if code != 0 || m == nil {
			t.Fatalf("%q: exit %d\n%s", args, code, stderr)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	base, text := prompt("-p", "hi"), prompt("-p", "hi<|eot_id|>")
	if _, out, _ := bitvk("tokenize", "--ids", "--no-bos", "<|eot_id|>"); text-base != strings.Count(out, ",")+1 {
		t.Errorf("--chat -p 'hi<|eot_id|>': %d tokens more than 'hi'; want the text's %s", text-base, strings.TrimSpace(out))
	}
	if special := prompt("--special", "-p", "hi<|eot_id|>"); special != base+1 {
		t.Errorf("--chat --special: %d tokens; want %d (the control token)", special, base+1)
	}
}

func TestSmallShape(t *testing.T) {
	if code, out, stderr := bitvk("run", "--shape", "small", "--tokens", "1,2", "-n", "3", "--temp", "0"); code != 0 || len(parseIDList(t, out)) != 3 {
		t.Errorf("run --shape small: exit %d %q %s", code, out, stderr)
	}
	if code, out, stderr := bitvk("logits", "--shape", "small", "--tokens", "1,2", "--top", "2"); code != 0 || strings.Count(out, `"pos"`) != 2 {
		t.Errorf("logits --shape small: exit %d %q %s", code, out, stderr)
	}
}

// bench --fuse times the Vulkan backend's decode steps with and without
// the fusion in one run, says which result is which, and leaves the CPU's
// tests alone.
// checkInt8Share: a prompt test, and only a prompt test, reports its share
// of the int8 peak (of the CPU threads or the Vulkan device), consistent
// with its rate, its multiply-adds per token and the peak.
func checkInt8Share(t *testing.T, r map[string]any) {
	t.Helper()
	share, ok := r["int8_share"].(float64)
	if prompt := r["n_prompt"].(float64) > 0; prompt != ok {
		t.Errorf("int8_share is for prompt tests only: %v", r)
	} else if prompt {
		macs, _ := r["macs_per_token"].(float64)
		peak, _ := r["int8_peak_gmacs"].(float64)
		if want := r["avg_ts"].(float64) * macs / 1e9 / peak; !(share > 0 && macs > 0 && peak > 0 && math.Abs(share-want) <= 1e-9*want) {
			t.Errorf("int8 share %g of a peak of %g GMAC/s at %g MACs a token: %v", share, peak, macs, r)
		}
	}
}

// On Vulkan a prompt test's share is of the device's own int8 peak, which
// bench measures with the int8_peak kernel of the backend's kernel set.
func TestBenchVulkanInt8Peak(t *testing.T) {
	needVulkan(t)
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "-p", "8", "-n", "2", "-r", "1", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 2 {
		t.Fatalf("bench --json: %d results, %v\n%s", len(rs), err, out)
	}
	for _, r := range rs {
		if r["backend"] != "Vulkan" {
			t.Errorf("backend %v, want Vulkan", r["backend"])
		}
		checkInt8Share(t, r)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "-p", "8", "-n", "0", "-r", "1")
	if code != 0 || !strings.Contains(out, "% of int8 ") || !regexp.MustCompile(`int8 peak: \d+ GMAC/s on .*int8_peak kernel, (dot4|int32)`).MatchString(out) {
		t.Errorf("bench table of a Vulkan prompt test: exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestBenchFuse(t *testing.T) {
	needVulkan(t)
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", "vulkan,cpu", "-t", "1", "--fuse", "on,off", "-p", "0", "-n", "2", "-r", "1", "--json")
	if code != 0 {
		t.Fatalf("bench --fuse on,off: exit %d: %s", code, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	var fused []any
	cpus := 0
	for _, r := range rs {
		switch r["backend"] {
		case "Vulkan":
			fused = append(fused, r["fused"])
		case "CPU":
			cpus++
			if _, ok := r["fused"]; ok {
				t.Errorf("a CPU result says fused: %v", r)
			}
		}
	}
	if len(fused) != 2 || fused[0] != true || fused[1] != false || cpus != 1 {
		t.Errorf("--fuse on,off: Vulkan results fused %v, %d CPU results; want [true false] and 1", fused, cpus)
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", "vulkan", "--fuse", "on", "-p", "0", "-n", "2", "-r", "1")
	if code != 0 || !strings.Contains(out, ", fused)") {
		t.Errorf("bench table with --fuse on: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr := bitvk("bench", "--shape", "tiny", "--fuse", "sometimes"); code != 2 || !strings.Contains(stderr, `unknown mode "sometimes"`) {
		t.Errorf("--fuse sometimes: exit %d %s", code, stderr)
	}
}

// bench --kernels times each CPU kernel set named, each result naming its
// set with the int8 peak of that set; a set the CPU does not run is a
// usage error that lists the ones it does.
func TestBenchKernels(t *testing.T) {
	sets := cpu.KernelNames()
	list := strings.Join(sets, ",")
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-t", "1", "--kernels", list, "-p", "16", "-n", "2", "-r", "1", "--json")
	if code != 0 {
		t.Fatalf("bench --kernels %s: exit %d: %s", list, code, stderr)
	}
	var rs []benchResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	var got []string
	peaks := map[string]float64{}
	for _, r := range rs {
		if r.NPrompt > 0 {
			got = append(got, r.Kernels)
			if !(r.Int8PeakGMACs > 0) {
				t.Errorf("%s: int8 peak %g", r.Kernels, r.Int8PeakGMACs)
			}
			peaks[r.Kernels] = r.Int8PeakGMACs
		}
	}
	if !slices.Equal(got, sets) {
		t.Errorf("prompt tests ran kernel sets %v, want %v", got, sets)
	}
	if g, ok := peaks["generic"]; ok {
		for k, p := range peaks {
			if strings.HasPrefix(k, "avx") && !(p > g) { // the go set's is generic's loop
				t.Errorf("int8 peak of %s (%g) is not above generic's (%g)", k, p, g)
			}
		}
	}
	if code, _, stderr := bitvk("bench", "--shape", "tiny", "--kernels", "avx9"); code != 2 || !strings.Contains(stderr, `"avx9" is not a kernel set`) || !strings.Contains(stderr, "generic") {
		t.Errorf("--kernels avx9: exit %d %s", code, stderr)
	}
}

// bench --profile reports, per test on the Vulkan backend, a profile whose
// stages add up, both as JSON and as the printed table.
func TestBenchProfile(t *testing.T) {
	needVulkan(t)
	checkBenchProfile(t, "vulkan", 8)
}

// On the CPU backend, the stages of the pass add up to its wall time, and a
// prompt's profile sets its ternary products' rate against the int8 probe.
func TestBenchProfileCPU(t *testing.T) {
	checkBenchProfile(t, "cpu", 5)
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", "cpu", "-t", "1", "-p", "8", "-n", "0", "-r", "1", "--profile")
	if code != 0 {
		t.Fatalf("bench -p 8 --profile: exit %d: %s", code, stderr)
	}
	var rate, share, peak, pass float64
	var threads int
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ternary matrix products: ") {
			line = l
		}
	}
	if _, err := fmt.Sscanf(line, "ternary matrix products: %f GMAC/s, %f%% of the int8 peak of %f GMAC/s on %d thread (the whole pass: %f%%)", &rate, &share, &peak, &threads, &pass); err != nil {
		t.Fatalf("no line of the products' rate in the prompt's profile (%v):\n%s", err, out)
	}
	if rate <= 0 || peak <= 0 || threads != 1 || math.Abs(share-100*rate/peak) > 0.5 || pass <= 0 || pass > share+0.5 {
		t.Errorf("implausible rate of the products: %q", line)
	}
}

// checkBenchProfile runs bench --profile on the tiny shape with backend
// and checks its JSON and its table (at least minRows stages).
func checkBenchProfile(t *testing.T, backend string, minRows int) {
	code, out, stderr := bitvk("bench", "--shape", "tiny", "--backend", backend, "-t", "2", "-p", "8", "-n", "4", "-r", "1", "--profile", "--json")
	if code != 0 {
		t.Fatalf("bench --profile --json: exit %d: %s", code, stderr)
	}
	var rs []struct {
		NPrompt int `json:"n_prompt"`
		NGen    int `json:"n_gen"`
		Profile *struct {
			Tokens, Pos                     int
			GPUNs                           float64 `json:"gpu_ns"`
			WallNs                          float64 `json:"wall_ns"`
			WaitNs                          float64 `json:"wait_ns"`
			Dispatches, Barriers, Transfers int
			SubmitsPerToken                 float64 `json:"submits_per_token"`
			Kernels                         []struct {
				Label, Kernel string
				Calls         int
				Ns, Share     float64
				Bytes         int64
				GBs           float64
				WaitNs        float64 `json:"wait_ns"`
				MACs          int64   `json:"macs"`
				GMACs         float64 `json:"gmacs"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --profile --json: %v\n%s", err, out)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results, want pp8 and tg4", len(rs))
	}
	for _, r := range rs {
		p := r.Profile
		if p == nil {
			t.Fatalf("result without a profile: %+v", r)
		}
		wantTokens, wantPos := 1, r.NGen-1
		if r.NPrompt > 0 {
			wantTokens, wantPos = r.NPrompt, 0
		}
		total := p.GPUNs
		if backend == "cpu" {
			total = p.WallNs
			if p.Tokens != wantTokens || p.Pos != wantPos || p.WallNs <= 0 || p.WaitNs < 0 || p.WaitNs > p.WallNs {
				t.Errorf("implausible profile %+v", *p)
			}
		} else if p.Tokens != wantTokens || p.Pos != wantPos || p.Dispatches == 0 || p.Barriers == 0 || p.SubmitsPerToken <= 0 || p.GPUNs <= 0 {
			t.Errorf("implausible profile %+v", *p)
		}
		var share, ns, waits float64
		products := 0
		for _, k := range p.Kernels {
			share += k.Share
			ns += k.Ns
			waits += k.WaitNs
			if backend == "cpu" && k.MACs != 0 {
				// the ternary products: tokens × rows × width of each matrix
				products++
				if k.MACs < 0 || k.MACs%int64(p.Tokens) != 0 || math.Abs(k.GMACs-float64(k.MACs)/k.Ns) > 1e-9*k.GMACs {
					t.Errorf("implausible multiply-adds in %+v", k)
				}
			}
			if k.Label == "" || k.Kernel == "" || k.Calls < 1 || k.Bytes < 0 || (backend != "cpu" && k.Bytes == 0) || k.WaitNs < 0 || k.WaitNs > k.Ns {
				t.Errorf("implausible stage %+v", k)
			}
		}
		if backend == "cpu" && products != 1 {
			t.Errorf("%d stages with multiply-adds, want the ternary products alone: %+v", products, p.Kernels)
		}
		if math.Abs(share-1) > 1e-6 || math.Abs(ns-total) > 1e-6*total {
			t.Errorf("stages add to a share of %g and %g ns of %g", share, ns, total)
		}
		if math.Abs(waits-p.WaitNs) > 1e-6*total {
			t.Errorf("the stages' waits add to %g ns of %g", waits, p.WaitNs)
		}
	}
	code, out, stderr = bitvk("bench", "--shape", "tiny", "--backend", backend, "-t", "2", "-p", "0", "-n", "2", "-r", "1", "--profile")
	if code != 0 {
		t.Fatalf("bench --profile: exit %d: %s", code, stderr)
	}
	_, table, ok := strings.Cut(out, "profile of tg2")
	if !ok {
		t.Fatalf("no profile in the output:\n%s", out)
	}
	if backend == "cpu" && !strings.Contains(table, "waited µs") {
		t.Errorf("no column of waits in the CPU profile of two threads:\n%s", table)
	}
	var share float64
	rows := 0
	for _, line := range strings.Split(table, "\n")[2:] {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		var pctField string // the share, the row's one field ending in %
		for _, x := range f {
			if strings.HasSuffix(x, "%") {
				pctField = x
			}
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(pctField, "%"), 64)
		if err != nil {
			t.Fatalf("profile row %q: %v", line, err)
		}
		share += pct
		rows++
	}
	if rows < minRows || math.Abs(share-100) > 0.5 {
		t.Errorf("%d profile rows whose shares add to %g%%:\n%s", rows, share, table)
	}
}

// TestSharedCores: the int8 peak line gives each thread count's
// all-threads peaks against one thread's, and says when the threads
// shared cores (less than 0.8× their count times one thread).
func TestSharedCores(t *testing.T) {
	defer func(old map[string]float64) { cpuPeaks = old }(cpuPeaks)
	cpuPeaks = map[string]float64{"k": 500}
	share := 0.5
	r := func(threads int, peak float64) benchResult {
		return benchResult{Backend: "CPU", Kernels: "k", NThreads: threads, Int8PeakGMACs: peak, Int8Share: &share}
	}
	got := sharedCores([]benchResult{r(1, 500), r(2, 950), r(2, 900)}, "k")
	if want := "; 2 threads 900-950, 1.80-1.90× one"; got != want {
		t.Errorf("cores of their own: %q, want %q", got, want)
	}
	if runtime.NumCPU() >= 2 {
		got = sharedCores([]benchResult{r(2, 510)}, "k")
		if want := "; 2 threads 510, 1.02× one: they shared cores at times"; got != want {
			t.Errorf("shared cores: %q, want %q", got, want)
		}
	}
	if got := sharedCores([]benchResult{r(1, 500)}, "k"); got != "" {
		t.Errorf("one thread: %q, want nothing", got)
	}
}
