package view

import (
	"image"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gpu"
	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
)

// sampleState is a state with every panel filled.
func sampleState() *state {
	return &state{
		title: "bitvk view test", prompt: []rune("Once upon"), shown: "Once upon", text: " a time",
		rates: []float64{10, 12, 11, 13}, roofline: 20, bandwidth: 2e9, perToken: 1e8, vulkan: true,
		profile: &gpu.Profile{Pos: 3, GPUNanoseconds: 3000, Commands: []vk.Timing{
			{Kernel: "ternary", Label: "ffn", Nanoseconds: 2000, Bytes: 2000},
			{Kernel: "attention", Label: "attn", Nanoseconds: 1000, Bytes: 500},
		}},
		check: true, tolerance: 0.1,
		diffs: [][2]nn.BlockDiff{{{Rel: 0.01, PosRel: []float64{1e-6, 0.01}}, {Rel: 0.2, PosRel: []float64{1e-3, 0.2}}}},
	}
}

// count counts the pixels of r in px (w wide) that are col.
func count(px []uint32, w int, r image.Rectangle, col color) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if px[y*w+x] == col.rgba() {
				n++
			}
		}
	}
	return n
}

// A frame drawn by the reference rasterizer has every panel with its
// heading, the prompt, the roofline, the timeline's bars in two kernel
// colours and the heatmap with a cell over the tolerance.
func TestDrawPanels(t *testing.T) {
	const w, h = 1280, 800
	font, err := parseFont(fontSource)
	if err != nil {
		t.Fatal(err)
	}
	c := newCanvas(w, h)
	p := draw(c, sampleState())
	if c.full {
		t.Fatal("the frame needs more than maxItems items")
	}
	px := rasterize(c.words(), font, w, h)
	for name, r := range map[string]image.Rectangle{"text": p.Text, "speed": p.Speed, "timeline": p.Timeline, "check": p.Check} {
		if n := count(px, w, r, colPanel); n < r.Dx()*r.Dy()/10 {
			t.Errorf("%s panel: %d of its pixels have the panel colour", name, n)
		}
		if n := count(px, w, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+headH), colHeading); n < 50 {
			t.Errorf("%s panel: %d heading pixels", name, n)
		}
	}
	checks := []struct {
		what string
		r    image.Rectangle
		col  color
	}{
		{"prompt being edited", p.Text, colEdit},
		{"generated text", p.Text, colText},
		{"roofline", p.Speed, colRoofline},
		{"rates", p.Speed, colRate},
		{"ternary bars", p.Timeline, kernelColors[0]},
		{"attention bars", p.Timeline, kernelColors[1]},
		{"cell over the tolerance", p.Check, colOver},
		{"tolerance mark", p.Check, colTolMark},
		{"title", p.Title, colHeading},
	}
	for _, k := range checks {
		if count(px, w, k.r, k.col) == 0 {
			t.Errorf("no pixels of the %s", k.what)
		}
	}
}

// Text is clipped at the right edge and wraps at the width given.
func TestTextClipAndWrap(t *testing.T) {
	c := newCanvas(100, 20)
	if x := c.text(0, 0, 1, "abcdefghijklmnopqrstuvwxyz", colText, 60); x != 60 {
		t.Errorf("text stopped at x=%d, want 60 (10 cells)", x)
	}
	if len(c.layers[layerText]) != 10 {
		t.Errorf("%d glyphs drawn, want 10", len(c.layers[layerText]))
	}
	if got := wrap("abcdef\ngh", 4); strings.Join(got, "|") != "abcd|ef|gh" {
		t.Errorf("wrap: %q", got)
	}
}

// The push constants view_draw.comp declares are drawPush's fields.
func TestDrawPushLayout(t *testing.T) {
	src, err := os.ReadFile("../shaders/view_draw.comp")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)layout\(push_constant\)\s*uniform\s+Push\s*\{(.*?)\}\s*pc;`).FindSubmatch(src)
	if m == nil {
		t.Fatal("view_draw.comp has no push_constant block")
	}
	var fields []string
	for _, d := range strings.Split(string(m[1]), ";") {
		if d = strings.Join(strings.Fields(d), " "); d != "" {
			fields = append(fields, d)
		}
	}
	if want := []string{"uint width", "uint height", "uint layer"}; strings.Join(fields, ",") != strings.Join(want, ",") {
		t.Errorf("push block %q, drawPush has %q", fields, want)
	}
	if len(drawPush{}.bytes()) != 12 {
		t.Error("drawPush encodes to other than 12 bytes")
	}
}
