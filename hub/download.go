package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// download is one file being fetched into its .incomplete blob.
type download struct {
	c     *Client
	ref   Ref
	url   string // where the bytes are (the CDN for an LFS file)
	part  string // blobs/ETAG.incomplete
	f     *os.File
	sum   *checksum
	have  int64 // bytes in the partial file
	size  int64 // the file's size; -1 until a server says
	start int64 // bytes there before this call
}

// fetch downloads m's bytes into part, resuming what is there, and checks
// them against the etag. On success part holds exactly the file; on a
// checksum or size mismatch it is deleted; on any other error (Ctrl-C
// included) it is kept for the next call to resume.
func (c *Client) fetch(ctx context.Context, ref Ref, m *resolved, part string) (got int64, verified string, err error) {
	if err := os.MkdirAll(filepath.Dir(part), 0o777); err != nil {
		return 0, "", fmt.Errorf("%s: %w (set HF_HUB_CACHE to a folder you can write)", ref, err)
	}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w (set HF_HUB_CACHE to a folder you can write)", ref, err)
	}
	defer f.Close()
	d := &download{c: c, ref: ref, url: m.location, part: part, f: f, sum: newChecksum(m.etag), size: m.size}
	if d.have, err = d.sum.readExisting(f); err != nil {
		return 0, "", fmt.Errorf("%s: reading the partial download %s: %w", ref, part, err)
	}
	d.start = d.have
	if d.have > 0 {
		c.note("resuming %s at %s of %s", ref, FormatBytes(d.have), formatSize(d.size))
	}
	d.progress()
	failures := 0
	for d.size < 0 || d.have != d.size {
		if d.size >= 0 && d.have > d.size {
			c.note("%s: the partial download (%s) is longer than the file (%s); starting over", ref, FormatBytes(d.have), FormatBytes(d.size))
			if err := d.restart(); err != nil {
				return 0, "", err
			}
			continue
		}
		n, retry, err := d.once(ctx)
		if err == nil {
			if d.size < 0 {
				break // the server gave no size: the end of the body is the end
			}
			continue
		}
		if ctx.Err() != nil {
			return 0, "", fmt.Errorf("%s: interrupted at %s of %s; the partial download %s is kept: run the same command again to resume it (%w)", ref, FormatBytes(d.have), formatSize(d.size), part, ctx.Err())
		}
		var ne *networkError
		if errors.As(err, &ne) {
			return 0, "", fmt.Errorf("%s: %w; the %s downloaded so far are kept in %s: run the same command again to resume", ref, err, FormatBytes(d.have), part)
		}
		if !retry {
			return 0, "", err
		}
		if n > 0 {
			failures = 0
		}
		if failures++; failures >= c.attempts() {
			return 0, "", fmt.Errorf("%s: the download broke off %d times without progress (the last time: %v); the %s downloaded so far are kept in %s: run the same command again to resume", ref, failures, err, FormatBytes(d.have), part)
		}
		c.note("%s: the download broke off at %s of %s (%v); resuming", ref, FormatBytes(d.have), formatSize(d.size), err)
		if n == 0 {
			if err := c.sleep(ctx, backoff(failures)); err != nil {
				return 0, "", fmt.Errorf("%s: interrupted; the partial download %s is kept: run the same command again to resume it (%w)", ref, part, err)
			}
		}
	}
	if d.size >= 0 && d.have != d.size {
		f.Close()
		os.Remove(part)
		return 0, "", fmt.Errorf("%s: the download has %d bytes but the file has %d; deleted the partial download %s: run the command again to download it afresh", ref, d.have, d.size, part)
	}
	sum, want, err := d.sum.result(f, d.have)
	if err != nil {
		return 0, "", fmt.Errorf("%s: checking %s: %w", ref, part, err)
	}
	if sum != want {
		f.Close()
		os.Remove(part)
		return 0, "", fmt.Errorf("%s: the downloaded bytes have %s %s, but the Hub gives %s: the download is corrupt, and %s was deleted; run the same command again to download it afresh", ref, d.sum.kind, sum, want, part)
	}
	if d.sum.kind == "" {
		c.note("%s: the Hub's etag %q is neither a sha256 nor a git sha1, so the download could not be checked", ref, d.sum.want)
	}
	if err := f.Sync(); err != nil {
		return 0, "", fmt.Errorf("%s: %w", ref, err)
	}
	return d.have - d.start, d.sum.kind, nil
}

// errStalled cancels a body read that received nothing for IdleTimeout.
var errStalled = errors.New("nothing arrived")

// once makes one GET from d.have on and appends what arrives. It returns
// the bytes appended; an error with retry set may be tried again from where
// it left off.
func (d *download) once(ctx context.Context) (n int64, retry bool, err error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := d.c.get(rctx, d.url, d.have)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		from, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || from != d.have {
			at, cr := d.have, resp.Header.Get("Content-Range")
			if err := d.restart(); err != nil {
				return 0, false, err
			}
			return 0, true, fmt.Errorf("asked for the bytes from %d on, the server sent Content-Range %q; starting over", at, cr)
		}
		if d.size < 0 {
			d.size = total
		}
	case http.StatusOK:
		if d.have > 0 {
			d.c.note("%s: the server sent the whole file instead of the bytes from %d on; starting over", d.ref, d.have)
			if err := d.restart(); err != nil {
				return 0, false, err
			}
		}
		if d.size < 0 {
			d.size = resp.ContentLength
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file reaches the end already, or beyond it.
		if _, total, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && total == d.have {
			d.size = total
			return 0, false, nil
		}
		at := d.have
		if err := d.restart(); err != nil {
			return 0, false, err
		}
		return 0, true, fmt.Errorf("the server cannot resume at byte %d; starting over", at)
	default:
		return 0, false, d.c.statusError(resp, d.ref)
	}

	idle := d.c.idleTimeout()
	watchdog := time.AfterFunc(idle, func() { cancel(errStalled) })
	defer watchdog.Stop()
	buf := make([]byte, 1<<20)
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			watchdog.Reset(idle)
			if _, err := d.f.Write(buf[:k]); err != nil {
				return n, false, fmt.Errorf("%s: writing %s: %w", d.ref, d.part, err)
			}
			d.sum.write(buf[:k])
			d.have += int64(k)
			n += int64(k)
			d.progress()
		}
		switch {
		case rerr == io.EOF && d.size >= 0 && d.have < d.size:
			return n, true, fmt.Errorf("the body ended at byte %d of %d", d.have, d.size)
		case rerr == io.EOF:
			return n, false, nil
		case rerr != nil && context.Cause(rctx) == errStalled && ctx.Err() == nil:
			return n, true, fmt.Errorf("nothing arrived for %s", idle)
		case rerr != nil:
			return n, true, rerr
		}
	}
}

// restart empties the partial file.
func (d *download) restart() error {
	if err := d.f.Truncate(0); err != nil {
		return fmt.Errorf("%s: emptying %s: %w", d.ref, d.part, err)
	}
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", d.ref, err)
	}
	d.have, d.start = 0, 0
	d.sum.reset()
	d.progress()
	return nil
}

func (d *download) progress() {
	if d.c.Progress != nil {
		d.c.Progress(Progress{File: d.ref.String(), Done: d.have, Total: d.size, Start: d.start})
	}
}

// parseContentRange reads "bytes FROM-TO/TOTAL" or "bytes */TOTAL" (from
// -1); TOTAL "*" is -1.
func parseContentRange(v string) (from, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	span, size, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	total = -1
	if size != "*" {
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		total = n
	}
	if span == "*" {
		return -1, total, true
	}
	a, _, found := strings.Cut(span, "-")
	n, err := strconv.ParseInt(a, 10, 64)
	if !found || err != nil || n < 0 {
		return 0, 0, false
	}
	return n, total, true
}

// checksum checks a download against its etag: an LFS file's etag is the
// sha256 of its bytes (hashed as they arrive); a git-stored file's is the
// sha1 git gives the blob, of "blob SIZE\x00" and the bytes (hashed at the
// end, when the size is sure; such files are small).
type checksum struct {
	kind string // "sha256", "git-sha1", or "" when the etag is neither
	want string
	h    hash.Hash // sha256 only
}

func newChecksum(etag string) *checksum {
	c := &checksum{want: strings.ToLower(etag)}
	switch {
	case isHex(c.want, 64):
		c.kind, c.h = "sha256", sha256.New()
	case isHex(c.want, 40):
		c.kind = "git-sha1"
	}
	return c
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// readExisting hashes the bytes already in f and leaves f at its end.
func (c *checksum) readExisting(f *os.File) (int64, error) {
	if c.h == nil {
		return f.Seek(0, io.SeekEnd)
	}
	n, err := io.Copy(c.h, f)
	return n, err
}

func (c *checksum) write(p []byte) {
	if c.h != nil {
		c.h.Write(p)
	}
}

func (c *checksum) reset() {
	if c.h != nil {
		c.h.Reset()
	}
}

// result is the download's checksum and the one wanted, equal when there
// is nothing to check.
func (c *checksum) result(f *os.File, size int64) (got, want string, err error) {
	switch c.kind {
	case "sha256":
		return hex.EncodeToString(c.h.Sum(nil)), c.want, nil
	case "git-sha1":
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", "", err
		}
		if _, err := io.Copy(h, f); err != nil {
			return "", "", err
		}
		return hex.EncodeToString(h.Sum(nil)), c.want, nil
	}
	return "", "", nil
}

// FormatBytes writes a size in binary units: 512 B, 1.5 KiB, 412.3 MiB, 1.10 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	format := "%.1f %ciB"
	if i >= 2 && v < 10 {
		format = "%.2f %ciB"
	}
	return fmt.Sprintf(format, v, "KMGTP"[i])
}

func formatSize(n int64) string {
	if n < 0 {
		return "an unknown size"
	}
	return FormatBytes(n)
}
