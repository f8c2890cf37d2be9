// Command bitvk runs BitNet b1.58 models on Vulkan GPUs and on the CPU.
//
// Each subcommand lives in its own file; this one dispatches and is the only
// place in bitvk that calls os.Exit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand: it parses its own flags from args and writes
// its results to stdout.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"inspect", "describe a GGUF file (metadata, tensors, ternary statistics) or a CHNB chain table", runInspect},
	{"pull", "download a model from the Hugging Face Hub into the cache it shares with Python tools", runPull},
	{"run", "generate from a prompt, streaming, with a timing summary", runRun},
	{"chat", "talk with a model in the terminal, turn by turn", runChat},
	{"serve", "serve a model over an OpenAI-compatible HTTP API, with a web chat page", runServe},
	{"logits", "print teacher-forced logits per position as JSON lines (to compare engines)", runLogits},
	{"perplexity", "measure perplexity on a text as llama-perplexity does; KL divergence against a saved run", runPerplexity},
	{"mine", "mine a CHNB table of frequent token chains from text, for speculative decoding", runMine},
	{"bench", "time prompt processing and generation, llama-bench style, against the memory roofline", runBench},
	{"check", "run the same tokens on the CPU and Vulkan backends and compare them layer by layer", runCheck},
	{"view", "a desktop window showing a model at work: its text, speed, GPU timeline and CPU-vs-GPU check", runView},
	{"devices", "list the Vulkan devices: type, driver, memory, limits, optional features", runDevices},
	{"tune", "time the Vulkan kernel shapes on this GPU for a model and keep the fastest for later runs", runTune},
	{"synth", "write a synthetic BitNet b1.58 model (random ternary weights, real shapes)", runSynth},
	{"tokenize", "split text into token ids with the model's tokenizer", runTokenize},
	{"tokenizer-train", "learn a byte-level BPE vocabulary from text and write it as a GGUF file", runTokenizerTrain},
	{"train", "train a BitNet b1.58 model on text with quantization-aware training (CPU)", runTrain},
	{"convert", "turn a Hugging Face checkpoint (safetensors, config.json, tokenizer.json) into a GGUF file", runConvert},
	{"version", "print the version, the build, the CPU kernels and the Vulkan devices found (--json)", runVersion},
}

// completion reads commands, so it joins the list here: in the literal it
// would make an initialization cycle.
func init() {
	commands = append(commands, command{"completion", "print a shell completion script: bash, zsh or fish", runCompletion})
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			fmt.Fprintf(stderr, "\n%s\n", reportProblems)
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintf(stderr, "bitvk %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "bitvk: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "bitvk runs BitNet b1.58 ternary models on Vulkan GPUs and on the CPU.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: bitvk COMMAND [flags]")
	fmt.Fprintln(w)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'bitvk COMMAND -h' for a command's flags.")
	fmt.Fprintln(w, reportProblems)
}

// errUsage marks an error already reported with the command's usage text.
var errUsage = errors.New("usage")

// newFlags returns a flag set that reports errors to stderr, without exiting.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bitvk "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if c, ok := stderr.(*flagCollector); ok {
		c.sets = append(c.sets, fs) // bitvk completion collecting the flags
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bitvk %s %s\n\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, allowing flags after positional arguments
// ("bitvk inspect model.gguf --json"), and returns the positionals.
// flagGiven reports whether the command line set the named flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageError prints msg and the command's usage, and returns errUsage.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), strings.TrimSpace(fmt.Sprintf(format, a...)))
	fs.Usage()
	return errUsage
}
