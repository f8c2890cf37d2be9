package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
)

func runLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logits", "-m MODEL --tokens ID,ID,... [--top K] [flags]", stderr)
	var src modelSource
	src.addFlags(fs)
	tokens := fs.String("tokens", "", "comma-separated token `ids`, evaluated teacher-forced")
	top := fs.Int("top", 10, "print the K highest logits per position, highest first (0: all of them)")
	batch := fs.Int("batch", 32, "positions evaluated per pass")
	var bf backendFlags
	addBackendFlags(fs, &bf, true)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case !src.given():
		return usageError(fs, errSources)
	case *tokens == "":
		return usageError(fs, "give the tokens with --tokens ID,ID,...")
	case *top < 0 || *batch < 1:
		return usageError(fs, "--top must not be negative and --batch must be positive")
	}
	if err := bf.check(fs); err != nil {
		return err
	}
	ids, err := parseIDs(*tokens)
	if err != nil {
		return usageError(fs, "--tokens: %v", err)
	}
	m, err := src.open(bf)
	if err != nil {
		return err
	}
	defer m.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	order := make([]int, m.config.Vocab)
	var line []byte
	return m.engine.EvalAll(ids, *batch, func(i int, logits []float32) error {
		for j := range order {
			order[j] = j
		}
		// highest first; equal logits by id, so the output is stable
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(logits[b], logits[a]), cmp.Compare(a, b))
		})
		k := len(order)
		if *top > 0 {
			k = min(*top, k)
		}
		line = fmt.Appendf(line[:0], `{"pos":%d,"token":%d,"top":[`, i, ids[i])
		for j, id := range order[:k] {
			if j > 0 {
				line = append(line, ',')
			}
			line = fmt.Appendf(line, "[%d,", id)
			line = appendJSONFloat(line, logits[id])
			line = append(line, ']')
		}
		line = append(line, "]}\n"...)
		_, err := out.Write(line)
		return err
	})
}

// appendJSONFloat writes a float32 exactly (shortest round-trip form);
// JSON has no NaN or infinity, so those become null.
func appendJSONFloat(b []byte, v float32) []byte {
	if v != v || v > 3.4028235e38 || v < -3.4028235e38 {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
}
