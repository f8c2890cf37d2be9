package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"

	"github.com/chzyer/readline"

	"github.com/bitvk/bitvk/hub"
)

func runPull(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pull", "ORG/REPO[:FILE] | --list", stderr)
	list := fs.Bool("list", false, "list the models in the Hugging Face cache and their sizes")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: bitvk pull ORG/REPO[:FILE]
       bitvk pull --list

Downloads a file from the Hugging Face Hub into the Hugging Face cache, the one
Python's huggingface_hub uses, and prints its path. Without :FILE it takes the
repository's I2_S GGUF (ggml-model-i2_s.gguf); ORG/REPO:i2_s (a name without a
dot) picks the GGUF whose name contains it. A file in the cache is not fetched
again; its sha256 is checked before it enters the cache; an interrupted download
(Ctrl-C included) resumes where it stopped. run, chat, serve, bench, check,
logits, perplexity, mine and view take -hf ORG/REPO[:FILE] to pull a model and
run it.

Environment:
  HF_ENDPOINT     the Hub (default https://huggingface.co)
  HF_TOKEN        an access token, for private and gated repositories
  HF_HUB_OFFLINE  1: use only the cache
  HF_HUB_CACHE    the cache (default $HF_HOME/hub, else ~/.cache/huggingface/hub)

`)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *list && len(pos) > 0:
		return usageError(fs, "--list takes no repository")
	case *list:
		c, err := newHubClient(stderr)
		if err != nil {
			return err
		}
		return listCache(stdout, c)
	case len(pos) != 1:
		return usageError(fs, "name one repository: ORG/REPO or ORG/REPO:FILE")
	}
	if _, err := hub.ParseRef(pos[0]); err != nil {
		return usageError(fs, "%v", err)
	}
	path, err := pullModel(pos[0], stderr)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

// newHubClient is a Hub client configured from the environment, telling
// notes what the user should know.
func newHubClient(notes io.Writer) (*hub.Client, error) {
	c, err := hub.NewFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	c.UserAgent = "bitvk (" + modulePath + ")"
	c.Notes = func(s string) { fmt.Fprintf(notes, "bitvk: %s\n", s) }
	return c, nil
}

// pullModel resolves ORG/REPO[:FILE] to a file in the Hugging Face cache,
// downloading it when the cache lacks it, with progress on notes. Ctrl-C
// stops the download and keeps what arrived for the next pull.
func pullModel(spec string, notes io.Writer) (string, error) {
	ref, err := hub.ParseRef(spec)
	if err != nil {
		return "", err
	}
	c, err := newHubClient(notes)
	if err != nil {
		return "", err
	}
	bar := hub.NewProgressPrinter(notes, isTerminal(notes))
	c.Progress = bar.Update
	c.Notes = func(s string) { bar.Println("bitvk: " + s) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := c.Pull(ctx, ref)
	bar.Finish()
	if err != nil {
		return "", err
	}
	name := r.Repo + ":" + r.File
	switch {
	case r.Downloaded == 0:
		fmt.Fprintf(notes, "bitvk: %s (%s) is in the Hugging Face cache\n", name, hub.FormatBytes(r.Size))
	case r.Verified != "":
		fmt.Fprintf(notes, "bitvk: pulled %s (%s, %s checked) into %s\n", name, hub.FormatBytes(r.Size), r.Verified, c.CacheDir)
	default:
		fmt.Fprintf(notes, "bitvk: pulled %s (%s) into %s\n", name, hub.FormatBytes(r.Size), c.CacheDir)
	}
	return r.Path, nil
}

// isTerminal reports whether w is a terminal, where progress redraws one line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// listCache prints the models in the cache: one line per snapshot file,
// then the partial downloads and the total.
func listCache(w io.Writer, c *hub.Client) error {
	repos, err := c.Cached()
	if err != nil {
		return fmt.Errorf("reading the Hugging Face cache %s: %w", c.CacheDir, err)
	}
	if len(repos) == 0 {
		fmt.Fprintf(w, "no models in the Hugging Face cache %s (bitvk pull ORG/REPO downloads one)\n", c.CacheDir)
		return nil
	}
	fmt.Fprintf(w, "models in the Hugging Face cache %s:\n", c.CacheDir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var total int64
	files := 0
	for _, r := range repos {
		total += r.Size
		for _, f := range r.Files {
			commit := f.Commit
			if len(commit) > 12 {
				commit = commit[:12]
			}
			if f.Main {
				commit += " (main)"
			}
			fmt.Fprintf(tw, "  %s:%s\t%s\t%s\n", r.Repo, f.Name, hub.FormatBytes(f.Size), commit)
			files++
		}
		if r.Partial > 0 {
			fmt.Fprintf(tw, "  %s\t%s\tpartial download: pull it again to resume\n", r.Repo, hub.FormatBytes(r.Partial))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d %s in %d %s, %s\n", files, plural(files, "file", "files"), len(repos), plural(len(repos), "repository", "repositories"), hub.FormatBytes(total))
	return nil
}
