package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/models"
	"github.com/bitvk/bitvk/nn"
	"github.com/bitvk/bitvk/tokenizer"
)

// stdin is where tokenize reads text when none is given; tests replace it.
var stdin io.Reader = os.Stdin

func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", "[-m MODEL.gguf] [flags] [TEXT | -]", stderr)
	model := fs.String("m", "", "model or vocabulary-only GGUF `file` (default: the built-in model, "+models.Default().Name+")")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token the vocabulary asks for")
	special := fs.Bool("special", false, "turn control-token text such as <|eot_id|> into its token")
	ids := fs.Bool("ids", false, "print only a JSON array of the ids, on one line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bitvk tokenize [-m MODEL.gguf] [flags] [TEXT | -]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Splits TEXT (or standard input, with - or no TEXT) into token ids with the")
		fmt.Fprintln(stderr, "model's tokenizer and prints one token per line: id, tab, 'piece'.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError(fs, "want at most one TEXT argument, got %d (quote the text)", len(pos))
	}
	var text string
	if len(pos) == 0 || pos[0] == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("reading standard input: %w", err)
		}
		text = string(b)
	} else {
		text = pos[0]
	}

	var f *gguf.File
	name := *model
	if name == "" {
		d := models.Default()
		name = "built-in " + d.Name
		f, err = gguf.Parse(d.Data)
	} else {
		f, err = gguf.Open(name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, n := range tok.Notes() {
		fmt.Fprintf(stderr, "bitvk tokenize: note: %s\n", n)
	}
	out := tok.Encode(text, tokenizer.EncodeOptions{NoBOS: *noBOS, ParseSpecial: *special})

	w := bufio.NewWriter(stdout)
	if *ids {
		// llama.cpp's llama-tokenize --ids prints the same: [1, 2, 3]
		w.WriteByte('[')
		for i, id := range out {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteString(strconv.Itoa(int(id)))
		}
		w.WriteString("]\n")
	} else {
		for _, id := range out {
			fmt.Fprintf(w, "%d\t'%s'\n", id, displayPiece(tok.Piece(id)))
		}
	}
	return w.Flush()
}

// displayPiece makes a token's bytes printable on one line: printable
// characters as they are, a backslash doubled, line breaks, tabs and other
// control characters as escapes, and bytes that are only part of a UTF-8
// character (a token can hold half an emoji) as \xNN.
func displayPiece(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
