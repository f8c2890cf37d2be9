package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
)

// A tuning file: none reads as no entries; SaveTune adds an entry and keeps
// the others, in a file that reads back the same (its directory made); an
// entry whose shape does not parse is refused before anything is written;
// a file that is not JSON is an error naming it.
func TestTuneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tune.json")
	if got, err := ReadTuneFile(path); err != nil || len(got) != 0 {
		t.Fatalf("no file: %v, %v", got, err)
	}
	c := &nn.Config{Embd: 2560, FFN: 6912, Layers: 30, Heads: 20, KVHeads: 5, Vocab: 128256}
	k1 := TuneKey(vk.DeviceInfo{Name: "GPU A", VendorID: 0x10de, DeviceID: 0x2335, DriverVersion: "580.159.4.0"}, "dot4", c, "")
	k2 := TuneKey(vk.DeviceInfo{Name: "GPU A", VendorID: 0x10de, DeviceID: 0x2335, DriverVersion: "580.159.4.0"}, "dot4", c, nn.HeadQ8)
	if k1 == k2 || !strings.Contains(k1, "head stored") || !strings.Contains(k1, "[10de:2335]") {
		t.Errorf("keys %q, %q", k1, k2)
	}
	e1 := TuneEntry{Tune: "warm=2,layer=5", Decode: 512, Prompt: 9000, DefaultDecode: 357, DefaultPrompt: 3700, Test: "tg32, pp512"}
	e2 := TuneEntry{Tune: "", Decode: 1, Prompt: 2}
	if err := SaveTune(path, k1, e1); err != nil {
		t.Fatal(err)
	}
	if err := SaveTune(path, k2, e2); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTuneFile(path)
	if err != nil || len(got) != 2 || got[k1] != e1 || got[k2] != e2 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	before, _ := os.ReadFile(path)
	if err := SaveTune(path, k1, TuneEntry{Tune: "warm=x"}); err == nil {
		t.Error("an entry whose shape does not parse: saved")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a refused entry changed the file")
	}
	if err := os.WriteFile(path, []byte("[1, 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTuneFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a file that is not JSON: %v", err)
	}
	entries, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tune-*"))
	if len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}
