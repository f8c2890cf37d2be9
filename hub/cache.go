package hub

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// repoDir is the cache folder of a model repository: models--ORG--REPO.
func (c *Client) repoDir(repo string) string {
	return filepath.Join(c.CacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// pointerPath is snapshots/COMMIT/FILE in a repository's cache folder.
func pointerPath(dir, commit, file string) string {
	return filepath.Join(dir, "snapshots", commit, filepath.FromSlash(file))
}

// readRef is the commit refs/REVISION holds.
func readRef(dir, revision string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "refs", revision))
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(string(b))
	if !safeName(commit) {
		return "", fmt.Errorf("%s holds %q, not a commit", filepath.Join(dir, "refs", revision), commit)
	}
	return commit, nil
}

// writeRef records that revision resolves to commit, as huggingface_hub
// does: the bare commit, no newline; only when it changed, so that a cache
// others own is not written needlessly.
func writeRef(dir, revision, commit string) error {
	if old, err := readRef(dir, revision); err == nil && old == commit {
		return nil
	}
	path := filepath.Join(dir, "refs", revision)
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return fmt.Errorf("%w (set HF_HUB_CACHE to a folder you can write)", err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(commit), 0o666); err != nil {
		return fmt.Errorf("%w (set HF_HUB_CACHE to a folder you can write)", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// linkBlob points the snapshot file at its blob with a relative symlink
// (../../blobs/ETAG, one more ../ per folder in the file's path), as
// huggingface_hub does, so that the cache can be moved. Where symlinks
// cannot be made, a hard link does.
func linkBlob(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o777); err != nil {
		return fmt.Errorf("%w (set HF_HUB_CACHE to a folder you can write)", err)
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		rel = blob
	}
	if err := os.Remove(pointer); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("replacing %s: %w", pointer, err)
	}
	serr := os.Symlink(rel, pointer)
	if serr == nil {
		return nil
	}
	if err := os.Link(blob, pointer); err != nil {
		return fmt.Errorf("linking %s to %s: %v; %v", pointer, blob, serr, err)
	}
	return nil
}

// cachedFiles lists the files of the snapshot refs/REVISION names (nil when
// there is none), as repository paths.
func cachedFiles(dir, revision string) []string {
	commit := revision
	if !isCommit(commit) {
		var err error
		if commit, err = readRef(dir, revision); err != nil {
			return nil
		}
	}
	return snapshotFiles(dir, commit)
}

// snapshotFiles lists the files of snapshots/COMMIT whose blobs are there.
func snapshotFiles(dir, commit string) []string {
	root := filepath.Join(dir, "snapshots", commit)
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files
}

// CachedRepo is a model repository in the cache.
type CachedRepo struct {
	Repo    string // ORG/REPO
	Dir     string // its models--ORG--REPO folder
	Size    int64  // bytes in its complete blobs
	Partial int64  // bytes in its .incomplete downloads
	Files   []CachedFile
}

// CachedFile is one file of a snapshot.
type CachedFile struct {
	Name   string // the repository path
	Commit string
	Path   string // snapshots/COMMIT/NAME
	Size   int64
	Main   bool // refs/main names its commit
}

// Cached lists the model repositories in the cache, by name, with their
// snapshot files and sizes. A missing cache folder is an empty list.
func (c *Client) Cached() ([]CachedRepo, error) {
	entries, err := os.ReadDir(c.CacheDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var repos []CachedRepo
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), "models--")
		if !ok || !e.IsDir() {
			continue
		}
		r := CachedRepo{Repo: strings.ReplaceAll(name, "--", "/"), Dir: filepath.Join(c.CacheDir, e.Name())}
		blobs, _ := os.ReadDir(filepath.Join(r.Dir, "blobs"))
		for _, b := range blobs {
			info, err := b.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			if strings.HasSuffix(b.Name(), ".incomplete") {
				r.Partial += info.Size()
			} else {
				r.Size += info.Size()
			}
		}
		main, _ := readRef(r.Dir, "main")
		snaps, _ := os.ReadDir(filepath.Join(r.Dir, "snapshots"))
		for _, s := range snaps {
			if !s.IsDir() {
				continue
			}
			for _, f := range snapshotFiles(r.Dir, s.Name()) {
				p := pointerPath(r.Dir, s.Name(), f)
				st, err := os.Stat(p)
				if err != nil {
					continue
				}
				r.Files = append(r.Files, CachedFile{Name: f, Commit: s.Name(), Path: p, Size: st.Size(), Main: s.Name() == main})
			}
		}
		repos = append(repos, r)
	}
	sort.Slice(repos, func(i, j int) bool { return strings.ToLower(repos[i].Repo) < strings.ToLower(repos[j].Repo) })
	return repos, nil
}
