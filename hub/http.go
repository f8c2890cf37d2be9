package hub

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter is the longest Retry-After a request waits out; a longer
// one is reported instead.
const maxRetryAfter = 2 * time.Minute

// networkError is a request that got no HTTP answer (the host could not be
// reached, the connection broke) after every attempt: Pull falls back on the
// cache for it, as huggingface_hub does.
type networkError struct {
	url string
	err error
}

func (e *networkError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v (check the network, or set HF_HUB_OFFLINE=1 to use only the cache)", e.url, e.err)
}

func (e *networkError) Unwrap() error { return e.err }

// resolved is what a HEAD request of a resolve URL says of a file.
type resolved struct {
	commit   string // X-Repo-Commit
	etag     string // X-Linked-Etag or ETag, without quotes: the blob's name
	size     int64  // X-Linked-Size or Content-Length; -1: unknown
	location string // where to GET the bytes: the resolve URL, or the CDN it redirects to
}

// fileURL is the resolve URL of ref's file.
func (c *Client) fileURL(ref Ref) string {
	parts := strings.Split(ref.File, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return c.Endpoint + "/" + ref.Repo + "/resolve/" + url.PathEscape(ref.Revision) + "/" + strings.Join(parts, "/")
}

// resolve sends HEAD to the file's resolve URL. It follows redirects within
// the endpoint's host (a renamed repository) but not to another host (an
// LFS file on the CDN): that answer carries the headers, and its Location
// is where the bytes are.
func (c *Client) resolve(ctx context.Context, ref Ref) (*resolved, error) {
	u := c.fileURL(ref)
	for hops := 0; ; hops++ {
		resp, err := c.do(ctx, http.MethodHead, u, nil, metadataNetTries)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		resp.Body.Close()
		loc := ""
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			next, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("%s: %s answered %s without a usable Location header", ref, u, resp.Status)
			}
			if c.sameOrigin(next) && hops < 10 {
				u = next.String()
				continue
			}
			loc = next.String()
		} else if resp.StatusCode != http.StatusOK {
			return nil, c.statusError(resp, ref)
		}
		h := resp.Header
		m := &resolved{commit: h.Get("X-Repo-Commit"), etag: normalizeEtag(h.Get("X-Linked-Etag")), size: -1, location: u}
		if m.etag == "" {
			m.etag = normalizeEtag(h.Get("ETag"))
		}
		if loc != "" {
			m.location = loc
		}
		if n, err := strconv.ParseInt(h.Get("X-Linked-Size"), 10, 64); err == nil && n >= 0 {
			m.size = n
		} else if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && n >= 0 && loc == "" {
			m.size = n // a redirect's Content-Length is its own body's
		}
		switch {
		case m.commit == "":
			return nil, fmt.Errorf("%s: %s answered without an X-Repo-Commit header: is HF_ENDPOINT=%s a Hugging Face Hub?", ref, u, c.Endpoint)
		case !safeName(m.commit):
			return nil, fmt.Errorf("%s: %s named the commit %q, which is not a usable folder name", ref, u, m.commit)
		case m.etag == "":
			return nil, fmt.Errorf("%s: %s answered without an ETag or X-Linked-Etag header, so the file cannot be named or checked in the cache", ref, u)
		case !safeName(m.etag):
			return nil, fmt.Errorf("%s: %s gave the etag %q, which is not a usable file name", ref, u, m.etag)
		}
		return m, nil
	}
}

// normalizeEtag strips the weak marker and the quotes of an ETag header.
func normalizeEtag(s string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(s), "W/"), `"`)
}

// safeName accepts a single path component of letters, digits, '-', '_'
// and '.', not starting with '.': what commits and etags are on the Hub.
func safeName(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '.' {
		return false
	}
	for _, ch := range s {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// get sends GET for the bytes at u from offset from, following redirects,
// with the token only while the host is the endpoint's.
func (c *Client) get(ctx context.Context, u string, from int64) (*http.Response, error) {
	h := http.Header{}
	if from > 0 {
		h.Set("Range", fmt.Sprintf("bytes=%d-", from))
	}
	for hops := 0; ; hops++ {
		resp, err := c.do(ctx, http.MethodGet, u, h, c.attempts())
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 300 || resp.StatusCode >= 400 || hops >= 10 {
			return resp, nil
		}
		next, err := resp.Location()
		drain(resp)
		if err != nil {
			return nil, fmt.Errorf("%s answered %s without a usable Location header", u, resp.Status)
		}
		u = next.String()
	}
}

// metadataNetTries is how often a metadata request (HEAD, model info) is
// sent when no answer comes: few, so that a machine without a network falls
// back on the cache quickly.
const metadataNetTries = 2

// do sends one request, trying again (up to Attempts times in all) when the
// answer is 429 or a 5xx status, or up to netTries times when there is none,
// waiting Retry-After or an exponential backoff between tries. It follows no
// redirects.
func (c *Client) do(ctx context.Context, method, rawURL string, h http.Header, netTries int) (*http.Response, error) {
	target, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %w", rawURL, err)
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Accept-Encoding", "identity") // sizes and ranges of the bytes as stored
		req.Header.Set("User-Agent", c.userAgent())
		if c.Token != "" && c.sameOrigin(target) {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := c.httpClient().Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if ue, ok := err.(*url.Error); ok {
				err = ue.Err // its message repeats the URL, with a CDN's signature
			}
			if attempt >= min(netTries, c.attempts()) {
				return nil, &networkError{url: redact(target), err: err}
			}
			wait = backoff(attempt)
			c.note("%s %s: %v; trying again in %s", method, redact(target), err, wait)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			after, hasAfter := retryAfter(resp.Header.Get("Retry-After"), time.Now())
			if attempt >= c.attempts() || after > maxRetryAfter {
				return resp, nil // statusError reports it
			}
			drain(resp)
			wait = backoff(attempt)
			if hasAfter {
				wait = after
			}
			c.note("%s %s: %s; trying again in %s", method, redact(target), resp.Status, wait)
		default:
			return resp, nil
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// backoff is the wait before attempt+1: 1 s, 2 s, 4 s, … up to 16 s.
func backoff(attempt int) time.Duration {
	return time.Second << min(attempt-1, 4)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sameOrigin reports whether u is on the endpoint's scheme, host and port:
// only there is the token sent.
func (c *Client) sameOrigin(u *url.URL) bool {
	e, err := url.Parse(c.Endpoint)
	return err == nil && strings.EqualFold(e.Scheme, u.Scheme) && strings.EqualFold(e.Host, u.Host)
}

func (c *Client) userAgent() string {
	if c.UserAgent != "" {
		return c.UserAgent
	}
	return "bitvk-hub"
}

// redact is a URL without its query, which on a CDN holds a signature.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery, v.ForceQuery, v.User = "", false, nil
	return v.String()
}

// drain reads what is left of a small body and closes it, so that the
// connection can be used again.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// statusError explains a status that ends a request, with what to do.
func (c *Client) statusError(resp *http.Response, ref Ref) error {
	code := resp.Header.Get("X-Error-Code")
	msg := strings.TrimSpace(resp.Header.Get("X-Error-Message"))
	drain(resp)
	where := redact(resp.Request.URL)
	var hint string
	switch {
	case code == "GatedRepo":
		hint = fmt.Sprintf("%s is gated: accept its conditions on %s/%s, then set HF_TOKEN to a token of that account", ref.Repo, c.Endpoint, ref.Repo)
	case resp.StatusCode == http.StatusUnauthorized && c.Token == "":
		hint = fmt.Sprintf("%s is private, gated or does not exist: if it exists, set HF_TOKEN to an access token that can read it (%s/settings/tokens)", ref.Repo, DefaultEndpoint)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint = fmt.Sprintf("the token in HF_TOKEN was refused for %s: check that it is valid and can read the repository", ref.Repo)
	case code == "EntryNotFound" || resp.StatusCode == http.StatusNotFound && code == "" && ref.File != "":
		hint = fmt.Sprintf("%s has no file %q at revision %s: check the name (bitvk pull %s chooses its GGUF file)", ref.Repo, ref.File, ref.Revision, ref.Repo)
	case code == "RevisionNotFound":
		hint = fmt.Sprintf("%s has no revision %q", ref.Repo, ref.Revision)
	case code == "RepoNotFound" || resp.StatusCode == http.StatusNotFound:
		hint = fmt.Sprintf("there is no repository %s on %s (a private one needs HF_TOKEN): check the name", ref.Repo, c.Endpoint)
	case resp.StatusCode == http.StatusTooManyRequests:
		after, _ := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		hint = fmt.Sprintf("the Hub is limiting requests (it asks to wait %s): try again later; HF_TOKEN raises the limit", after.Round(time.Second))
	case resp.StatusCode >= 500:
		hint = fmt.Sprintf("the Hub failed %d times: try again later", c.attempts())
	default:
		hint = "unexpected answer"
	}
	if msg != "" {
		hint += " (the Hub says: " + msg + ")"
	}
	return fmt.Errorf("%s: %s from %s: %s", ref, resp.Status, where, hint)
}
