//go:build !cgo

package view

import (
	"errors"
	"io"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
)

// ErrNoCgo is what a build without cgo says: GLFW is C.
var ErrNoCgo = errors.New("needs a cgo build (this bitvk was built with CGO_ENABLED=0): rebuild with cgo, a C compiler and the X11 headers (scripts/deps.sh installs them)")

// Window is a desktop window; without cgo none can be opened.
type Window struct{}

// Options say how Run ends and where it reports.
type Options struct {
	Screenshot string
	Frames     int
	Log        io.Writer
}

// OpenWindow fails: built without cgo.
func OpenWindow(title string, w, h int) (*Window, error) { return nil, ErrNoCgo }

// GPU returns nil.
func (w *Window) GPU() *gpu.Window { return nil }

// OpenDevice fails: built without cgo.
func (w *Window) OpenDevice(index int, validate bool) (*vk.Device, error) { return nil, ErrNoCgo }

// Messages returns none.
func (w *Window) Messages() []string { return nil }

// Close does nothing.
func (w *Window) Close() {}

// Run fails: built without cgo.
func Run(w *Window, dev *vk.Device, s *Session, o Options) error { return ErrNoCgo }
