// Package hub fetches files from the Hugging Face Hub into the cache that
// huggingface_hub keeps, so that bitvk and Python tools share downloads.
//
// The cache (CacheDir: $HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub) holds one folder per repository:
//
//	models--ORG--REPO/
//	  blobs/ETAG               the file's bytes, named by the etag the Hub gave:
//	                           the sha256 of an LFS file, the git blob sha1 of another
//	  blobs/ETAG.incomplete    a download in progress, resumed with a Range request
//	  snapshots/COMMIT/FILE    a relative symlink to ../../blobs/ETAG
//	  refs/main                the commit main resolved to, without a newline
//	.locks/models--ORG--REPO/ETAG.lock   held (flock) while a download runs
//
// A file is resolved with a HEAD request to ENDPOINT/ORG/REPO/resolve/main/FILE,
// whose X-Repo-Commit, X-Linked-Etag (or ETag) and X-Linked-Size headers name
// the commit, the blob and its size; an LFS file's answer is a redirect to
// another host (the Hub's CDN), fetched without the token. The bytes go to
// the .incomplete blob, their hash is checked against the etag, and only then
// is the blob renamed into place and linked from the snapshot.
package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the public Hub, used when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Client talks to one Hub endpoint and keeps files in one cache.
type Client struct {
	Endpoint string // the Hub's base URL, without a trailing slash
	Token    string // sent as a bearer token, to Endpoint's host only
	CacheDir string // the hub cache: the models--ORG--REPO folders
	Offline  bool   // use only the cache, never the network (HF_HUB_OFFLINE=1)

	// HTTP sends the requests; nil: one that follows no redirects (Client
	// follows them itself, dropping the token when the host changes).
	HTTP      *http.Client
	UserAgent string
	// Attempts is how often a request is tried when it meets 429, a 5xx
	// status or a network error, and how often a download may break off
	// without progress; 0: 5.
	Attempts int
	// Sleep waits between attempts; nil: a timer that ctx cancels. Tests
	// make it return at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// IdleTimeout: a download that receives nothing this long is dropped
	// and resumed; 0: 60 s.
	IdleTimeout time.Duration
	// Progress is called as bytes arrive (nil: not at all).
	Progress func(Progress)
	// Notes receives what the user should know (a resumed download, the
	// cache used because the Hub could not be reached); nil: dropped.
	Notes func(string)
}

// Progress is the state of one download.
type Progress struct {
	File  string // ORG/REPO:FILE
	Done  int64  // bytes in the partial file
	Total int64  // the file's size; -1 when the Hub did not say
	Start int64  // bytes that were already there when this download began
}

// NewFromEnv returns a client configured as huggingface_hub is, from the
// environment getenv reads (os.Getenv outside tests): HF_ENDPOINT, HF_TOKEN,
// HF_HUB_OFFLINE, and the cache folder (see CacheDirFromEnv).
func NewFromEnv(getenv func(string) string) (*Client, error) {
	dir, err := CacheDirFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	endpoint := strings.TrimRight(strings.TrimSpace(getenv("HF_ENDPOINT")), "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HF_ENDPOINT=%q is not an http(s) URL such as %s", endpoint, DefaultEndpoint)
	}
	token := strings.TrimSpace(getenv("HF_TOKEN"))
	if token == "" {
		token = strings.TrimSpace(getenv("HUGGING_FACE_HUB_TOKEN")) // the older name, still read by huggingface_hub
	}
	return &Client{Endpoint: endpoint, Token: token, CacheDir: dir, Offline: truthy(getenv("HF_HUB_OFFLINE"))}, nil
}

// CacheDirFromEnv is the hub cache folder as huggingface_hub finds it:
// $HF_HUB_CACHE (or its older name $HUGGINGFACE_HUB_CACHE), else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. A leading ~ is the home folder.
func CacheDirFromEnv(getenv func(string) string) (string, error) {
	home := func() (string, error) {
		if h := getenv("HOME"); h != "" {
			return h, nil
		}
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("hub: no home folder to put the Hugging Face cache in (%v): set HF_HUB_CACHE or HF_HOME", err)
		}
		return h, nil
	}
	expand := func(p string) (string, error) {
		if p != "~" && !strings.HasPrefix(p, "~/") {
			return p, nil
		}
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, p[1:]), nil
	}
	for _, name := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := getenv(name); d != "" {
			return expand(d)
		}
	}
	if d := getenv("HF_HOME"); d != "" {
		d, err := expand(d)
		return filepath.Join(d, "hub"), err
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		d, err := expand(d)
		return filepath.Join(d, "huggingface", "hub"), err
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".cache", "huggingface", "hub"), nil
}

// truthy reads a boolean environment variable as huggingface_hub does.
func truthy(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// Result is a file in the cache.
type Result struct {
	Path   string // snapshots/COMMIT/FILE in the repository's cache folder: the file to open
	Repo   string
	File   string
	Commit string
	Size   int64
	// Downloaded is the number of bytes this call fetched; 0: the file was
	// in the cache already.
	Downloaded int64
	// Verified names the checksum the file was checked against when it was
	// downloaded: "sha256", "git-sha1", or "" when the Hub gave none.
	Verified string
}

// Pull returns ref's file from the cache, downloading it first when the
// cache lacks it at the commit the Hub names for ref.Revision. With no
// ref.File it lists the repository and chooses its GGUF (see ChooseGGUF).
// Offline, or when the Hub cannot be reached, it uses the commit the cache
// last saw.
func (c *Client) Pull(ctx context.Context, ref Ref) (*Result, error) {
	if err := ref.check(); err != nil {
		return nil, err
	}
	if ref.File == "" {
		file, err := c.chooseFile(ctx, ref)
		if err != nil {
			return nil, err
		}
		ref.File = file
	}
	dir := c.repoDir(ref.Repo)
	if isCommit(ref.Revision) {
		if r := cachedResult(dir, ref, ref.Revision); r != nil {
			return r, nil
		}
	}
	if c.Offline {
		if r := c.fromCache(dir, ref); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("%s is not in the Hugging Face cache %s, and HF_HUB_OFFLINE is set: unset HF_HUB_OFFLINE to download it", ref, c.CacheDir)
	}
	meta, err := c.resolve(ctx, ref)
	if err != nil {
		var ne *networkError
		if errors.As(err, &ne) && ctx.Err() == nil {
			if r := c.fromCache(dir, ref); r != nil {
				c.note("could not reach %s (%v); using the cached copy at commit %s", c.Endpoint, ne.err, short(r.Commit))
				return r, nil
			}
		}
		return nil, err
	}
	if ref.Revision != meta.commit {
		if err := writeRef(dir, ref.Revision, meta.commit); err != nil {
			return nil, err
		}
	}
	if r := cachedResult(dir, ref, meta.commit); r != nil {
		return r, nil
	}
	blob := filepath.Join(dir, "blobs", meta.etag)
	if _, err := os.Stat(blob); err == nil {
		// The blob is here from another commit or another client: link it.
		return link(dir, ref, meta.commit, blob)
	}
	unlock, err := lockBlob(ctx, filepath.Join(c.CacheDir, ".locks", filepath.Base(dir), meta.etag+".lock"), func() {
		c.note("waiting for another process downloading %s (it holds its lock)", ref)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	defer unlock()
	if _, err := os.Stat(blob); err == nil { // the other process finished it
		return link(dir, ref, meta.commit, blob)
	}
	got, verified, err := c.fetch(ctx, ref, meta, blob+".incomplete")
	if err != nil {
		return nil, err
	}
	if err := os.Rename(blob+".incomplete", blob); err != nil {
		return nil, fmt.Errorf("%s: moving the verified download into the cache: %w", ref, err)
	}
	r, err := link(dir, ref, meta.commit, blob)
	if err != nil {
		return nil, err
	}
	r.Downloaded, r.Verified = got, verified
	return r, nil
}

// link makes the snapshot file of ref at commit point at blob, and returns it.
func link(dir string, ref Ref, commit, blob string) (*Result, error) {
	pointer := pointerPath(dir, commit, ref.File)
	if err := linkBlob(blob, pointer); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	r := cachedResult(dir, ref, commit)
	if r == nil {
		return nil, fmt.Errorf("%s: %s was linked to %s but cannot be read through the link: check the cache folder", ref, pointer, blob)
	}
	return r, nil
}

// fromCache is ref's file at the commit refs/REVISION names, if it is there.
func (c *Client) fromCache(dir string, ref Ref) *Result {
	commit := ref.Revision
	if !isCommit(commit) {
		var err error
		if commit, err = readRef(dir, ref.Revision); err != nil {
			return nil
		}
	}
	return cachedResult(dir, ref, commit)
}

// cachedResult is the snapshot file of ref at commit, or nil when it is
// missing or its blob is gone.
func cachedResult(dir string, ref Ref, commit string) *Result {
	p := pointerPath(dir, commit, ref.File)
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	return &Result{Path: p, Repo: ref.Repo, File: ref.File, Commit: commit, Size: st.Size()}
}

func (c *Client) note(format string, a ...any) {
	if c.Notes != nil {
		c.Notes(fmt.Sprintf(format, a...))
	}
}

func (c *Client) attempts() int {
	if c.Attempts > 0 {
		return c.Attempts
	}
	return 5
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) idleTimeout() time.Duration {
	if c.IdleTimeout > 0 {
		return c.IdleTimeout
	}
	return 60 * time.Second
}

// noRedirects is the default HTTP client: it returns redirects to send,
// which follows them itself.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 60 * time.Second,
		TLSHandshakeTimeout:   20 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	},
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return noRedirects
}

// short is the first 12 characters of a commit, as git abbreviates it.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
