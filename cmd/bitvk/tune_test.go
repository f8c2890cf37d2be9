package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gpu"
)

// TestMain keeps every test of the command off the user's own cache
// directory: a tuning saved there by bitvk tune would shape the Vulkan
// backends the tests open.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bitvk-cmd-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Unsetenv(gpu.TuneEnv)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// bitvk tune times each listed shape, saves the fastest in the tuning file
// under this device's and model's key, and a Vulkan backend opened after
// it runs that shape; BITVK_VK_TUNE, set even empty, overrides the file.
func TestTuneSavesAndBackendsUseIt(t *testing.T) {
	needVulkan(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := defaultTuneFile()
	model := synthTiny(t)
	code, out, errOut := bitvk("tune", "-m", model, "-n", "4", "-d", "4,12", "-p", "16", "-r", "1",
		"--decode", "default;warm=2", "--prompt", "default;mm=1;mm=32,mmm=256,mmr=8,mmt=4,mmg=1")
	if code != 0 {
		t.Fatalf("tune: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{" tg4 @ d4,12 ", " pp16 ", "warm=2", "mm=1", "fastest: ", "saved in " + file} {
		if !strings.Contains(out, want) {
			t.Errorf("tune's output lacks %q:\n%s", want, out)
		}
	}
	// A shape the device cannot run is reported, not fatal (lavapipe has
	// 32 KiB of shared memory: that tile stages 36 KiB).
	if !strings.Contains(out, "mm=32,mmm=256") {
		t.Errorf("tune's output does not name the shape the device refused:\n%s", out)
	}
	entries, err := gpu.ReadTuneFile(file)
	if err != nil || len(entries) != 1 {
		t.Fatalf("tuning file: %v, %d entries", err, len(entries))
	}
	var key string
	var e gpu.TuneEntry
	for key, e = range entries {
	}
	if !strings.Contains(key, "embd 256") || e.Decode <= 0 || e.Prompt <= 0 || e.DefaultDecode <= 0 || e.Test != "tg4 @ d4,12, pp16" {
		t.Errorf("entry %q: %+v", key, e)
	}

	// bitvk devices lists it under its device.
	if code, out, _ := bitvk("devices"); code != 0 || !strings.Contains(out, "tuned:     ") || !strings.Contains(out, "embd 256 ffn 768") {
		t.Errorf("devices after tune: exit %d:\n%s", code, out)
	}
	// A backend opened now runs the saved shape: replace it with one whose
	// effect is visible.
	e.Tune = "warm=2,mm=1"
	if err := gpu.SaveTune(file, key, e); err != nil {
		t.Fatal(err)
	}
	open := func() *gpu.Backend {
		t.Helper()
		m, err := openModel(model, backendFlags{backend: "vulkan", device: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m.backend.(*gpu.Backend)
	}
	if b := open(); b.TuneFile() != file || b.Tuning().Warm != 2 || b.Tuning().Tiled != 1 {
		t.Errorf("backend after tune: file %q, tuning %v", b.TuneFile(), b.Tuning())
	}
	t.Setenv(gpu.TuneEnv, "")
	if b := open(); b.TuneFile() != "" || b.Tuning().Warm != 1 {
		t.Errorf("with %s set empty: file %q, tuning %v; want the defaults", gpu.TuneEnv, b.TuneFile(), b.Tuning())
	}
	t.Setenv(gpu.TuneEnv, "x")
	os.Unsetenv(gpu.TuneEnv) // restored by t.Setenv's cleanup
	if code, _, errOut := bitvk("tune", "-m", model, "-d", "100000", "--no-save"); code != 1 || !strings.Contains(errOut, "no depth of -d fits") {
		t.Errorf("tune -d 100000: exit %d: %s", code, errOut)
	}
	// A prompt test longer than the model's context is shortened to it.
	if code, out, errOut := bitvk("tune", "-m", model, "-n", "2", "-d", "4", "-p", "100000", "-r", "1", "--decode", "default", "--prompt", "default", "--no-save"); code != 0 ||
		!strings.Contains(errOut, "beyond the model's context") || !strings.Contains(out, " pp") {
		t.Errorf("tune -p 100000: exit %d:\n%s\n%s", code, out, errOut)
	}
	t.Setenv(gpu.TuneEnv, "")
	code, _, errOut = bitvk("tune", "-m", model, "--no-save")
	if code == 0 || !strings.Contains(errOut, gpu.TuneEnv+" is set") {
		t.Errorf("tune with %s set: exit %d: %s", gpu.TuneEnv, code, errOut)
	}
}

// A tuning file that is not JSON, or whose entry for this device and
// model names a shape this build refuses, stops the backend with an error
// naming the file.
func TestTuneFileErrors(t *testing.T) {
	needVulkan(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := defaultTuneFile()
	model := synthTiny(t)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openModel(model, backendFlags{backend: "vulkan", device: -1}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a tuning file that is not JSON: %v", err)
	}
	m, err := openModel(model, backendFlags{backend: "vulkan", device: -1, noTuneFile: true})
	if err != nil {
		t.Fatal(err)
	}
	b := m.backend.(*gpu.Backend)
	key := gpu.TuneKey(b.Device(), b.Kernels(), m.config, m.head)
	m.Close()
	data, _ := json.Marshal(map[string]gpu.TuneEntry{key: {Tune: "warm=9"}})
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openModel(model, backendFlags{backend: "vulkan", device: -1}); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "warm=9") {
		t.Errorf("an entry with warm=9: %v", err)
	}
}

// Usage errors: lists that do not begin with the defaults, repeat a
// shape, or give a prompt shape a decode shape's key.
func TestTuneUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--decode", "warm=2"}, "must begin with default"},
		{[]string{"--decode", "default;warm=2;warm=2"}, "twice"},
		{[]string{"--prompt", "default;vec=4"}, "decode shape's key"},
		{[]string{"--decode", "default;rows=3x"}, "want key=positive integer"},
		{[]string{"-n", "0"}, "at least 1"},
		{[]string{"--margin", "-1"}, "--margin"},
		{[]string{"-d", "0"}, "-d"},
	} {
		code, _, errOut := bitvk(append([]string{"tune", "--shape", "tiny", "--no-save"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("tune %v: exit %d, want 2 and %q: %s", tc.args, code, tc.want, errOut)
		}
	}
}

// A trial whose logits are not the defaults' (beyond 1e-3 of their largest
// magnitude, or NaN) is marked failed, so tune never chooses it; a
// last-bit difference passes.
func TestCheckLogits(t *testing.T) {
	base := []float32{1, -2, 3.5}
	for _, tc := range []struct {
		logits []float32
		ok     bool
	}{
		{[]float32{1, -2, 3.5}, true},
		{[]float32{1, -2.0000002, 3.5}, true},
		{[]float32{1, -2, 3.6}, false},
		{[]float32{1, float32(math.NaN()), 3.5}, false},
		{[]float32{1, -2}, false},
	} {
		tr := tuneTrial{logits: tc.logits}
		checkLogits(&tr, base)
		if (tr.Err == "") != tc.ok {
			t.Errorf("%v: error %q", tc.logits, tr.Err)
		}
	}
}
