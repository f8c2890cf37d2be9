// Package models holds bitvk's trained demo model, embedded in the binary
// so that run, chat, serve, check and perplexity have a model that writes
// text with no download: nano-kjv, a small BitNet b1.58 model trained by
// `make model` on the King James Bible (see nano-kjv.md, its card, and
// nano-kjv.log, its training log), with its CHNB chain table for
// speculative drafting (nano-kjv.chnb, written by bitvk mine).
package models

import (
	_ "embed"
	"os"
	"path/filepath"
)

//go:embed nano-kjv.gguf
var nanoKJV []byte

//go:embed nano-kjv.md
var nanoKJVCard string

//go:embed nano-kjv.chnb
var nanoKJVChains []byte

// Model is an embedded model file.
type Model struct {
	Name    string // what commands call it
	Summary string // one line: what it is
	Data    []byte // the GGUF file
	Card    string // its model card (markdown)
	Chains  []byte // its CHNB chain table for drafting (bitvk mine), or nil
}

// Default is the model commands run when given none.
func Default() Model {
	return Model{Name: "nano-kjv", Summary: "a small ternary model trained on the King James Bible", Data: nanoKJV, Card: nanoKJVCard, Chains: nanoKJVChains}
}

// WriteTemp writes m to a new file in dir (os.TempDir() when empty), for
// code that opens models by path (GGUF files are memory-mapped); remove
// deletes it.
func (m Model) WriteTemp(dir string) (path string, remove func(), err error) {
	f, err := os.CreateTemp(dir, "bitvk-"+m.Name+"-*.gguf")
	if err != nil {
		return "", nil, err
	}
	path = f.Name()
	remove = func() { os.Remove(path) }
	if _, err := f.Write(m.Data); err != nil {
		f.Close()
		remove()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, err
	}
	return filepath.Clean(path), remove, nil
}
