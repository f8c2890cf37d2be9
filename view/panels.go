package view

import (
	"fmt"
	"image"
	"math"
	"slices"
	"strings"

	"github.com/bitvk/bitvk/nn"
)

// Panels are where a frame of size w×h puts its parts.
type Panels struct {
	Title    image.Rectangle // the title bar
	Text     image.Rectangle // (a) the prompt and the generated text
	Speed    image.Rectangle // (b) tokens per second and the roofline
	Timeline image.Rectangle // (c) one decode step, dispatch by dispatch
	Check    image.Rectangle // (d) Vulkan against the CPU, per layer and position
}

const (
	gap       = 8  // between panels
	titleBarH = 24 // the title bar
	headH     = 24 // a panel's heading
)

// Layout places the panels of a w×h frame: a title bar, then two rows of
// two panels.
func Layout(w, h int) Panels {
	top := titleBarH + gap
	pw := max(0, (w-3*gap)/2)
	ph := max(0, (h-top-2*gap)/2)
	cell := func(col, row int) image.Rectangle {
		x := gap + col*(pw+gap)
		y := top + row*(ph+gap)
		return image.Rect(x, y, x+pw, y+ph)
	}
	return Panels{
		Title:    image.Rect(0, 0, w, titleBarH),
		Text:     cell(0, 0),
		Speed:    cell(1, 0),
		Timeline: cell(0, 1),
		Check:    cell(1, 1),
	}
}

// Colours of the frame. The test of the screenshot looks for them.
const (
	colBack     color = 0x101418 // behind the panels
	colPanel    color = 0x1c2229 // a panel's background
	colTitleBar color = 0x24303c
	colBorder   color = 0x3a4654
	colHeading  color = 0xe8eef4 // panel headings and the title
	colText     color = 0xf0f0e8 // generated text
	colPrompt   color = 0x9fb3c8 // the prompt before it
	colEdit     color = 0xffd866 // the prompt being edited
	colDim      color = 0x8a96a3 // notes and labels
	colRate     color = 0x66d9ef // tokens per second
	colRoofline color = 0xff9f43
	colAxis     color = 0x56626f
	colOver     color = 0xff3b30 // above the tolerance
	colTolMark  color = 0xffffff
)

// kernelColors are the timeline's colours, one per kernel in order of first
// appearance.
var kernelColors = []color{0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac, 0x86bcb6, 0xd4a6c8}

// draw lays the whole frame out on c.
func draw(c *canvas, st *state) Panels {
	p := Layout(c.w, c.h)
	c.rect(layerClear, image.Rect(0, 0, c.w, c.h), colBack)
	c.rect(layerBack, p.Title, colTitleBar)
	c.text(gap, 5, 2, st.title, colHeading, c.w-gap)
	drawText(c, p.Text, st)
	drawSpeed(c, p.Speed, st)
	drawTimeline(c, p.Timeline, st)
	drawCheck(c, p.Check, st)
	return p
}

// panel draws a panel's background, frame and heading and returns the
// area left for its content.
func panel(c *canvas, r image.Rectangle, heading string) image.Rectangle {
	c.rect(layerBack, r, colPanel)
	c.frame(layerMark, r, colBorder)
	c.text(r.Min.X+6, r.Min.Y+5, 2, heading, colHeading, r.Max.X-6)
	return image.Rect(r.Min.X+6, r.Min.Y+headH+4, r.Max.X-6, r.Max.Y-6)
}

// wrap splits s into lines of at most cols runes, at newlines and where a
// line is full.
func wrap(s string, cols int) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		r := []rune(para)
		for len(r) > cols {
			lines = append(lines, string(r[:cols]))
			r = r[cols:]
		}
		lines = append(lines, string(r))
	}
	return lines
}

func drawText(c *canvas, r image.Rectangle, st *state) {
	in := panel(c, r, "text")
	const s = 2
	cols := max(1, in.Dx()/(cellW*s))
	y := in.Min.Y
	// The prompt being edited, with a cursor.
	for _, line := range wrap("> "+string(st.prompt)+"_", cols) {
		c.text(in.Min.X, y, s, line, colEdit, in.Max.X)
		y += cellH * s
	}
	y += 4
	footer := in.Max.Y - cellH*s
	rows := max(0, (footer-4-y)/(cellH*s))
	// The generated text after its prompt, the last rows when it is long.
	pl := wrap(st.shown, cols)
	last := pl[len(pl)-1]
	lines := slices.Clone(pl[:len(pl)-1])
	rest := wrap(last+st.text, cols)
	type seg struct {
		s   string
		col color
	}
	var out [][]seg
	for _, l := range lines {
		out = append(out, []seg{{l, colPrompt}})
	}
	// The first line of rest starts with the prompt's last line.
	for i, l := range rest {
		if i == 0 {
			n := min(len([]rune(last)), len([]rune(l)))
			out = append(out, []seg{{string([]rune(l)[:n]), colPrompt}, {string([]rune(l)[n:]), colText}})
			continue
		}
		out = append(out, []seg{{l, colText}})
	}
	if len(out) > rows {
		out = out[len(out)-rows:]
	}
	for _, line := range out {
		x := in.Min.X
		for _, sg := range line {
			x = c.text(x, y, s, sg.s, sg.col, in.Max.X)
		}
		y += cellH * s
	}
	status := st.status
	if st.running {
		status = fmt.Sprintf("generating: %d tokens", len(st.rates))
	}
	c.text(in.Min.X, footer, 1, status, colDim, in.Max.X)
	c.text(in.Min.X, footer+cellH, 1, "Enter: generate   Esc: stop   Ctrl-R: reset   type to edit the prompt", colDim, in.Max.X)
}

func drawSpeed(c *canvas, r image.Rectangle, st *state) {
	in := panel(c, r, "speed: tokens/s per decode step")
	// Text lines at the bottom.
	foot := in.Max.Y - 3*cellH
	now := 0.0
	if len(st.rates) > 0 {
		now = st.rates[len(st.rates)-1]
	}
	c.text(in.Min.X, foot, 1, fmt.Sprintf("now %.1f tok/s   generation %.1f tok/s   prompt %.1f tok/s", now, st.genRate, st.promptRate), colRate, in.Max.X)
	c.text(in.Min.X, foot+cellH, 1, fmt.Sprintf("roofline %.1f tok/s = %.2f GB/s / %.2f MB read per token", st.roofline, st.bandwidth/1e9, float64(st.perToken)/1e6), colRoofline, in.Max.X)
	var overlap string
	switch {
	case st.sharedQueue:
		overlap = fmt.Sprintf("one queue: model steps waited for frames %d times (%.1f ms), frames for steps %d times (%.1f ms)",
			st.modelWaits, ms(st.modelWaited), st.frameWaits, ms(st.frameWait))
	default:
		overlap = "window drawn on " + st.drawDevice + ", model on the CPU: no shared queue"
	}
	c.text(in.Min.X, foot+2*cellH, 1, overlap, colDim, in.Max.X)
	// The plot: x is the decode step, y the rate; the roofline dashed.
	plot := image.Rect(in.Min.X+48, in.Min.Y+4, in.Max.X-4, foot-cellH-6)
	if plot.Dx() < 8 || plot.Dy() < 8 {
		return
	}
	top := st.roofline * 1.15
	for _, v := range st.rates {
		top = math.Max(top, v*1.15)
	}
	if top <= 0 {
		top = 1
	}
	c.rect(layerMark, image.Rect(plot.Min.X-1, plot.Min.Y, plot.Min.X, plot.Max.Y), colAxis)
	c.rect(layerMark, image.Rect(plot.Min.X-1, plot.Max.Y, plot.Max.X, plot.Max.Y+1), colAxis)
	c.text(in.Min.X, plot.Min.Y, 1, fmt.Sprintf("%.0f", top), colDim, plot.Min.X-4)
	c.text(in.Min.X, plot.Max.Y-cellH, 1, "0", colDim, plot.Min.X-4)
	n := max(64, len(st.rates))
	c.text(plot.Max.X-6*cellW, plot.Max.Y+4, 1, fmt.Sprintf("%d", n), colDim, in.Max.X)
	c.text(plot.Min.X, plot.Max.Y+4, 1, "decode step", colDim, in.Max.X)
	yOf := func(v float64) int { return plot.Max.Y - int(math.Min(v/top, 1)*float64(plot.Dy())) }
	if st.roofline > 0 {
		y := yOf(st.roofline)
		for x := plot.Min.X; x < plot.Max.X; x += 12 {
			c.rect(layerMark, image.Rect(x, y-1, min(x+7, plot.Max.X), y+1), colRoofline)
		}
	}
	for i, v := range st.rates {
		x := plot.Min.X + i*plot.Dx()/n
		y := yOf(v)
		c.rect(layerOver, image.Rect(x, y-1, x+max(2, plot.Dx()/n-1), y+2), colRate)
	}
}

func ms(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1e3 }

func drawTimeline(c *canvas, r image.Rectangle, st *state) {
	heading := "GPU timeline of one decode step"
	p := st.profile
	if p != nil {
		heading = fmt.Sprintf("GPU timeline: %d dispatches, %.2f ms", p.Counts.Dispatches, p.GPUNanoseconds/1e6)
	}
	in := panel(c, r, heading)
	if p == nil || len(p.Commands) == 0 {
		note := st.profileNote
		if !st.vulkan {
			note = "the GPU timeline needs the Vulkan backend (--backend vulkan): the model runs on the CPU"
		}
		for i, line := range wrap(note, max(1, in.Dx()/(cellW*2))) {
			c.text(in.Min.X, in.Min.Y+i*cellH*2, 2, line, colDim, in.Max.X)
		}
		return
	}
	// Colours by kernel, in order of first appearance.
	colorOf := map[string]color{}
	for _, cmd := range p.Commands {
		if _, ok := colorOf[cmd.Kernel]; !ok {
			colorOf[cmd.Kernel] = kernelColors[len(colorOf)%len(kernelColors)]
		}
	}
	// Bars: x is time, height the dispatch's GB/s against the device's
	// measured bandwidth (full height: at the roofline).
	bars := image.Rect(in.Min.X, in.Min.Y, in.Max.X, in.Min.Y+in.Dy()/2)
	c.rect(layerMark, image.Rect(bars.Min.X, bars.Max.Y, bars.Max.X, bars.Max.Y+1), colAxis)
	at, end := 0.0, bars.Min.X
	for _, cmd := range p.Commands {
		x0 := max(end, bars.Min.X+int(at/p.GPUNanoseconds*float64(bars.Dx()))) // bars of one layer must not overlap
		at += cmd.Nanoseconds
		x1 := max(x0+1, bars.Min.X+int(at/p.GPUNanoseconds*float64(bars.Dx())))
		frac := 0.15
		if cmd.Nanoseconds > 0 && st.bandwidth > 0 && cmd.Bytes > 0 {
			frac = math.Max(0.15, math.Min(1, float64(cmd.Bytes)/cmd.Nanoseconds*1e9/st.bandwidth))
		}
		y0 := bars.Max.Y - int(frac*float64(bars.Dy()-cellH))
		c.rect(layerMark, image.Rect(x0, y0, x1, bars.Max.Y), colorOf[cmd.Kernel])
		end = x1
	}
	c.text(bars.Min.X, bars.Min.Y, 1, fmt.Sprintf("the decode step at position %d from GPU timestamps; bar width: time, height: GB/s (full: %.2f GB/s measured)", p.Pos, st.bandwidth/1e9), colDim, bars.Max.X)
	// Legend: per label, the time, share and bandwidth.
	y := bars.Max.Y + 6
	c.text(in.Min.X+14, y, 1, fmt.Sprintf("%-18s %5s %9s %6s %8s", "label", "calls", "us", "share", "GB/s"), colDim, in.Max.X)
	y += cellH + 2
	for _, k := range p.ByLabel() {
		if y+cellH > in.Max.Y {
			break
		}
		c.rect(layerMark, image.Rect(in.Min.X, y, in.Min.X+9, y+7), colorOf[k.Kernel])
		label := k.Label
		if len(label) > 18 {
			label = label[:18]
		}
		c.text(in.Min.X+14, y, 1, fmt.Sprintf("%-18s %5d %9.1f %5.1f%% %8.2f", label, k.Calls, k.Nanoseconds/1e3, 100*k.Share, k.GBs), colText, in.Max.X)
		y += cellH + 1
	}
}

// heatColor maps a relative difference to a colour: dark blue at 1e-7 and
// below, through green to yellow at the tolerance, red above it.
func heatColor(rel, tol float64) color {
	if math.IsNaN(rel) || rel > tol {
		return colOver
	}
	lo := math.Log10(1e-7)
	t := (math.Log10(math.Max(rel, 1e-12)) - lo) / (math.Log10(tol) - lo)
	t = math.Max(0, math.Min(1, t))
	// dark blue (0x20, 0x30, 0x70) → green (0x30, 0xb0, 0x60) → yellow (0xf0, 0xe0, 0x40)
	lerp := func(a, b uint32, f float64) uint32 { return uint32(float64(a) + (float64(b)-float64(a))*f) }
	var r, g, b uint32
	if t < 0.5 {
		f := t / 0.5
		r, g, b = lerp(0x20, 0x30, f), lerp(0x30, 0xb0, f), lerp(0x70, 0x60, f)
	} else {
		f := (t - 0.5) / 0.5
		r, g, b = lerp(0x30, 0xf0, f), lerp(0xb0, 0xe0, f), lerp(0x60, 0x40, f)
	}
	return color(r<<16 | g<<8 | b)
}

func drawCheck(c *canvas, r image.Rectangle, st *state) {
	in := panel(c, r, "check: Vulkan against the CPU")
	c.text(in.Min.X, in.Min.Y-4, 1, "hidden state after each block: largest |Vulkan - CPU| at a position / largest |CPU| in the block", colDim, in.Max.X)
	in.Min.Y += cellH
	if st.diffs == nil {
		note := st.checkNote
		if !st.check {
			note = "run with --check to compare the Vulkan hidden states with the CPU's, layer by layer"
		}
		for i, line := range wrap(note, max(1, in.Dx()/(cellW*2))) {
			c.text(in.Min.X, in.Min.Y+i*cellH*2, 2, line, colDim, in.Max.X)
		}
		return
	}
	rows := 2 * len(st.diffs)
	cols := 0
	worst, wl, ws, wp := 0.0, 0, 0, 0
	for l := range st.diffs {
		for s := range 2 {
			d := st.diffs[l][s]
			cols = max(cols, len(d.PosRel))
			if d.Rel > worst || math.IsNaN(d.Rel) {
				worst, wl, ws, wp = d.Rel, l, s, d.At
			}
		}
	}
	legendH := 3*cellH + 14
	grid := image.Rect(in.Min.X+60, in.Min.Y, in.Max.X, in.Max.Y-legendH-cellH)
	if rows == 0 || cols == 0 || grid.Dx() < cols || grid.Dy() < rows {
		return
	}
	cw, ch := grid.Dx()/cols, grid.Dy()/rows
	for l := range st.diffs {
		for s := range 2 {
			row := 2*l + s
			y := grid.Min.Y + row*ch
			if ch >= cellH {
				c.text(in.Min.X, y+(ch-cellH)/2, 1, fmt.Sprintf("L%d %s", l, []string{"attn", "ffn"}[s]), colDim, grid.Min.X-2)
			}
			for p, v := range st.diffs[l][s].PosRel {
				x := grid.Min.X + p*cw
				cell := image.Rect(x, y, x+max(1, cw-1), y+max(1, ch-1))
				c.rect(layerMark, cell, heatColor(v, st.tolerance))
				if v > st.tolerance || math.IsNaN(v) {
					c.frame(layerOver, cell, colTolMark)
				}
			}
		}
	}
	c.text(grid.Min.X, grid.Min.Y+rows*ch+2, 1, fmt.Sprintf("position 0..%d", cols-1), colDim, in.Max.X)
	// The colour scale from 1e-7 to 1 (log), the tolerance marked.
	scale := image.Rect(grid.Min.X, in.Max.Y-legendH+cellH, in.Max.X-10, in.Max.Y-legendH+cellH+10)
	lo, hi := -7.0, 0.0
	for x := scale.Min.X; x < scale.Max.X; x += 2 {
		v := math.Pow(10, lo+(hi-lo)*float64(x-scale.Min.X)/float64(scale.Dx()))
		c.rect(layerMark, image.Rect(x, scale.Min.Y, x+2, scale.Max.Y), heatColor(v, st.tolerance))
	}
	if st.tolerance > 0 {
		tx := scale.Min.X + int((math.Log10(st.tolerance)-lo)/(hi-lo)*float64(scale.Dx()))
		c.rect(layerOver, image.Rect(tx-1, scale.Min.Y-4, tx+2, scale.Max.Y+4), colTolMark)
		c.text(tx-3*cellW, scale.Min.Y-cellH-4, 1, fmt.Sprintf("tol %g", st.tolerance), colTolMark, in.Max.X)
	}
	c.text(scale.Min.X, scale.Max.Y+3, 1, "1e-7", colDim, in.Max.X)
	c.text(scale.Max.X-3*cellW, scale.Max.Y+3, 1, "1", colDim, in.Max.X+4)
	verdict, col := "PASS", colRate
	if !(worst <= st.tolerance) {
		verdict, col = "FAIL", colOver
	}
	c.text(in.Min.X, in.Max.Y-cellH, 1, fmt.Sprintf("%s: largest %.3g at layer %d %s, position %d (tolerance %g)", verdict, worst, wl, nn.Stage(ws), wp, st.tolerance), col, in.Max.X)
}
