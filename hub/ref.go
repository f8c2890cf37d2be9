package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
)

// Ref names a file on the Hub: ORG/REPO, and FILE in it at Revision.
type Ref struct {
	Repo     string // ORG/REPO
	File     string // a slash-separated path in the repository; "": choose its GGUF
	Quant    string // with no File: choose the GGUF whose name contains this (llama.cpp's ORG/REPO:Q4_K_M)
	Revision string // a branch, tag or commit; "" means main
}

// ParseRef reads ORG/REPO, ORG/REPO:FILE or ORG/REPO:QUANT, where a QUANT
// (such as i2_s) has no dot or slash and picks among the repository's GGUF
// files.
func ParseRef(s string) (Ref, error) {
	repo, file, _ := strings.Cut(strings.TrimSpace(s), ":")
	r := Ref{Repo: repo, Revision: "main"}
	if file != "" && !strings.ContainsAny(file, "./") {
		r.Quant = file
	} else {
		r.File = file
	}
	return r, r.check()
}

// String is the ref as ParseRef reads it.
func (r Ref) String() string {
	switch {
	case r.File != "":
		return r.Repo + ":" + r.File
	case r.Quant != "":
		return r.Repo + ":" + r.Quant
	}
	return r.Repo
}

// check validates the names, which become URL paths and cache folders, and
// fills in the default revision.
func (r *Ref) check() error {
	if r.Revision == "" {
		r.Revision = "main"
	}
	if err := checkRepo(r.Repo); err != nil {
		return err
	}
	if r.File != "" {
		if err := checkFile(r.File); err != nil {
			return fmt.Errorf("%s: %w", r.Repo, err)
		}
	}
	if strings.ContainsAny(r.Revision, "/\\") || r.Revision == "." || r.Revision == ".." || hasControl(r.Revision) {
		return fmt.Errorf("%s: revision %q is not a branch, tag or commit name bitvk can cache", r.Repo, r.Revision)
	}
	return nil
}

// checkRepo accepts ORG/REPO as the Hub names repositories: letters, digits,
// '-', '_' and '.', neither part starting or ending with '-' or '.', no
// "--" or "..", 96 characters at most.
func checkRepo(repo string) error {
	org, name, ok := strings.Cut(repo, "/")
	bad := !ok || len(repo) > 96 || strings.Contains(repo, "--") || strings.Contains(repo, "..")
	for _, part := range []string{org, name} {
		if part == "" || strings.ContainsAny(part[:1]+part[len(part)-1:], "-.") {
			bad = true
			break
		}
		for _, ch := range part {
			if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
				bad = true
			}
		}
	}
	if bad {
		return fmt.Errorf("%q is not a Hugging Face repository name: give ORG/REPO (such as microsoft/bitnet-b1.58-2B-4T-gguf), optionally followed by :FILE", repo)
	}
	return nil
}

// checkFile accepts a relative slash-separated path without empty, "." or
// ".." parts, so that it stays inside the snapshot folder.
func checkFile(file string) error {
	bad := len(file) > 1024 || strings.HasPrefix(file, "/") || strings.Contains(file, "\\") || hasControl(file)
	for _, part := range strings.Split(file, "/") {
		if part == "" || part == "." || part == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%q is not a file path in a repository: give it as the Hub lists it, such as ggml-model-i2_s.gguf or folder/model.gguf", file)
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// isCommit reports whether rev is a full commit hash, which never moves.
func isCommit(rev string) bool {
	if len(rev) != 40 {
		return false
	}
	for _, ch := range rev {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// RepoInfo is what the Hub's model-info endpoint says of a repository.
type RepoInfo struct {
	Commit string   // the commit the revision resolves to
	Files  []string // every file, sorted
}

// maxInfo bounds the model-info answer read into memory.
const maxInfo = 32 << 20

// ListFiles asks the Hub's model-info endpoint (ENDPOINT/api/models/ORG/REPO)
// which files the repository holds at revision ("" or main: its main branch).
func (c *Client) ListFiles(ctx context.Context, repo, revision string) (*RepoInfo, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if c.Offline {
		return nil, fmt.Errorf("%s: HF_HUB_OFFLINE is set: listing the repository needs the Hub (unset it, or name the file as %s:FILE)", repo, repo)
	}
	u := c.Endpoint + "/api/models/" + repo
	if revision != "" && revision != "main" {
		u += "/revision/" + url.PathEscape(revision)
	}
	resp, err := c.do(ctx, http.MethodGet, u, nil, metadataNetTries)
	if err != nil {
		return nil, fmt.Errorf("%s: listing the repository: %w", repo, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(resp, Ref{Repo: repo, Revision: revision})
	}
	var body struct {
		SHA      string `json:"sha"`
		Siblings *[]struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxInfo+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: reading the model info from %s: %w", repo, u, err)
	case len(b) > maxInfo:
		return nil, fmt.Errorf("%s: the model info from %s is larger than %d MiB: is HF_ENDPOINT a Hugging Face Hub?", repo, u, maxInfo>>20)
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Siblings == nil {
		return nil, fmt.Errorf("%s: the answer of %s is not a model info with a list of files (siblings): is HF_ENDPOINT a Hugging Face Hub?", repo, u)
	}
	info := &RepoInfo{Commit: body.SHA}
	for _, s := range *body.Siblings {
		if s.RFilename != "" {
			info.Files = append(info.Files, s.RFilename)
		}
	}
	sort.Strings(info.Files)
	return info, nil
}

// chooseFile lists ref's repository, on the Hub or in the cache, and picks
// the GGUF file to pull.
func (c *Client) chooseFile(ctx context.Context, ref Ref) (string, error) {
	var files []string
	if c.Offline {
		if files = cachedFiles(c.repoDir(ref.Repo), ref.Revision); files == nil {
			return "", fmt.Errorf("%s is not in the Hugging Face cache %s, and HF_HUB_OFFLINE is set: unset HF_HUB_OFFLINE to download it", ref, c.CacheDir)
		}
	} else {
		info, err := c.ListFiles(ctx, ref.Repo, ref.Revision)
		var ne *networkError
		switch {
		case err == nil:
			files = info.Files
		case errors.As(err, &ne) && ctx.Err() == nil:
			if files = cachedFiles(c.repoDir(ref.Repo), ref.Revision); files == nil {
				return "", err
			}
			c.note("could not reach %s (%v); choosing among the files of %s in the cache", c.Endpoint, ne.err, ref.Repo)
		default:
			return "", err
		}
	}
	file, err := ChooseGGUF(ref.Repo, files, ref.Quant)
	if err == nil {
		c.note("%s: chose %s", ref, file)
	}
	return file, err
}

// I2SName is the name Microsoft's converter gives the I2_S file.
const I2SName = "ggml-model-i2_s.gguf"

// ChooseGGUF picks the file to run from a repository's files: with quant,
// the one GGUF whose name contains it (any case); without, ggml-model-i2_s.gguf,
// else the one GGUF whose name contains i2_s, else the repository's only
// GGUF. Anything else is an error that lists the GGUF files to choose from.
func ChooseGGUF(repo string, files []string, quant string) (string, error) {
	var ggufs []string
	for _, f := range files {
		if strings.HasSuffix(strings.ToLower(f), ".gguf") {
			ggufs = append(ggufs, f)
		}
	}
	sort.Strings(ggufs)
	if len(ggufs) == 0 {
		return "", fmt.Errorf("%s has no GGUF file (it holds %s): bitvk runs GGUF files; a Hugging Face checkpoint becomes one with bitvk convert DIR -o model.gguf", repo, listNames(files))
	}
	containing := func(s string) []string {
		var m []string
		for _, f := range ggufs {
			if strings.Contains(strings.ToLower(path.Base(f)), strings.ToLower(s)) {
				m = append(m, f)
			}
		}
		return m
	}
	if quant != "" {
		m := containing(quant)
		if len(m) == 1 {
			return m[0], nil
		}
		if len(m) == 0 {
			return "", fmt.Errorf("%s has no GGUF file whose name contains %q; its GGUF files: %s: name one as %s:FILE", repo, quant, listNames(ggufs), repo)
		}
		return "", fmt.Errorf("%s has %d GGUF files whose names contain %q: %s: name one as %s:FILE", repo, len(m), quant, listNames(m), repo)
	}
	for _, f := range ggufs {
		if f == I2SName {
			return f, nil
		}
	}
	if m := containing("i2_s"); len(m) == 1 {
		return m[0], nil
	}
	if len(ggufs) == 1 {
		return ggufs[0], nil
	}
	return "", fmt.Errorf("%s has %d GGUF files and no single I2_S one (%s): name the one to use as %s:FILE", repo, len(ggufs), listNames(ggufs), repo)
}

// listNames joins names for an error message, at most 20 of them.
func listNames(names []string) string {
	if len(names) == 0 {
		return "no files"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
	}
	return strings.Join(names, ", ")
}
