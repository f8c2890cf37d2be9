package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A verse-heavy prompt: the built-in model continues it, and prompt lookup
// finds plenty to draft.
const versePrompt = "And God said, Let there be light: and there was light. And God saw the light, that it was good. And God said, Let there be light: and there was light. And God saw"

// run with each drafting mode writes plain decoding's text, and says what
// the drafting did.
func TestRunDraft(t *testing.T) {
	var plain string
	for _, mode := range []string{"off", "lookup", "chains", "auto"} {
		code, out, stderr := bitvk("run", "-p", versePrompt, "-n", "48", "--temp", "0", "-t", "1", "--draft", mode)
		if code != 0 {
			t.Fatalf("--draft %s: exit %d: %s", mode, code, stderr)
		}
		if mode == "off" {
			plain = out
			if strings.Contains(stderr, "drafting:") || strings.Contains(stderr, "drafted:") {
				t.Errorf("--draft off drafted:\n%s", stderr)
			}
			continue
		}
		if out != plain {
			t.Errorf("--draft %s wrote %q, --draft off %q", mode, out, plain)
		}
		says := map[string]string{
			"lookup": "drafting: prompt lookup,",
			"chains": "drafting: chain buckets (built-in)",
			"auto":   "drafting: prompt lookup + chain buckets (built-in)",
		}[mode]
		for _, want := range []string{says, "drafted:", "kept/pass: 0:"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("--draft %s: no %q in\n%s", mode, want, stderr)
			}
		}
	}
	// Sampled decoding too: the same seed, the same text.
	_, a, _ := bitvk("run", "-p", versePrompt, "-n", "32", "--seed", "9", "-t", "1", "--draft", "off")
	_, b, _ := bitvk("run", "-p", versePrompt, "-n", "32", "--seed", "9", "-t", "1", "--draft", "lookup", "--draft-max", "4")
	if a != b {
		t.Errorf("seed 9: %q with drafting, %q without", b, a)
	}
}

// Mirostat, typical sampling and XTC on the built-in model: each changes the
// text that plain sampling writes for the same seed (the flags reach the
// sampler), and drafting gives the same text as without (Mirostat's state
// moves once per token kept, as in plain decoding); a bad mode is refused.
func TestMirostatTypicalFlags(t *testing.T) {
	run := func(extra ...string) string {
		t.Helper()
		args := append([]string{"run", "-p", versePrompt, "-n", "32", "--seed", "9", "-t", "1"}, extra...)
		code, out, stderr := bitvk(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	plain := run("--draft", "off")
	for _, mode := range [][]string{{"--mirostat", "2", "--mirostat-ent", "3"}, {"--mirostat", "1"}, {"--typical", "0.5"}, {"--xtc-probability", "0.5", "--top-k", "0"}} {
		a := run(append(mode, "--draft", "off")...)
		if a == plain {
			t.Errorf("%v wrote what plain sampling writes: %q", mode, a)
		}
		if b := run(append(mode, "--draft", "lookup", "--draft-max", "4")...); b != a {
			t.Errorf("%v: %q with drafting, %q without", mode, b, a)
		}
	}
	if code, _, stderr := bitvk("run", "-p", "x", "-n", "2", "--mirostat", "3"); code == 0 || !strings.Contains(stderr, "Mirostat = 3") {
		t.Errorf("--mirostat 3: exit %d: %s", code, stderr)
	}
}

// DRY on the built-in model: greedy decoding of this prompt falls into a
// loop ("and to the LORD, and to the LORD, …") that DRY breaks; drafting
// gives the same text as without; breakers are flags.
func TestDRYFlags(t *testing.T) {
	run := func(extra ...string) string {
		t.Helper()
		args := append([]string{"run", "-p", "And it came to pass", "-n", "120", "--temp", "0", "-t", "1"}, extra...)
		code, out, stderr := bitvk(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	loop := run("--draft", "off")
	if !strings.Contains(loop, "and to the LORD, and to the LORD, and to the LORD") {
		t.Skipf("greedy decoding no longer loops here (the model changed?): %q", loop)
	}
	dry := run("--draft", "off", "--dry-multiplier", "0.8")
	if strings.Contains(dry, "and to the LORD, and to the LORD, and to the LORD") {
		t.Errorf("DRY left the loop: %q", dry)
	}
	if d := run("--draft", "lookup", "--dry-multiplier", "0.8"); d != dry {
		t.Errorf("DRY with drafting: %q, without %q", d, dry)
	}
	if d := run("--draft", "off", "--dry-multiplier", "0.8", "--dry-penalty-last-n", "0"); d != loop {
		t.Errorf("--dry-penalty-last-n 0 did not turn DRY off: %q", d)
	}
	// A breaker on every token (the letter e, say) leaves no repeat to
	// penalize: the loop is back; "none" is no breaker at all.
	if d := run("--draft", "off", "--dry-multiplier", "0.8", "--dry-sequence-breaker", "e", "--dry-sequence-breaker", " "); d == dry {
		t.Errorf("breakers e and space changed nothing: %q", d)
	}
	if d := run("--draft", "off", "--dry-multiplier", "0.8", "--dry-sequence-breaker", "none"); d == loop {
		t.Errorf("DRY without breakers left the loop: %q", d)
	}
	if code, _, stderr := bitvk("run", "-p", "x", "-n", "2", "--dry-multiplier", "1", "--dry-base", "0.5"); code == 0 || !strings.Contains(stderr, "DRYBase") {
		t.Errorf("--dry-base 0.5: exit %d: %s", code, stderr)
	}
}

func TestDraftFlagErrors(t *testing.T) {
	tiny := synthTiny(t)
	bad := filepath.Join(t.TempDir(), "bad.chnb")
	if err := os.WriteFile(bad, []byte("CHNB nonsense"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft", "maybe"}, "--draft \"maybe\""},
		{[]string{"--draft-max", "0"}, "--draft-max 0"},
		{[]string{"--draft-max", "17"}, "--draft-max 17"},
		{[]string{"--draft-threshold", "1"}, "--draft-threshold 1"},
		{[]string{"--draft-threshold", "-0.5"}, "--draft-threshold -0.5"},
		{[]string{"--draft", "off", "--chains", bad}, "--chains is used by"},
		{[]string{"-m", tiny, "--draft", "chains"}, "--draft chains needs chain buckets"},
		{[]string{"--chains", bad}, bad},
		{[]string{"--chains", filepath.Join(t.TempDir(), "none.chnb")}, "none.chnb"},
	} {
		args := append([]string{"run", "-p", "In the beginning", "-n", "4", "-t", "1"}, tc.args...)
		code, _, stderr := bitvk(args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

// chat's /stats adds up the session's drafting.
func TestChatDraftStats(t *testing.T) {
	var stdout, stderr string
	var code int
	withChatStdin("And God said, Let there be light\n/stats\n", func() {
		code, stdout, stderr = bitvk("chat", "-n", "24", "--temp", "0", "-t", "1", "--draft", "lookup")
	})
	if code != 0 {
		t.Fatalf("chat: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "drafting: prompt lookup") {
		t.Errorf("chat does not say it drafts:\n%s", stderr)
	}
	if !strings.Contains(stderr, "kept/pass:") || !strings.Contains(stderr, "passes saved (session)") {
		t.Errorf("/stats without drafting figures:\nstdout %s\nstderr %s", stdout, stderr)
	}
}

func TestBenchDraft(t *testing.T) {
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte(versePrompt), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := bitvk("bench", "--draft", "off,lookup", "--draft-every", "--prompt-file", prompt, "-n", "32", "-r", "1", "-t", "1", "--backend", "cpu", "--json")
	if code != 0 {
		t.Fatalf("bench --draft: exit %d: %s", code, stderr)
	}
	var rs []draftResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --draft --json: %v\n%s", err, out)
	}
	if len(rs) != 2 || rs[0].Mode != "off" || rs[1].Mode != "lookup" {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if !r.SameAsOff || r.NGen != 32 || r.AvgTs <= 0 || r.SpeedupVsOff <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if rs[0].Drafted != 0 || rs[1].Drafted == 0 || rs[1].Accepted == 0 {
		t.Errorf("drafting counts: off %+v, lookup %+v", rs[0], rs[1])
	}
	code, out, stderr = bitvk("bench", "--draft", "off,lookup", "--draft-every", "--prompt-file", prompt, "-n", "16", "-r", "1", "-t", "1", "--backend", "cpu")
	if code != 0 || !strings.Contains(out, "same as off") || !strings.Contains(out, "lookup (prompt lookup): kept per pass") {
		t.Errorf("bench --draft table: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft", "off"}, "--prompt-file"},
		{[]string{"--draft", "off,sometimes", "--prompt-file", prompt}, "sometimes"},
		{[]string{"--draft", "off", "--prompt-file", prompt, "--verify"}, "not both"},
		{[]string{"--prompt-file", prompt}, "goes with --draft"},
		{[]string{"--draft", "off", "--prompt-file", filepath.Join(t.TempDir(), "none")}, "none"},
		{[]string{"--draft", "off", "--prompt-file", prompt, "-n", "8,16"}, "one generation length"},
	} {
		code, _, stderr := bitvk(append([]string{"bench"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: exit %d, %q; want an error naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBenchVerify(t *testing.T) {
	code, out, stderr := bitvk("bench", "--verify", "--shape", "tiny", "--draft-max", "3", "-r", "2", "-t", "1", "--backend", "cpu", "--json")
	if code != 0 {
		t.Fatalf("bench --verify: exit %d: %s", code, stderr)
	}
	var rs []verifyResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("bench --verify --json: %v\n%s", err, out)
	}
	if len(rs) != 4 {
		t.Fatalf("%d rows, want k = 0…3: %+v", len(rs), rs)
	}
	for k, r := range rs {
		if r.Drafted != k || r.Tokens != k+1 || r.BestNs <= 0 || r.NThreads != 1 || r.Backend != "CPU" {
			t.Errorf("row %d: %+v", k, r)
		}
	}
	if rs[0].VsOneStep != 1 {
		t.Errorf("k = 0 is %.3f× itself", rs[0].VsOneStep)
	}
}

// bench --verify --profile profiles the passes of one token and of the
// most, each with every token's logits, on each backend: in the JSON on
// those two rows only, and printed after the table.
func TestBenchVerifyProfile(t *testing.T) {
	checkVerifyProfile(t, "cpu")
	if code, _, stderr := bitvk("bench", "--draft", "lookup", "--profile", "--shape", "tiny"); code != 2 || !strings.Contains(stderr, "--profile goes with") {
		t.Errorf("--draft --profile: exit %d: %s", code, stderr)
	}
}

func TestBenchVerifyProfileVulkan(t *testing.T) {
	needVulkan(t)
	checkVerifyProfile(t, "vulkan")
}

func checkVerifyProfile(t *testing.T, be string) {
	code, out, stderr := bitvk("bench", "--verify", "--profile", "--shape", "tiny", "--draft-max", "3", "-r", "1", "-t", "2", "--backend", be, "--json")
	if code != 0 {
		t.Fatalf("%s: bench --verify --profile: exit %d: %s", be, code, stderr)
	}
	var rs []verifyResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("%s: bench --verify --profile --json: %v\n%s", be, err, out)
	}
	if len(rs) != 4 {
		t.Fatalf("%s: %d rows, want k = 0…3", be, len(rs))
	}
	for k, r := range rs {
		p := r.Profile
		if (k == 0 || k == 3) != (p != nil) {
			t.Fatalf("%s: row %d has profile %v", be, k, p)
		}
		if p == nil {
			continue
		}
		var ns float64
		for _, s := range p.Kernels {
			ns += s.Nanoseconds
		}
		total := p.WallNs
		if be == "vulkan" {
			total = p.GPUNs
		}
		if !p.AllLogits || p.Tokens != r.Tokens || p.Pos != verifyPos || len(p.Kernels) < 5 || math.Abs(ns-total) > 1e-6*total {
			t.Errorf("%s: row %d: implausible profile %+v (stages add to %g ns of %g)", be, k, *p, ns, total)
		}
	}
	code, out, stderr = bitvk("bench", "--verify", "--profile", "--shape", "tiny", "--draft-max", "2", "-r", "1", "-t", "1", "--backend", be)
	if code != 0 || !strings.Contains(out, "a verification pass of 1 token (k = 0 drafted) at position 128") ||
		!strings.Contains(out, "a verification pass of 3 tokens (k = 2 drafted) at positions 128-130, every token's logits") {
		t.Errorf("%s: bench --verify --profile: exit %d\n%s\n%s", be, code, out, stderr)
	}
}

// A prompt longer than the context is refused before anything runs: the
// error, and no timing summary of nothing.
func TestRunPromptPastContext(t *testing.T) {
	code, out, stderr := bitvk("run", "-p", "hello there", "-c", "1", "-n", "3")
	if code == 0 || !strings.Contains(stderr, "context is full: 0 positions used + ") || !strings.Contains(stderr, "raise -c") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "generated:") || strings.TrimSpace(out) != "" {
		t.Errorf("a summary or text for a refused prompt:\nstdout %q\nstderr %s", out, stderr)
	}
}

// --logit-bias bans or raises tokens by id, as llama.cpp's; ids past the
// vocabulary and malformed values are refused.
func TestLogitBiasFlag(t *testing.T) {
	run := func(extra ...string) (string, string, int) {
		t.Helper()
		code, out, stderr := bitvk(append([]string{"run", "-p", "And it came to pass", "-n", "12", "--temp", "0", "--draft", "off", "-t", "1"}, extra...)...)
		return out, stderr, code
	}
	plain, _, _ := run()
	// bitvk tokenize prints "id<TAB>'piece'" lines, BOS first.
	_, ids, _ := bitvk("tokenize", " unto")
	lines := strings.Split(strings.TrimSpace(ids), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], "' unto'") {
		t.Fatalf("\" unto\" is not one token: %q", ids)
	}
	if !strings.Contains(plain, " unto") {
		t.Skipf("greedy decoding no longer writes \" unto\" here (the model or kernels changed?): %q", plain)
	}
	id, _, _ := strings.Cut(lines[1], "\t")
	banned, stderr, code := run("--logit-bias", id+"-inf")
	if code != 0 || strings.Contains(banned, " unto") || banned == plain {
		t.Errorf("\" unto\" banned: exit %d, %q (%s)", code, banned, stderr)
	}
	for _, tc := range []struct{ arg, want string }{
		{"99999+1", "outside the model's vocabulary of 4096"},
		{"12x", "is not TOKEN_ID+BIAS"},
		{"5+inf", "is not a bias"},
		{"-3+1", "is not a token id"},
	} {
		if _, stderr, code := run("--logit-bias", tc.arg); code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--logit-bias %s: exit %d: %s", tc.arg, code, stderr)
		}
	}
}
