package view

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildBitvk builds cmd/bitvk with cgo, skipping (saying why) where no
// cgo build can be made.
func buildBitvk(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build bitvk with: %v", err)
	}
	if out, err := exec.Command(goTool, "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skipf("bitvk view needs a cgo build, and this environment builds without cgo (go env CGO_ENABLED: %q)", strings.TrimSpace(string(out)))
	}
	bin := filepath.Join(t.TempDir(), "bitvk")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../cmd/bitvk").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The command, with fewer frames: under Xvfb on lavapipe, with the
// validation layer on, bitvk view draws the synthetic small model with
// --check and writes a screenshot of the swapchain image that shows every
// panel: headings, the prompt and text, the rates and the roofline, a
// timeline with bars of several kernels, and the heatmap with its
// tolerance mark. It skips only where xvfb-run or a cgo build is missing.
func TestScreenshotUnderXvfb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk and runs it under Xvfb")
	}
	xvfb, err := exec.LookPath("xvfb-run")
	if err != nil {
		t.Skip("xvfb-run is not installed (Debian: apt-get install xvfb; scripts/deps.sh installs it)")
	}
	bin := buildBitvk(t)
	shot := filepath.Join(t.TempDir(), "view.png")
	const w, h = 1280, 800
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, xvfb, "-a", "-s", "-screen 0 1280x800x24", bin, "view", "--shape", "small", "--check",
		"--screenshot", shot, "--frames", "5", "-n", "12", "--seed", "1", "--validate")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bitvk view: %v\n%s", err, out)
	}
	t.Logf("bitvk view under Xvfb took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if img.Bounds() != image.Rect(0, 0, w, h) {
		t.Fatalf("the screenshot is %v, want %d×%d", img.Bounds(), w, h)
	}
	px := make([]uint32, w*h)
	for y := range h {
		for x := range w {
			r, g, b, _ := img.At(x, y).RGBA()
			px[y*w+x] = color(r>>8<<16 | g>>8<<8 | b>>8).rgba()
		}
	}
	p := Layout(w, h)
	for name, r := range map[string]image.Rectangle{"text": p.Text, "speed": p.Speed, "timeline": p.Timeline, "check": p.Check} {
		if n := count(px, w, r, colPanel); n < r.Dx()*r.Dy()/10 {
			t.Errorf("%s panel missing: %d of its pixels have the panel colour", name, n)
		}
		if n := count(px, w, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+headH), colHeading); n < 100 {
			t.Errorf("%s panel: %d pixels of heading text", name, n)
		}
	}
	if n := count(px, w, p.Title, colHeading); n < 200 {
		t.Errorf("title bar: %d pixels of text", n)
	}
	if n := count(px, w, p.Text, colEdit); n < 200 {
		t.Errorf("text panel: %d pixels of the prompt being edited", n)
	}
	if n := count(px, w, p.Text, colPrompt); n < 200 {
		t.Errorf("text panel: %d pixels of the prompt generated from", n)
	}
	if count(px, w, p.Speed, colRoofline) < 100 || count(px, w, p.Speed, colRate) < 20 {
		t.Error("speed panel: no roofline or no rates")
	}
	kernels, bars := 0, 0
	for _, col := range kernelColors {
		if n := count(px, w, p.Timeline, col); n > 50 {
			kernels++
			bars += n
		}
	}
	if kernels < 2 || bars < 2000 {
		t.Errorf("timeline: %d kernel colours, %d bar pixels: the decode step's dispatches are not drawn", kernels, bars)
	}
	if count(px, w, p.Check, colTolMark) < 20 {
		t.Error("check panel: no tolerance mark")
	}
	heat := 0
	for y := p.Check.Min.Y + headH + cellH; y < p.Check.Max.Y-60; y++ {
		for x := p.Check.Min.X + 70; x < p.Check.Max.X-6; x++ {
			if v := px[y*w+x]; v != colPanel.rgba() && v != colBorder.rgba() && v != colDim.rgba() {
				heat++
			}
		}
	}
	if heat < (p.Check.Dx()-80)*(p.Check.Dy()-100)/3 {
		t.Errorf("check panel: only %d heatmap pixels", heat)
	}
}

// Without a display, bitvk view says so and names the headless way.
func TestNoDisplay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bitvk")
	}
	bin := buildBitvk(t)
	cmd := exec.Command(bin, "view", "--shape", "tiny")
	cmd.Env = append(os.Environ(), "DISPLAY=", "WAYLAND_DISPLAY=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("bitvk view without a display succeeded:\n%s", out)
	}
	for _, want := range []string{"no display", "DISPLAY", "xvfb-run", "--screenshot"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not mention %q:\n%s", want, out)
		}
	}
}

// writePNG replaces a screenshot only with a whole one: a failed encode
// keeps the file that was there and leaves nothing else.
func TestWritePNGKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shot.png")
	if err := os.WriteFile(path, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writePNG(path, image.NewRGBA(image.Rect(0, 0, 0, 0))); err == nil || !strings.Contains(err.Error(), "shot.png") {
		t.Errorf("writePNG of an empty image: %v; want an error naming the file", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "precious" {
		t.Errorf("a failed write changed the file to %d bytes", len(got))
	}
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Pix[0] = 200
	if err := writePNG(path, img); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := png.Decode(f)
	if err != nil || got.Bounds() != img.Bounds() {
		t.Errorf("the screenshot written: %v, %v", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory; want the screenshot alone", len(entries))
	}
}
