package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"unicode"

	"github.com/chzyer/readline"

	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// chatStdin is where chat reads its messages; tests replace it. When it is
// a terminal, chat edits lines with readline; otherwise it reads one message
// per line, so that it can be scripted.
var chatStdin io.Reader = os.Stdin

const chatHelp = `/reset         forget the conversation (the system message stays)
/system TEXT   set the system message (the turns so far stay, and are read again)
/system        show the system message
/stats         turns, context used, tokens and speeds
/exit          leave (as does Ctrl-D)
Ctrl-C stops a reply.
`

func runChat(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chat", "-m MODEL [--system TEXT] [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	system := fs.String("system", "", "the system message `text`")
	keepSystem := fs.Bool("keep-system", false, "when the context is full, drop only the oldest turns and keep the system message")
	tmpl := fs.String("chat-template", "", "use this template instead of the model's: "+strings.Join(tokenizer.TemplateNames(), ", "))
	n := fs.Int("n", -1, "most tokens per reply (-1: until the model ends its turn or the context is full); when old turns must go, room is kept for this many (for a quarter of the context with -1)")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	var sf samplerFlags
	addSamplerFlags(fs, &sf)
	var df draftFlags
	addDraftFlags(fs, &df)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q (messages are read from standard input)", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case *n == 0 || *n < -1:
		return usageError(fs, "-n must be positive or -1")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	if err := df.check(fs); err != nil {
		return err
	}
	s, seed, err := sf.sampler()
	if err != nil {
		return usageError(fs, "%v", err)
	}
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := sf.checkVocab(m.config.Vocab); err != nil {
		return err
	}
	tok, err := nn.NewTokenizer(m.file)
	if err != nil {
		return fmt.Errorf("chat needs the model's tokenizer: %w", err)
	}
	sf.setDRYBreakers(s, tok)
	for _, note := range tok.Notes() {
		fmt.Fprintf(stderr, "note: %s\n", note)
	}
	t, err := nn.ChatTemplate(m.file, *tmpl)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s, %s, context %d, template %s, seed %d\n", m.path, describe(m.config), m.backend.Name(), m.engine.Context(), t.Name(), seed)
	drafter, what, err := df.drafter(m)
	if err != nil {
		return err
	}
	df.announce(stderr, what, "")
	conv := newConversation(conversationConfig{
		engine: m.engine, tok: tok, tmpl: t, sampler: s,
		maxTokens: *n, keepSystem: *keepSystem, system: *system,
		draft: func(o *nn.GenerateOptions) { df.options(o, drafter) },
	})

	ui := &chatUI{conv: conv, stdout: stdout, stderr: stderr, maxTokens: *n}
	if f, ok := chatStdin.(*os.File); ok && f == os.Stdin && readline.IsTerminal(int(f.Fd())) {
		rl, err := readline.NewEx(&readline.Config{
			Prompt: "> ", Stdout: stdout, Stderr: stderr, HistoryLimit: 1000,
			InterruptPrompt: "^C", EOFPrompt: "\n", // no "^D" left on the line
		})
		if err != nil {
			return err
		}
		defer rl.Close()
		ui.in, ui.tty = readlineLines{rl}, true
		fmt.Fprintln(stderr, "Type a message and press Enter; /help lists the commands. Ctrl-C stops a reply, Ctrl-D leaves.")
	} else {
		sc := bufio.NewScanner(chatStdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		ui.in = scannerLines{sc}
	}
	return ui.loop()
}

// lineSource reads the user's lines.
type lineSource interface {
	// ReadLine returns the next line; io.EOF when the input ends (Ctrl-D),
	// errLineCancelled for Ctrl-C at the prompt.
	ReadLine() (string, error)
}

var errLineCancelled = errors.New("line cancelled")

// readlineLines edits lines in the terminal, with history.
type readlineLines struct{ rl *readline.Instance }

func (r readlineLines) ReadLine() (string, error) {
	line, err := r.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return "", errLineCancelled
	}
	return line, err
}

// scannerLines reads one message per line from a pipe or file.
type scannerLines struct{ sc *bufio.Scanner }

func (s scannerLines) ReadLine() (string, error) {
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return "", fmt.Errorf("reading standard input: %w", err)
		}
		return "", io.EOF
	}
	return s.sc.Text(), nil
}

// chatUI is the terminal side of a chat: it reads lines, runs commands, and
// streams replies to stdout; notes and /stats go to stderr.
type chatUI struct {
	conv           *conversation
	in             lineSource
	tty            bool // the input is a terminal (and a person): keep control bytes off it
	stdout, stderr io.Writer
	maxTokens      int
}

func (u *chatUI) loop() error {
	// In a terminal, readline reads Ctrl-C at the prompt as a key; during a
	// reply it is a signal, which stops the reply. The signal is caught for
	// the whole session there, so that a Ctrl-C between the two cannot kill
	// the program with the terminal half set up. Scripted, it is caught only
	// during a reply.
	sigs := make(chan os.Signal, 1)
	if u.tty {
		signal.Notify(sigs, os.Interrupt)
		defer signal.Stop(sigs)
	}
	for {
		line, err := u.in.ReadLine()
		switch {
		case errors.Is(err, errLineCancelled):
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "/"):
			if exit := u.command(line); exit {
				return nil
			}
			continue
		}
		if err := u.reply(line, sigs); err != nil {
			return err
		}
	}
}

// command runs a /command and reports whether to leave.
func (u *chatUI) command(line string) (exit bool) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit":
		return true
	case "/reset":
		u.conv.Reset()
		u.note("the conversation is forgotten; the system message stays")
	case "/system":
		if arg == "" {
			if s := u.conv.System(); s != "" {
				u.note("the system message is: %s", s)
			} else {
				u.note("there is no system message; /system TEXT sets one")
			}
			return false
		}
		u.conv.SetSystem(arg)
		if u.conv.Turns() > 0 {
			u.note("system message set; the %d %s so far will be read again with your next message", u.conv.Turns(), plural(u.conv.Turns(), "turn", "turns"))
		} else {
			u.note("system message set")
		}
	case "/stats":
		u.conv.writeStats(u.stderr)
	case "/help", "/?":
		io.WriteString(u.stderr, chatHelp)
	default:
		u.note("unknown command %s; /help lists them", name)
	}
	return false
}

// reply sends one message and streams the answer; a Ctrl-C (a signal on
// sigs) stops the answer. Only failures of the engine or of the output are
// returned: a message that does not fit is a note.
func (u *chatUI) reply(text string, sigs chan os.Signal) error {
	p, err := u.conv.plan(text)
	if errors.Is(err, errNoRoom) {
		u.note("%v; the message was not sent", err)
		return nil
	}
	if err != nil {
		return err
	}
	if p.rebuild && (p.cut.turns > 0 || p.cut.system) {
		what := fmt.Sprintf("the oldest %d turns", p.cut.turns)
		if p.cut.turns == 1 {
			what = "the oldest turn"
		}
		switch {
		case p.cut.turns == 0:
			what = "the system message"
		case p.cut.system:
			what += " and the system message"
		}
		kept := u.conv.Turns() - p.cut.turns
		u.note("the context is full: dropped %s to make room; %d earlier %s kept, %d of %d positions used",
			what, kept, plural(kept, "turn", "turns"), len(p.prompt), u.conv.engine.Context())
	}

	if !u.tty {
		signal.Notify(sigs, os.Interrupt)
		defer signal.Stop(sigs)
	}
	select {
	case <-sigs: // a Ctrl-C from before this reply
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
	}()

	atLineStart, wrote := true, false
	rep, err := u.conv.say(ctx, p, func(s string) error {
		if s == "" {
			return nil
		}
		if u.tty {
			s = printable(s)
		}
		atLineStart, wrote = strings.HasSuffix(s, "\n"), true
		_, err := io.WriteString(u.stdout, s)
		return err
	})
	if !atLineStart || !wrote { // every reply ends a line, an empty one too
		fmt.Fprintln(u.stdout)
	}
	if err != nil {
		return err
	}
	switch {
	case rep.Stop == nn.StopInterrupted && !rep.Kept:
		u.note("interrupted; the message was not sent")
	case rep.Stop == nn.StopInterrupted:
		u.note("interrupted")
	case rep.Stop == nn.StopLength:
		u.note("the reply reached the -n limit of %d tokens", u.maxTokens)
	case rep.Stop == nn.StopContext || rep.Full:
		u.note("the context is full (%d positions): the reply was cut; the oldest turns will be dropped to make room for the next message", u.conv.engine.Context())
	case !wrote:
		u.note("the model ended its turn without a word")
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// note prints a status line, marked off from the replies.
func (u *chatUI) note(format string, a ...any) {
	fmt.Fprintf(u.stderr, "[%s]\n", fmt.Sprintf(format, a...))
}

// printable replaces the control characters of a reply, other than newline
// and tab, with U+FFFD, so that a model cannot move the cursor or change
// the terminal's settings.
func printable(s string) string {
	if !strings.ContainsFunc(s, isUnsafe) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isUnsafe(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

func isUnsafe(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }
