package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestServeErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve", "-m", "x.gguf", "--shape", "tiny"}, 2, "only one of"},
		{[]string{"serve", "--shape", "tiny", "--port", "70000"}, 2, "not a TCP port"},
		{[]string{"serve", "--shape", "tiny", "--queue", "-1"}, 2, "must not be negative"},
		{[]string{"serve", "--shape", "tiny", "-n", "0"}, 2, "-n must be positive"},
		{[]string{"serve", "--shape", "tiny", "--parallel", "0"}, 2, "--parallel 0 is outside 1..64"},
		{[]string{"serve", "--shape", "tiny", "--prefill-chunk", "0"}, 2, "--prefill-chunk must be at least 1"},
		{[]string{"serve", "--shape", "tiny", "--temp", "NaN"}, 2, "Temperature"},
		{[]string{"serve", "--shape", "tiny", "--host", "256.0.0.1", "--port", "0"}, 1, "256.0.0.1"},
		{[]string{"serve", "--shape", "tiny", "--cors", "localhost:3000"}, 2, `--cors: CORS origin "localhost:3000" is not`},
		{[]string{"serve", "--shape", "tiny", "--cors", "http://a.example, http://b.example/page"}, 2, `"http://b.example/page"`},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

// servedProcess is bitvk serve running as its own process.
type servedProcess struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

func startServe(t *testing.T, bin string, args ...string) *servedProcess {
	t.Helper()
	p := &servedProcess{cmd: exec.Command(bin, append([]string{"serve", "--port", "0"}, args...)...), done: make(chan struct{})}
	// A server the cleanup kills cannot remove its temporary files (a
	// --shape model): they go to a directory the test removes.
	p.cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("bitvk serve wrote:\n%s", p.log())
		}
	})
	addr := make(chan string, 1)
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case p.url = <-addr:
	case <-p.done:
		t.Fatalf("bitvk serve ended before listening:\n%s", p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("bitvk serve did not listen in 30 s:\n%s", p.log())
	}
	return p
}

func (p *servedProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// stop sends sig and returns the exit code.
func (p *servedProcess) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { <-p.done; errc <- p.cmd.Wait() }()
	select {
	case err := <-errc:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("bitvk serve did not end in 30 s after %v", sig)
		return -1
	}
}

// TestServe runs bitvk serve on the synthetic model and makes the request
// of the README's curl example (curl -d sends a form content type, which
// the server does not mind), then stops it with each signal.
func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk")
	}
	bin := buildBitvk(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p := startServe(t, bin, "--shape", "tiny", "-t", "1", "--seed", "1", "-n", "16", "--cors", "http://localhost:3000")
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/x-www-form-urlencoded",
			strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || len(events) < 3 || events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("%d %s:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		var first struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct{ Role string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(events[0], "data: ")), &first); err != nil ||
			!strings.HasPrefix(first.ID, "chatcmpl-") || first.Object != "chat.completion.chunk" ||
			first.Model != "synthetic-tiny" || len(first.Choices) != 1 || first.Choices[0].Delta.Role != "assistant" {
			t.Errorf("first chunk %s (%v)", events[0], err)
		}
		r, err := http.Get(p.url + "/slots")
		if err != nil {
			t.Fatal(err)
		}
		var slots []struct {
			ID int `json:"id"`
		}
		err = json.NewDecoder(r.Body).Decode(&slots)
		r.Body.Close()
		if err != nil || len(slots) != 4 || !strings.Contains(p.log(), "4 slots of context") {
			t.Errorf("GET /slots of a server with the default --parallel: %d slots (%v)", len(slots), err)
		}
		for _, path := range []string{"/health", "/", "/v1/models", "/metrics"} {
			r, err := http.Get(p.url + path)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != 200 {
				t.Errorf("GET %s: %d", path, r.StatusCode)
			}
		}
		// --cors: a page on that origin may call the API from a browser.
		pre, _ := http.NewRequest(http.MethodOptions, p.url+"/v1/chat/completions", nil)
		pre.Header.Set("Origin", "http://localhost:3000")
		pre.Header.Set("Access-Control-Request-Method", "POST")
		if r, err := http.DefaultClient.Do(pre); err != nil {
			t.Fatal(err)
		} else if r.Body.Close(); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
			t.Errorf("preflight from the --cors origin: %d, Access-Control-Allow-Origin %q", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
		}
		if code := p.stop(t, sig); code != 0 {
			t.Errorf("exit %d after %v", code, sig)
		}
		if log := p.log(); !strings.Contains(log, "shutting down") || !strings.HasSuffix(log, "stopped\n") ||
			!strings.Contains(log, `msg=request method=POST path=/v1/chat/completions status=200`) {
			t.Errorf("after %v the log is:\n%s", sig, log)
		}
	}
}

// TestServeVulkanSlots serves on the Vulkan backend with 3 slots: the
// startup line names them, and three greedy completions run together give
// the text each gives alone (a token's logits do not depend on the other
// slots' tokens of its pass).
func TestServeVulkanSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk")
	}
	needVulkan(t)
	bin := buildBitvk(t)
	p := startServe(t, bin, "--shape", "tiny", "--backend", "vulkan", "--parallel", "3", "-c", "64", "--seed", "1")
	if log := p.log(); !strings.Contains(log, "3 slots of context") || strings.Contains(log, "note:") {
		t.Errorf("startup:\n%s", log)
	}
	complete := func(prompt string) (string, error) {
		body := `{"prompt":` + strconv.Quote(prompt) + `,"max_tokens":12,"temperature":0}`
		resp, err := http.Post(p.url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Choices) != 1 {
			return "", fmt.Errorf("status %d, %d choices (%v)", resp.StatusCode, len(out.Choices), err)
		}
		return out.Choices[0].Text, nil
	}
	prompts := []string{"one two three", "the quick brown fox jumps", "a"}
	alone := make([]string, len(prompts))
	for i, pr := range prompts {
		var err error
		if alone[i], err = complete(pr); err != nil {
			t.Fatalf("prompt %d alone: %v", i, err)
		}
	}
	together := make([]string, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i, pr := range prompts {
		wg.Go(func() { together[i], errs[i] = complete(pr) })
	}
	wg.Wait()
	for i := range prompts {
		if errs[i] != nil {
			t.Errorf("prompt %d together: %v", i, errs[i])
		} else if together[i] != alone[i] {
			t.Errorf("prompt %d: %q beside the others, %q alone", i, together[i], alone[i])
		}
	}
}

// The model id clients see: the file's name, the synthetic shape, or the
// built-in model's name.
func TestModelName(t *testing.T) {
	for _, c := range []struct {
		src  modelSource
		want string
	}{
		{modelSource{path: "/models/ggml-model-i2_s.gguf"}, "ggml-model-i2_s"},
		{modelSource{path: "x.bin"}, "x.bin"},
		{modelSource{shape: "tiny"}, "synthetic-tiny"},
		{modelSource{}, "nano-kjv"},
	} {
		if got := modelName(c.src); got != c.want {
			t.Errorf("modelName(%+v) = %q, want %q", c.src, got, c.want)
		}
	}
}
