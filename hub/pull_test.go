package hub_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bitvk/bitvk/hub"
	"github.com/bitvk/bitvk/hub/hubtest"
)

const repo = "org/repo"

// payload is n bytes that differ from position to position, so that a
// resume at the wrong offset changes the checksum.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// client is a Client of srv with its own cache, whose waits return at once
// and are recorded.
type client struct {
	*hub.Client
	mu     sync.Mutex
	sleeps []time.Duration
	notes  []string
}

func newClient(t *testing.T, srv *hubtest.Server) *client {
	t.Helper()
	c := &client{Client: &hub.Client{Endpoint: srv.URL(), CacheDir: t.TempDir()}}
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sleeps = append(c.sleeps, d)
		return ctx.Err()
	}
	c.Notes = func(s string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.notes = append(c.notes, s)
	}
	return c
}

func (c *client) pull(t *testing.T, spec string) (*hub.Result, error) {
	t.Helper()
	ref, err := hub.ParseRef(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c.Pull(context.Background(), ref)
}

func (c *client) mustPull(t *testing.T, spec string) *hub.Result {
	t.Helper()
	r, err := c.pull(t, spec)
	if err != nil {
		t.Fatalf("pull %s: %v", spec, err)
	}
	return r
}

// checkLayout checks the huggingface_hub layout of one pulled file: the
// blob named by its etag, the snapshot symlink relative to it, refs/main.
func checkLayout(t *testing.T, c *client, srv *hubtest.Server, r *hub.Result, file string, data []byte, etag string) {
	t.Helper()
	dir := filepath.Join(c.CacheDir, "models--org--repo")
	blob := filepath.Join(dir, "blobs", etag)
	if got, err := os.ReadFile(blob); err != nil || !bytes.Equal(got, data) {
		t.Errorf("blob %s: %d bytes, %v; want the file's %d bytes", blob, len(got), err, len(data))
	}
	pointer := filepath.Join(dir, "snapshots", srv.Commit, filepath.FromSlash(file))
	if r.Path != pointer {
		t.Errorf("path %s, want %s", r.Path, pointer)
	}
	link, err := os.Readlink(pointer)
	want := strings.Repeat("../", 2+strings.Count(file, "/")) + "blobs/" + etag
	if err != nil || link != filepath.FromSlash(want) {
		t.Errorf("snapshot link %s -> %q (%v), want %q", pointer, link, err, want)
	}
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", "main")); err != nil || string(ref) != srv.Commit {
		t.Errorf("refs/main holds %q (%v), want the commit %s without a newline", ref, err, srv.Commit)
	}
	if _, err := os.Stat(blob + ".incomplete"); !os.IsNotExist(err) {
		t.Errorf("%s.incomplete is left behind (%v)", blob, err)
	}
	if r.Commit != srv.Commit || r.File != file || r.Size != int64(len(data)) {
		t.Errorf("result %+v", r)
	}
}

func TestPullLFSThroughCDN(t *testing.T) {
	data := payload(300 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "model.gguf", Data: data, LFS: true})
	defer srv.Close()
	srv.Token = "hf_secret"
	c := newClient(t, srv)
	c.Token = "hf_secret"
	var last hub.Progress
	c.Progress = func(p hub.Progress) { last = p }
	r := c.mustPull(t, "org/repo:model.gguf")
	checkLayout(t, c, srv, r, "model.gguf", data, hubtest.SHA256(data))
	if r.Downloaded != int64(len(data)) || r.Verified != "sha256" {
		t.Errorf("downloaded %d, verified %q; want %d, sha256", r.Downloaded, r.Verified, len(data))
	}
	if last.Done != int64(len(data)) || last.Total != int64(len(data)) || last.File != "org/repo:model.gguf" {
		t.Errorf("last progress %+v", last)
	}
	sawCDN := false
	for _, q := range srv.Requests() {
		switch q.Host {
		case "hub":
			if q.Auth != "Bearer hf_secret" {
				t.Errorf("%s %s on the Hub without the token: %q", q.Method, q.Path, q.Auth)
			}
		case "cdn":
			sawCDN = true
			if q.Auth != "" {
				t.Errorf("the token went to the CDN: %s %s with %q", q.Method, q.Path, q.Auth)
			}
		}
	}
	if !sawCDN {
		t.Error("the LFS file was not fetched from the CDN the Hub redirected to")
	}
}

func TestPullPlainFileInFolder(t *testing.T) {
	data := []byte(`{"architectures": ["BitNetForCausalLM"]}`)
	srv := hubtest.New(repo, hubtest.File{Name: "sub/dir/config.json", Data: data})
	defer srv.Close()
	c := newClient(t, srv)
	r := c.mustPull(t, "org/repo:sub/dir/config.json")
	checkLayout(t, c, srv, r, "sub/dir/config.json", data, hubtest.GitSHA1(data))
	if r.Verified != "git-sha1" {
		t.Errorf("verified %q, want git-sha1", r.Verified)
	}
}

func TestPullSecondTimeIsACacheHit(t *testing.T) {
	data := payload(64 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	defer srv.Close()
	c := newClient(t, srv)
	first := c.mustPull(t, "org/repo:m.gguf")
	second := c.mustPull(t, "org/repo:m.gguf")
	if n := srv.Downloads("m.gguf"); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}
	if second.Downloaded != 0 || second.Path != first.Path {
		t.Errorf("second pull: %+v, want a cache hit at %s", second, first.Path)
	}

	// Offline, the cache answers without a request.
	before := len(srv.Requests())
	c.Offline = true
	if r := c.mustPull(t, "org/repo:m.gguf"); r.Path != first.Path {
		t.Errorf("offline: %s, want %s", r.Path, first.Path)
	}
	if r := c.mustPull(t, "org/repo"); r.File != "m.gguf" {
		t.Errorf("offline without a file: chose %q", r.File)
	}
	if n := len(srv.Requests()) - before; n != 0 {
		t.Errorf("offline pulls made %d requests", n)
	}
	_, err := c.pull(t, "org/repo:other.gguf")
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), "org/repo:other.gguf") {
		t.Errorf("offline, not cached: %v", err)
	}

	// With the Hub gone, the cached commit is used, and said so.
	c.Offline = false
	srv.Close()
	c.Attempts = 2
	if r, err := c.pull(t, "org/repo:m.gguf"); err != nil || r.Path != first.Path {
		t.Errorf("Hub unreachable: %v, %v", r, err)
	}
	if !strings.Contains(strings.Join(c.notes, "\n"), "using the cached copy") {
		t.Errorf("notes %q do not say the cache was used", c.notes)
	}
}

func TestPullNewCommitReusesBlob(t *testing.T) {
	data := payload(10 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	defer srv.Close()
	c := newClient(t, srv)
	c.mustPull(t, "org/repo:m.gguf")
	srv.Commit = strings.Repeat("b", 40)
	r := c.mustPull(t, "org/repo:m.gguf")
	checkLayout(t, c, srv, r, "m.gguf", data, hubtest.SHA256(data))
	if srv.Downloads("m.gguf") != 1 || r.Downloaded != 0 {
		t.Errorf("the same blob at a new commit was downloaded again")
	}
}

func TestPullResumesACutBody(t *testing.T) {
	data := payload(200 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	defer srv.Close()
	srv.Inject("m.gguf", hubtest.Fault{Method: "GET", CutAfter: 70 << 10})
	c := newClient(t, srv)
	r := c.mustPull(t, "org/repo:m.gguf")
	checkLayout(t, c, srv, r, "m.gguf", data, hubtest.SHA256(data))
	ranges := rangesSent(srv)
	if len(ranges) != 1 || ranges[0] != "bytes=71680-" {
		t.Errorf("range requests %q, want one for bytes=71680-", ranges)
	}
	if len(c.sleeps) != 0 {
		t.Errorf("waited %v before resuming a download that made progress", c.sleeps)
	}
}

func rangesSent(srv *hubtest.Server) []string {
	var rs []string
	for _, q := range srv.Requests() {
		if q.Range != "" {
			rs = append(rs, q.Range)
		}
	}
	return rs
}

func TestPullResumesAnIncompleteFile(t *testing.T) {
	for _, lfs := range []bool{true, false} {
		data := payload(50 << 10)
		srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: lfs})
		defer srv.Close()
		c := newClient(t, srv)
		etag := hubtest.GitSHA1(data)
		if lfs {
			etag = hubtest.SHA256(data)
		}
		// As a killed bitvk or huggingface_hub leaves it.
		part := filepath.Join(c.CacheDir, "models--org--repo", "blobs", etag+".incomplete")
		os.MkdirAll(filepath.Dir(part), 0o777)
		os.WriteFile(part, data[:20000], 0o666)
		r := c.mustPull(t, "org/repo:m.gguf")
		checkLayout(t, c, srv, r, "m.gguf", data, etag)
		if rs := rangesSent(srv); len(rs) != 1 || rs[0] != "bytes=20000-" {
			t.Errorf("lfs %v: ranges %q", lfs, rs)
		}
		if r.Downloaded != int64(len(data)-20000) {
			t.Errorf("lfs %v: downloaded %d", lfs, r.Downloaded)
		}
	}
}

func TestPullServerIgnoringRangeStartsOver(t *testing.T) {
	data := payload(40 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	defer srv.Close()
	srv.Inject("m.gguf", hubtest.Fault{Method: "GET", CutAfter: 1000}, hubtest.Fault{Method: "GET", IgnoreRange: true})
	c := newClient(t, srv)
	r := c.mustPull(t, "org/repo:m.gguf")
	checkLayout(t, c, srv, r, "m.gguf", data, hubtest.SHA256(data))
}

func TestPullWrongChecksumDeletesThePartialFile(t *testing.T) {
	data := payload(30 << 10)
	wrong := hubtest.SHA256([]byte("something else"))
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true, Etag: wrong})
	defer srv.Close()
	c := newClient(t, srv)
	_, err := c.pull(t, "org/repo:m.gguf")
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), "deleted") || !strings.Contains(err.Error(), wrong) {
		t.Fatalf("err %v, want a checksum mismatch that says the file was deleted", err)
	}
	blobs := filepath.Join(c.CacheDir, "models--org--repo", "blobs")
	if left, _ := os.ReadDir(blobs); len(left) != 0 {
		t.Errorf("left in blobs: %v", left)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir, "models--org--repo", "snapshots", srv.Commit, "m.gguf")); !os.IsNotExist(err) {
		t.Errorf("a snapshot link was made to a corrupt file (%v)", err)
	}
}

func TestPullRetries(t *testing.T) {
	data := payload(8 << 10)
	for _, c := range []struct {
		name   string
		faults []hubtest.Fault
		sleeps []time.Duration
	}{
		{"429 with Retry-After on HEAD", []hubtest.Fault{{Method: "HEAD", Status: 429, RetryAfter: "7"}}, []time.Duration{7 * time.Second}},
		{"500 twice on HEAD", []hubtest.Fault{{Method: "HEAD", Status: 500}, {Method: "HEAD", Status: 502}}, []time.Duration{time.Second, 2 * time.Second}},
		{"503 on the CDN", []hubtest.Fault{{Method: "GET", Status: 503}}, []time.Duration{time.Second}},
		{"429 on the CDN", []hubtest.Fault{{Method: "GET", Status: 429, RetryAfter: "3"}}, []time.Duration{3 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
			defer srv.Close()
			srv.Inject("m.gguf", c.faults...)
			cl := newClient(t, srv)
			r := cl.mustPull(t, "org/repo:m.gguf")
			checkLayout(t, cl, srv, r, "m.gguf", data, hubtest.SHA256(data))
			if !slicesEqual(cl.sleeps, c.sleeps) {
				t.Errorf("waited %v, want %v", cl.sleeps, c.sleeps)
			}
		})
	}
}

func slicesEqual(a, b []time.Duration) bool {
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

func TestPullErrors(t *testing.T) {
	data := payload(4 << 10)
	for _, c := range []struct {
		name   string
		spec   string
		token  string // the client's
		faults []hubtest.Fault
		want   []string
	}{
		{"401 without a token", "org/repo:m.gguf", "", nil, []string{"401", "set HF_TOKEN", "org/repo"}},
		{"401 with a wrong token", "org/repo:m.gguf", "hf_wrong", nil, []string{"401", "HF_TOKEN was refused"}},
		{"404 file", "org/repo:nope.gguf", "hf_ok", nil, []string{"404", "org/repo has no file \"nope.gguf\""}},
		{"404 repo", "org/other:m.gguf", "hf_ok", nil, []string{"404", "no repository org/other"}},
		{"500 every time", "org/repo:m.gguf", "hf_ok", []hubtest.Fault{{Method: "HEAD", Status: 500}, {Method: "HEAD", Status: 500}, {Method: "HEAD", Status: 500}}, []string{"500", "failed 3 times"}},
		{"429 asking too long a wait", "org/repo:m.gguf", "hf_ok", []hubtest.Fault{{Method: "HEAD", Status: 429, RetryAfter: "3600"}}, []string{"429", "wait 1h0m0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
			defer srv.Close()
			srv.Token = "hf_ok"
			srv.Inject("m.gguf", c.faults...)
			cl := newClient(t, srv)
			cl.Token, cl.Attempts = c.token, 3
			_, err := cl.pull(t, c.spec)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPullInterruptedKeepsThePartialFile(t *testing.T) {
	data := payload(100 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	defer srv.Close()
	srv.Inject("m.gguf", hubtest.Fault{Method: "GET", CutAfter: 30000, Stall: true})
	c := newClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-srv.Stalled
		time.Sleep(50 * time.Millisecond) // the bytes sent reach the file
		cancel()
	}()
	_, err := c.Pull(ctx, hub.Ref{Repo: repo, File: "m.gguf"})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "run the same command again to resume") {
		t.Fatalf("err %v, want an interruption that says how to resume", err)
	}
	part := filepath.Join(c.CacheDir, "models--org--repo", "blobs", hubtest.SHA256(data)+".incomplete")
	if st, err := os.Stat(part); err != nil || st.Size() != 30000 {
		t.Fatalf("partial file: %v, %v; want 30000 bytes kept", st, err)
	}
	r := c.mustPull(t, "org/repo:m.gguf")
	checkLayout(t, c, srv, r, "m.gguf", data, hubtest.SHA256(data))
	if r.Downloaded != int64(len(data)-30000) {
		t.Errorf("resumed download fetched %d bytes, want %d", r.Downloaded, len(data)-30000)
	}
}

func TestPullChoosesTheI2SFile(t *testing.T) {
	srv := hubtest.New(repo,
		hubtest.File{Name: "README.md", Data: []byte("# model")},
		hubtest.File{Name: "ggml-model-i2_s.gguf", Data: payload(1000), LFS: true},
		hubtest.File{Name: "ggml-model-tq2_0.gguf", Data: payload(1200), LFS: true},
	)
	defer srv.Close()
	c := newClient(t, srv)
	if r := c.mustPull(t, "org/repo"); r.File != "ggml-model-i2_s.gguf" {
		t.Errorf("chose %q", r.File)
	}
	if r := c.mustPull(t, "org/repo:TQ2_0"); r.File != "ggml-model-tq2_0.gguf" {
		t.Errorf("org/repo:TQ2_0 chose %q", r.File)
	}
	_, err := c.pull(t, "org/repo:q4_k")
	if err == nil || !strings.Contains(err.Error(), "ggml-model-tq2_0.gguf") || !strings.Contains(err.Error(), "org/repo:FILE") {
		t.Errorf("no match for a quant: %v", err)
	}
}

func TestChooseGGUF(t *testing.T) {
	for _, c := range []struct {
		files []string
		quant string
		want  string // "" for an error
	}{
		{[]string{"README.md", "ggml-model-i2_s.gguf", "ggml-model-f32.gguf"}, "", "ggml-model-i2_s.gguf"},
		{[]string{"bitnet-2b-I2_S.gguf", "bitnet-2b-f16.gguf"}, "", "bitnet-2b-I2_S.gguf"},
		{[]string{"model-tq1_0.gguf"}, "", "model-tq1_0.gguf"},
		{[]string{"a-i2_s.gguf", "b-i2_s.gguf"}, "", ""},
		{[]string{"a-tq2_0.gguf", "b-tq1_0.gguf"}, "", ""},
		{[]string{"model.safetensors", "config.json"}, "", ""},
		{[]string{"a-tq2_0.gguf", "b-tq1_0.gguf"}, "tq1_0", "b-tq1_0.gguf"},
		{[]string{"x/a-Q4_K_M.gguf", "x/a-Q8_0.gguf"}, "q4_k_m", "x/a-Q4_K_M.gguf"},
	} {
		got, err := hub.ChooseGGUF(repo, c.files, c.quant)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%v %q: %q, %v; want %q", c.files, c.quant, got, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "org/repo") {
			t.Errorf("%v: error %q does not name the repository", c.files, err)
		}
	}
	_, err := hub.ChooseGGUF(repo, []string{"a-tq2_0.gguf", "b-tq1_0.gguf"}, "")
	if err == nil || !strings.Contains(err.Error(), "a-tq2_0.gguf, b-tq1_0.gguf") || !strings.Contains(err.Error(), "org/repo:FILE") {
		t.Errorf("ambiguous: %v, want the GGUF files listed and how to name one", err)
	}
	_, err = hub.ChooseGGUF(repo, []string{"model.safetensors"}, "")
	if err == nil || !strings.Contains(err.Error(), "bitvk convert") {
		t.Errorf("no GGUF: %v, want a pointer to bitvk convert", err)
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		in   string
		want hub.Ref
		bad  bool
	}{
		{in: "microsoft/bitnet-b1.58-2B-4T-gguf", want: hub.Ref{Repo: "microsoft/bitnet-b1.58-2B-4T-gguf", Revision: "main"}},
		{in: "org/repo:ggml-model-i2_s.gguf", want: hub.Ref{Repo: "org/repo", File: "ggml-model-i2_s.gguf", Revision: "main"}},
		{in: "org/repo:sub/m.gguf", want: hub.Ref{Repo: "org/repo", File: "sub/m.gguf", Revision: "main"}},
		{in: "org/repo:i2_s", want: hub.Ref{Repo: "org/repo", Quant: "i2_s", Revision: "main"}},
		{in: "repo", bad: true},
		{in: "org/repo/extra", bad: true},
		{in: "org//repo", bad: true},
		{in: "org/re po", bad: true},
		{in: "org/-repo", bad: true},
		{in: "org/re--po", bad: true},
		{in: "../repo", bad: true},
		{in: "org/repo:../../etc/passwd", bad: true},
		{in: "org/repo:/abs.gguf", bad: true},
		{in: "org/repo:a//b.gguf", bad: true},
		{in: "org/repo:a\\b.gguf", bad: true},
		{in: "", bad: true},
	} {
		got, err := hub.ParseRef(c.in)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("ParseRef(%q) = %+v, %v", c.in, got, err)
		}
	}
}

func TestCacheDirFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HUB_CACHE": "/c", "HF_HOME": "/h", "HOME": "/home/u"}, "/c"},
		{map[string]string{"HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/h"}, "/old"},
		{map[string]string{"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/h/hub"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/home/u"}, "/x/huggingface/hub"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.cache/huggingface/hub"},
		{map[string]string{"HF_HOME": "~/hf", "HOME": "/home/u"}, "/home/u/hf/hub"},
	} {
		got, err := hub.CacheDirFromEnv(func(k string) string { return c.env[k] })
		if err != nil || got != filepath.FromSlash(c.want) {
			t.Errorf("%v: %q, %v; want %q", c.env, got, err, c.want)
		}
	}
	env := map[string]string{"HOME": "/home/u", "HF_ENDPOINT": "http://127.0.0.1:9/", "HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "true"}
	c, err := hub.NewFromEnv(func(k string) string { return env[k] })
	if err != nil || c.Endpoint != "http://127.0.0.1:9" || c.Token != "hf_x" || !c.Offline {
		t.Errorf("NewFromEnv: %+v, %v", c, err)
	}
	env = map[string]string{"HOME": "/home/u"}
	if c, err := hub.NewFromEnv(func(k string) string { return env[k] }); err != nil || c.Endpoint != hub.DefaultEndpoint || c.Offline {
		t.Errorf("NewFromEnv with nothing set: %+v, %v", c, err)
	}
	env["HF_ENDPOINT"] = "huggingface.co"
	if _, err := hub.NewFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "HF_ENDPOINT") {
		t.Errorf("HF_ENDPOINT without a scheme: %v", err)
	}
}

func TestCached(t *testing.T) {
	a, b := payload(3000), payload(5000)
	srv := hubtest.New(repo, hubtest.File{Name: "a.gguf", Data: a, LFS: true}, hubtest.File{Name: "b/b.gguf", Data: b, LFS: true})
	defer srv.Close()
	c := newClient(t, srv)
	if repos, err := c.Cached(); err != nil || len(repos) != 0 {
		t.Errorf("empty cache: %v, %v", repos, err)
	}
	c.mustPull(t, "org/repo:a.gguf")
	c.mustPull(t, "org/repo:b/b.gguf")
	part := filepath.Join(c.CacheDir, "models--org--repo", "blobs", "0123.incomplete")
	os.WriteFile(part, payload(100), 0o666)
	repos, err := c.Cached()
	if err != nil || len(repos) != 1 {
		t.Fatalf("%v, %v", repos, err)
	}
	r := repos[0]
	if r.Repo != repo || r.Size != 8000 || r.Partial != 100 || len(r.Files) != 2 {
		t.Fatalf("%+v", r)
	}
	if f := r.Files[1]; f.Name != "b/b.gguf" || f.Size != 5000 || !f.Main || f.Commit != srv.Commit {
		t.Errorf("%+v", f)
	}
}

// The Hub going away in the middle of a download leaves the partial file,
// and the error says how to resume it.
func TestPullHubGoneMidway(t *testing.T) {
	data := payload(60 << 10)
	srv := hubtest.New(repo, hubtest.File{Name: "m.gguf", Data: data, LFS: true})
	srv.Inject("m.gguf", hubtest.Fault{Method: "GET", CutAfter: 20000, Stall: true})
	c := newClient(t, srv)
	c.Attempts = 3
	go func() {
		<-srv.Stalled
		time.Sleep(50 * time.Millisecond)
		srv.Close()
	}()
	_, err := c.pull(t, "org/repo:m.gguf")
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || !strings.Contains(err.Error(), "run the same command again to resume") {
		t.Fatalf("err %v, want an unreachable host and how to resume", err)
	}
	part := filepath.Join(c.CacheDir, "models--org--repo", "blobs", hubtest.SHA256(data)+".incomplete")
	if st, err := os.Stat(part); err != nil || st.Size() != 20000 {
		t.Errorf("partial file %v, %v; want 20000 bytes kept", st, err)
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"org/repo", "org/repo:a/b.gguf", "org/repo:i2_s", "../x", "org/repo:../../x", "a.b/c_d:e.gguf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := hub.ParseRef(s)
		if err != nil {
			return
		}
		// What ParseRef accepts stays inside the cache folder.
		for _, part := range strings.Split(r.Repo+"/"+r.File, "/") {
			if part == "." || part == ".." || strings.ContainsAny(part, "\\\x00") {
				t.Errorf("ParseRef(%q) = %+v: %q is not a safe path component", s, r, part)
			}
		}
		if r.Repo == "" || strings.Count(r.Repo, "/") != 1 || strings.Contains(r.Repo, "--") {
			t.Errorf("ParseRef(%q) accepted repository %q", s, r.Repo)
		}
	})
}
