package view

import (
	"time"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/nn"
)

// state is everything a frame shows. The window's goroutine owns it and
// folds in the events the model's goroutine sends.
type state struct {
	title   string // model and backend
	prompt  []rune // the prompt being edited
	shown   string // the prompt of the text below
	text    string // what the model generated from shown
	running bool   // a generation is under way
	status  string // the last generation's outcome, or an error

	rates      []float64 // tokens per second of each decode step, in order
	promptRate float64   // of the last prompt
	genRate    float64   // of the last generation, as nn.Stats reports it
	roofline   float64   // tokens per second the memory bandwidth allows
	bandwidth  float64   // bytes per second measured on the model's device
	perToken   int64     // bytes a decode step reads

	vulkan      bool         // the model runs on Vulkan: there is a timeline
	profile     *gpu.Profile // the last decode step, timed per dispatch
	profileNote string       // why there is none yet
	profiled    bool         // the first generation's profile (or why none) is in

	check     bool // --check was given
	diffs     [][2]nn.BlockDiff
	tolerance float64
	checkNote string
	checked   bool // the comparison (or why none) is in

	// The window and the model share a queue (Vulkan backend): how often
	// and how long each waited for the other.
	sharedQueue            bool
	modelWaits, frameWaits int
	modelWaited, frameWait time.Duration
	frames                 int
	drawDevice             string // the device drawing the window
}
