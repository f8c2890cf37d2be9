package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bitvk/bitvk/nn/synth"
	"github.com/bitvk/bitvk/tokenizer"
)

// shells are the shells `bitvk completion` writes scripts for.
var shells = []string{"bash", "zsh", "fish"}

func runCompletion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("completion", "bash|zsh|fish", stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: bitvk completion bash|zsh|fish

Prints a completion script for the shell: commands, their flags, the values
of --backend, --head and --shape, and GGUF files after -m. Load it with

  bash:  source <(bitvk completion bash)     # in ~/.bashrc, or save it as
         ~/.local/share/bash-completion/completions/bitvk
  zsh:   source <(bitvk completion zsh)      # in ~/.zshrc after compinit, or
         save it as _bitvk in a directory of $fpath
  fish:  bitvk completion fish > ~/.config/fish/completions/bitvk.fish`)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs, "name one shell: %s", strings.Join(shells, ", "))
	}
	specs, err := completionSpecs()
	if err != nil {
		return err
	}
	switch pos[0] {
	case "bash":
		writeBash(stdout, specs)
	case "zsh":
		writeZsh(stdout, specs)
	case "fish":
		writeFish(stdout, specs)
	default:
		return usageError(fs, "unknown shell %q (choose %s)", pos[0], strings.Join(shells, ", "))
	}
	return nil
}

// flagCollector is the stderr completionSpecs hands a command run with -h:
// newFlags records the command's flag set in it, so that completion offers
// exactly the flags each command parses, with no list of its own to drift.
type flagCollector struct{ sets []*flag.FlagSet }

func (*flagCollector) Write(p []byte) (int, error) { return len(p), nil }

// valueKind is what a flag's value is, for completion.
type valueKind int

const (
	valueNone  valueKind = iota // a boolean flag: no value
	valueOther                  // a number or free text: nothing to offer
	valueWords                  // one of a few words
	valueGGUF                   // a GGUF file
	valueFile                   // any file
)

// flagWords are the words offered for flags that take one of a few: of
// them, each command offers those its flag's help names (convert's --head
// takes fewer than run's).
var flagWords = map[string]func() []string{
	"backend":       func() []string { return []string{"auto", "cpu", "vulkan"} },
	"head":          func() []string { return []string{"stored", "f16", "q8", "q8_0", "q6_k", "q4_0"} },
	"shape":         synth.ShapeNames,
	"chat-template": tokenizer.TemplateNames,
	"type":          func() []string { return []string{"i2_s", "tq2_0"} }, // synth's
}

// flagSpec is one flag of a command, as completion offers it.
type flagSpec struct {
	name  string // without dashes
	help  string // the first clause of its usage
	kind  valueKind
	words []string
}

// dashed is the flag as completion offers it: -m for one letter, --name else
// (Go's flag package takes either number of dashes).
func (f flagSpec) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// commandSpec is one command: its flags, and what its positional arguments are.
type commandSpec struct {
	name, summary string
	flags         []flagSpec
	args          []string // words for positional arguments; nil: files
}

// completionSpecs runs every command with -h to collect its flag set.
func completionSpecs() ([]commandSpec, error) {
	var specs []commandSpec
	for _, c := range commands {
		var fc flagCollector
		if err := c.run([]string{"-h"}, io.Discard, &fc); !errors.Is(err, flag.ErrHelp) || len(fc.sets) != 1 {
			return nil, fmt.Errorf("completion: 'bitvk %s -h' made %d flag sets and returned %v; each command must parse its flags with newFlags first", c.name, len(fc.sets), err)
		}
		s := commandSpec{name: c.name, summary: c.summary}
		if c.name == "completion" {
			s.args = shells
		}
		fc.sets[0].VisitAll(func(f *flag.Flag) { s.flags = append(s.flags, classifyFlag(f)) })
		specs = append(specs, s)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	return specs, nil
}

// classifyFlag tells from a flag's help what its value is: a file when the
// first clause of its help or its placeholder says file or dir, a GGUF file
// when the help also says GGUF ("model `file` (GGUF)").
func classifyFlag(f *flag.Flag) flagSpec {
	placeholder, usage := flag.UnquoteUsage(f)
	s := flagSpec{name: f.Name, help: firstClause(usage)}
	what := strings.ToLower(s.help + " " + placeholder)
	switch {
	case isBool(f):
		s.kind = valueNone
	case flagWords[f.Name] != nil:
		// The words this command's flag takes: those its help names.
		s.kind = valueWords
		for _, w := range flagWords[f.Name]() {
			if strings.Contains(usage, w) {
				s.words = append(s.words, w)
			}
		}
	case strings.Contains(what, "dir"):
		s.kind = valueFile
	case strings.Contains(what, "file") && strings.Contains(strings.ToLower(usage), "gguf"):
		s.kind = valueGGUF
	case strings.Contains(what, "file"):
		s.kind = valueFile
	default:
		s.kind = valueOther
	}
	return s
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// firstClause shortens a flag's help to what fits a completion menu.
func firstClause(s string) string {
	if i := strings.IndexAny(s, ";:("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, `"`, "")) // a clause may end inside a quotation
	if len(s) > 60 {
		if i := strings.LastIndex(s[:60], " "); i > 0 {
			s = s[:i] + "…"
		}
	}
	return s
}

// shellWords joins words for a single-quoted shell string.
func shellWords(words []string) string {
	return strings.ReplaceAll(strings.Join(words, " "), "'", `'\''`)
}

func writeBash(w io.Writer, specs []commandSpec) {
	names := []string{"--version", "--help"}
	for _, s := range specs {
		names = append(names, s.name)
	}
	fmt.Fprintf(w, `# bash completion for bitvk, written by 'bitvk completion bash'. Load it with
#   source <(bitvk completion bash)
# or save it as ~/.local/share/bash-completion/completions/bitvk.

_bitvk_files() {
	local IFS=$'\n'
	if [[ -n $1 ]]; then
		COMPREPLY=($(compgen -f -X "!*.$1" -- "$cur") $(compgen -d -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

_bitvk() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
		prev=${COMP_WORDS[COMP_CWORD-2]} # --flag=value: bash splits at the =
	fi
	COMPREPLY=()
	if [[ $COMP_CWORD -eq 1 ]]; then
		COMPREPLY=($(compgen -W '%s' -- "$cur"))
		return
	fi
	local flags args=
	case ${COMP_WORDS[1]} in
`, shellWords(names))
	for _, s := range specs {
		var flags []string
		for _, f := range s.flags {
			flags = append(flags, f.dashed())
		}
		fmt.Fprintf(w, "\t%s)\n\t\tflags='%s'\n", s.name, shellWords(flags))
		if s.args != nil {
			fmt.Fprintf(w, "\t\targs='%s'\n", shellWords(s.args))
		}
		fmt.Fprintf(w, "\t\tcase $prev in\n")
		for _, f := range s.flags {
			pat := "-" + f.name + "|--" + f.name
			switch f.kind {
			case valueWords:
				fmt.Fprintf(w, "\t\t%s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", pat, shellWords(f.words))
			case valueGGUF:
				fmt.Fprintf(w, "\t\t%s) _bitvk_files gguf; return ;;\n", pat)
			case valueFile:
				fmt.Fprintf(w, "\t\t%s) _bitvk_files; return ;;\n", pat)
			case valueOther:
				fmt.Fprintf(w, "\t\t%s) return ;;\n", pat)
			}
		}
		fmt.Fprintf(w, "\t\tesac\n\t\t;;\n")
	}
	fmt.Fprint(w, `	*) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
	elif [[ -n $args ]]; then
		COMPREPLY=($(compgen -W "$args" -- "$cur"))
	else
		_bitvk_files
	fi
}

complete -o filenames -F _bitvk bitvk
`)
}

// zshQuote escapes s for a description inside _arguments' [...] or
// _describe's name:description, itself inside single quotes.
func zshQuote(s string) string {
	r := strings.NewReplacer("'", `'\''`, "[", `\[`, "]", `\]`, ":", `\:`)
	return r.Replace(s)
}

func writeZsh(w io.Writer, specs []commandSpec) {
	fmt.Fprint(w, `#compdef bitvk
# zsh completion for bitvk, written by 'bitvk completion zsh'. Load it with
#   source <(bitvk completion zsh)
# after compinit, or save it as _bitvk in a directory of $fpath.

_bitvk() {
	local -a commands
	commands=(
`)
	for _, s := range specs {
		fmt.Fprintf(w, "\t\t'%s:%s'\n", s.name, zshQuote(s.summary))
	}
	fmt.Fprint(w, `	)
	if (( CURRENT == 2 )); then
		_describe -t commands 'bitvk command' commands
		_arguments '--version[print the version]' '--help[list the commands]'
		return
	fi
	local cmd=${words[2]}
	shift words
	(( CURRENT-- ))
	case $cmd in
`)
	for _, s := range specs {
		fmt.Fprintf(w, "\t%s)\n\t\t_arguments -S \\\n", s.name)
		for _, f := range s.flags {
			spec := fmt.Sprintf("%s[%s]", f.dashed(), zshQuote(f.help))
			switch f.kind {
			case valueWords:
				spec += fmt.Sprintf(":%s:(%s)", f.name, shellWords(f.words))
			case valueGGUF:
				spec += `:GGUF file:_files -g "*.gguf(-.)"`
			case valueFile:
				spec += ":file:_files"
			case valueOther:
				spec += ":" + f.name + ": "
			}
			fmt.Fprintf(w, "\t\t\t'%s' \\\n", spec)
		}
		if s.args != nil {
			fmt.Fprintf(w, "\t\t\t'1:argument:(%s)'\n", shellWords(s.args))
		} else {
			fmt.Fprintf(w, "\t\t\t'*:file:_files'\n")
		}
		fmt.Fprintf(w, "\t\t;;\n")
	}
	fmt.Fprint(w, `	esac
}

if [[ $funcstack[1] == _bitvk ]]; then
	_bitvk "$@"
else
	compdef _bitvk bitvk
fi
`)
}

// fishQuote escapes s for a single-quoted fish string.
func fishQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s)
}

func writeFish(w io.Writer, specs []commandSpec) {
	fmt.Fprint(w, `# fish completion for bitvk, written by 'bitvk completion fish'. Save it with
#   bitvk completion fish > ~/.config/fish/completions/bitvk.fish

complete -c bitvk -f
complete -c bitvk -n __fish_use_subcommand -l version -d 'print the version'
complete -c bitvk -n __fish_use_subcommand -l help -d 'list the commands'
`)
	for _, s := range specs {
		fmt.Fprintf(w, "complete -c bitvk -n __fish_use_subcommand -a %s -d '%s'\n", s.name, fishQuote(s.summary))
	}
	for _, s := range specs {
		cond := fmt.Sprintf("-n '__fish_seen_subcommand_from %s'", s.name)
		fmt.Fprintln(w)
		if s.args != nil {
			fmt.Fprintf(w, "complete -c bitvk %s -a '%s'\n", cond, fishQuote(strings.Join(s.args, " ")))
		} else {
			fmt.Fprintf(w, "complete -c bitvk %s -F\n", cond)
		}
		for _, f := range s.flags {
			opt := "-l " + f.name
			if len(f.name) == 1 {
				opt = "-s " + f.name
			}
			var value string
			switch f.kind {
			case valueWords:
				value = fmt.Sprintf(" -x -a '%s'", fishQuote(strings.Join(f.words, " ")))
			case valueGGUF:
				value = " -k -x -a '(__fish_complete_suffix .gguf)'" // .gguf files first, as fish does it
			case valueFile:
				value = " -r -F"
			case valueOther:
				value = " -x"
			}
			fmt.Fprintf(w, "complete -c bitvk %s %s -d '%s'%s\n", cond, opt, fishQuote(f.help), value)
		}
	}
}
