package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bitvk/bitvk/hub/hubtest"
)

// hubEnv points bitvk at srv, with an empty cache of the test's own and no
// token or offline mode from the machine's environment. It returns the cache.
func hubEnv(t *testing.T, srv *hubtest.Server) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL())
	t.Setenv("HF_HUB_CACHE", cache)
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"} {
		t.Setenv(k, "")
	}
	return cache
}

// tinyHub serves a tiny synthetic model as org/repo:tiny.gguf, an LFS file.
func tinyHub(t *testing.T) (*hubtest.Server, []byte) {
	t.Helper()
	data, err := os.ReadFile(synthTiny(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New("org/repo", hubtest.File{Name: "tiny.gguf", Data: data, LFS: true}, hubtest.File{Name: "README.md", Data: []byte("# tiny\n")})
	t.Cleanup(srv.Close)
	return srv, data
}

// checkCached checks that the cache holds data as org/repo:tiny.gguf in
// huggingface_hub's layout, and returns the snapshot path.
func checkCached(t *testing.T, cache string, srv *hubtest.Server, data []byte) string {
	t.Helper()
	dir := filepath.Join(cache, "models--org--repo")
	etag := hubtest.SHA256(data)
	pointer := filepath.Join(dir, "snapshots", srv.Commit, "tiny.gguf")
	if link, err := os.Readlink(pointer); err != nil || link != filepath.Join("..", "..", "blobs", etag) {
		t.Errorf("%s -> %q (%v), want a relative link to blobs/%s", pointer, link, err, etag)
	}
	if got, err := os.ReadFile(pointer); err != nil || !bytes.Equal(got, data) {
		t.Errorf("%s: %d bytes (%v), want the model's %d", pointer, len(got), err, len(data))
	}
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", "main")); err != nil || string(ref) != srv.Commit {
		t.Errorf("refs/main: %q (%v), want %s", ref, err, srv.Commit)
	}
	return pointer
}

func rangeRequests(srv *hubtest.Server) []string {
	var rs []string
	for _, q := range srv.Requests() {
		if q.Range != "" {
			rs = append(rs, q.Range)
		}
	}
	return rs
}

// The done-when of the Hugging Face issue, in process: a body cut halfway
// resumes with a Range request, the file lands checked in the layout, and a
// second pull is a cache hit with no download.
func TestPullCommand(t *testing.T) {
	srv, data := tinyHub(t)
	cache := hubEnv(t, srv)
	half := int64(len(data) / 2)
	srv.Inject("tiny.gguf", hubtest.Fault{Method: "GET", CutAfter: half})
	code, stdout, stderr := bitvk("pull", "org/repo:tiny.gguf")
	if code != 0 {
		t.Fatalf("pull: exit %d: %s", code, stderr)
	}
	pointer := checkCached(t, cache, srv, data)
	if stdout != pointer+"\n" {
		t.Errorf("stdout %q, want the path %s", stdout, pointer)
	}
	if rs := rangeRequests(srv); len(rs) != 1 || rs[0] != "bytes="+itoa(half)+"-" {
		t.Errorf("range requests %q, want one from byte %d", rs, half)
	}
	for _, want := range []string{"broke off", "resuming", "sha256 checked"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}

	downloads := srv.Downloads("tiny.gguf")
	code, stdout, stderr = bitvk("pull", "org/repo")
	if code != 0 || stdout != pointer+"\n" {
		t.Fatalf("second pull: exit %d, %q: %s", code, stdout, stderr)
	}
	if n := srv.Downloads("tiny.gguf") - downloads; n != 0 || !strings.Contains(stderr, "is in the Hugging Face cache") {
		t.Errorf("second pull downloaded %d times; stderr %q", n, stderr)
	}

	code, stdout, _ = bitvk("pull", "--list")
	if code != 0 || !strings.Contains(stdout, "org/repo:tiny.gguf") || !strings.Contains(stdout, "(main)") || !strings.Contains(stdout, cache) {
		t.Errorf("pull --list: exit %d:\n%s", code, stdout)
	}

	t.Setenv("HF_HUB_OFFLINE", "1")
	if code, stdout, stderr = bitvk("pull", "org/repo:tiny.gguf"); code != 0 || stdout != pointer+"\n" {
		t.Errorf("offline pull of a cached file: exit %d, %q: %s", code, stdout, stderr)
	}
	if code, _, stderr = bitvk("pull", "org/repo:other.gguf"); code != 1 || !strings.Contains(stderr, "HF_HUB_OFFLINE") {
		t.Errorf("offline pull of a file not cached: exit %d: %s", code, stderr)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The done-when with a real process: bitvk pull stopped by Ctrl-C, then
// killed outright, halfway each time, keeps its partial file, and the next
// pull resumes it.
func TestPullKilledHalfwayResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk")
	}
	bin := buildBitvk(t)
	srv, data := tinyHub(t)
	cache := hubEnv(t, srv)
	part := filepath.Join(cache, "models--org--repo", "blobs", hubtest.SHA256(data)+".incomplete")
	third := int64(len(data) / 3)

	// stop starts bitvk pull, waits until the server has sent the bytes up to
	// want and the partial file holds them, and sends sig.
	stop := func(sig os.Signal, want int64) (string, error) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "pull", "org/repo:tiny.gguf")
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-srv.Stalled:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("the download did not reach the stall in 60 s: %s", stderr.String())
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st, err := os.Stat(part); err == nil && st.Size() == want || time.Now().After(deadline) {
				break
			}
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		return stderr.String(), err
	}

	srv.Inject("tiny.gguf", hubtest.Fault{Method: "GET", CutAfter: third, Stall: true})
	stderr, err := stop(os.Interrupt, third)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr, "run the same command again to resume") {
		t.Errorf("after Ctrl-C: %v, stderr %q; want exit 1 saying how to resume", err, stderr)
	}
	if st, err := os.Stat(part); err != nil || st.Size() != third {
		t.Fatalf("after Ctrl-C the partial file is %v (%v), want %d bytes", st, err, third)
	}

	srv.Inject("tiny.gguf", hubtest.Fault{Method: "GET", CutAfter: third, Stall: true}) // from byte third on
	stop(syscall.SIGKILL, 2*third)
	if st, err := os.Stat(part); err != nil || st.Size() != 2*third {
		t.Fatalf("after the kill the partial file is %v (%v), want %d bytes", st, err, 2*third)
	}

	code, stdout, stderr := bitvk("pull", "org/repo:tiny.gguf")
	if code != 0 {
		t.Fatalf("pull after the kill: exit %d: %s", code, stderr)
	}
	pointer := checkCached(t, cache, srv, data)
	if stdout != pointer+"\n" {
		t.Errorf("stdout %q", stdout)
	}
	want := []string{"bytes=" + itoa(third) + "-", "bytes=" + itoa(2*third) + "-"}
	if rs := rangeRequests(srv); len(rs) != 2 || rs[0] != want[0] || rs[1] != want[1] {
		t.Errorf("range requests %q, want %q", rs, want)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("the partial file is still there (%v)", err)
	}
}

// -hf pulls the model and runs it, in each command that runs a model on
// the CPU.
func TestHFFlag(t *testing.T) {
	srv, data := tinyHub(t)
	cache := hubEnv(t, srv)
	code, stdout, stderr := bitvk("run", "-hf", "org/repo:tiny.gguf", "--tokens", "1,2,3", "-n", "4", "--temp", "0", "--backend", "cpu")
	if code != 0 || len(strings.Split(strings.TrimSpace(stdout), ",")) != 4 {
		t.Fatalf("run -hf: exit %d, %q: %s", code, stdout, stderr)
	}
	checkCached(t, cache, srv, data)
	if !strings.Contains(stderr, "pulled org/repo:tiny.gguf") {
		t.Errorf("run -hf did not say it pulled the model:\n%s", stderr)
	}
	if code, _, stderr = bitvk("logits", "-hf", "org/repo", "--tokens", "1,2", "--top", "2", "--backend", "cpu"); code != 0 || !strings.Contains(stderr, "chose tiny.gguf") {
		t.Errorf("logits -hf ORG/REPO: exit %d: %s", code, stderr)
	}
	text := pplText(t, 300)
	if code, _, stderr = bitvk("perplexity", "-hf", "org/repo:tiny.gguf", "-f", text, "-c", "64", "--chunks", "1", "--backend", "cpu"); code != 0 {
		t.Errorf("perplexity -hf: exit %d: %s", code, stderr)
	}
	if n := srv.Downloads("tiny.gguf"); n != 1 {
		t.Errorf("%d downloads for three commands, want 1", n)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "-hf", "org/nope:tiny.gguf", "--tokens", "1"}, 1, "no repository org/nope"},
		{[]string{"run", "-hf", "org/repo:nope.gguf", "--tokens", "1"}, 1, `org/repo has no file "nope.gguf"`},
		{[]string{"run", "-hf", "org/repo:tiny.gguf", "-m", "x.gguf", "--tokens", "1"}, 2, "give only one of -m FILE, -hf"},
		{[]string{"bench", "-hf", "org/repo:tiny.gguf", "-m", "x.gguf"}, 2, "give -m or -hf, not both"},
		{[]string{"check", "-hf", "org/repo:tiny.gguf", "--shape", "tiny"}, 2, "give one of -m, -hf and --shape"},
		{[]string{"chat", "-hf", "not a repo"}, 1, "is not a Hugging Face repository name"},
		{[]string{"pull"}, 2, "name one repository"},
		{[]string{"pull", "a/b", "c/d"}, 2, "name one repository"},
		{[]string{"pull", "--list", "a/b"}, 2, "--list takes no repository"},
		{[]string{"pull", "org/repo:../x"}, 2, "is not a file path in a repository"},
	} {
		code, _, stderr := bitvk(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestPullUnauthorized(t *testing.T) {
	srv, _ := tinyHub(t)
	hubEnv(t, srv)
	srv.Token = "hf_right"
	if code, _, stderr := bitvk("pull", "org/repo:tiny.gguf"); code != 1 || !strings.Contains(stderr, "set HF_TOKEN") {
		t.Errorf("no token: exit %d: %s", code, stderr)
	}
	t.Setenv("HF_TOKEN", "hf_right")
	if code, _, stderr := bitvk("pull", "org/repo:tiny.gguf"); code != 0 {
		t.Errorf("with HF_TOKEN: exit %d: %s", code, stderr)
	}
}
