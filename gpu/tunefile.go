package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
)

// Tuning files. `bitvk tune` times kernel shapes on a device for a model
// shape and saves the fastest in a JSON file of entries (by TuneKey); New
// takes the entry of its device and model from Options.TuneFile when
// neither Options.Tune nor BITVK_VK_TUNE says otherwise. An entry is a
// speed choice only: every shape computes the same thing (see Tuning).

// TuneEntry is one saved tuning.
type TuneEntry struct {
	// Tune is the shape in ParseTuning's form, only what differs from
	// the defaults ("": the defaults were fastest).
	Tune string `json:"tune"`
	// The decode and prompt speeds measured with it and with the
	// defaults, tokens a second, and what was timed.
	Decode        float64 `json:"decode_tok_s"`
	Prompt        float64 `json:"prompt_tok_s"`
	DefaultDecode float64 `json:"default_decode_tok_s"`
	DefaultPrompt float64 `json:"default_prompt_tok_s"`
	Test          string  `json:"test"`    // e.g. "tg32, pp512"
	Saved         string  `json:"saved"`   // RFC 3339
	Version       string  `json:"version"` // bitvk's
}

// TuneKey names a device, its driver, the kernel set and a model shape
// (widths, layers, heads, vocabulary, head type): what a tuning's speed
// depends on.
func TuneKey(info vk.DeviceInfo, kernels string, c *nn.Config, head nn.HeadType) string {
	if head == "" {
		head = nn.HeadStored
	}
	return fmt.Sprintf("%s%s kernels | embd %d ffn %d layers %d heads %d/%d vocab %d head %s",
		TuneDevice(info), kernels, c.Embd, c.FFN, c.Layers, c.Heads, c.KVHeads, c.Vocab, head)
}

// TuneDevice is the start of the keys of a device's entries (its name,
// IDs and driver version): what bitvk devices looks for.
func TuneDevice(info vk.DeviceInfo) string {
	return fmt.Sprintf("%s [%04x:%04x] driver %s, ", info.Name, info.VendorID, info.DeviceID, info.DriverVersion)
}

// ReadTuneFile reads a tuning file: its entries by key, none when the file
// does not exist.
func ReadTuneFile(path string) (map[string]TuneEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]TuneEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	var entries map[string]TuneEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("tuning file %s: %w (remove it, or run bitvk tune again)", path, err)
	}
	if entries == nil {
		entries = map[string]TuneEntry{}
	}
	return entries, nil
}

// SaveTune writes e under key into the tuning file at path, keeping its
// other entries; the file is replaced whole (a temporary file renamed), so
// a reader never sees half of it.
func SaveTune(path, key string, e TuneEntry) error {
	if _, err := ParseTuning(e.Tune); err != nil {
		return err
	}
	entries, err := ReadTuneFile(path)
	if err != nil {
		return err
	}
	entries[key] = e
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tune-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the tuning to %s: %w", path, werr)
	}
	return nil
}

// savedTuning returns the tuning file's entry for this backend's device
// and model, as a Tuning to resolve (zero for the defaults, which then
// resolve as New's zero Options.Tune does), and whether there is one.
func (b *Backend) savedTuning(path string) (Tuning, bool, error) {
	entries, err := ReadTuneFile(path)
	if err != nil {
		return Tuning{}, false, err
	}
	key := TuneKey(b.info, b.Kernels(), b.c, b.o.Head)
	e, ok := entries[key]
	if !ok {
		return Tuning{}, false, nil
	}
	t, err := ParseTuning(e.Tune)
	if err != nil {
		return Tuning{}, false, fmt.Errorf("tuning file %s, entry %q: %w (run bitvk tune again)", path, key, err)
	}
	return t, true, nil
}

// WithDefaults is t with its zero fields set to the defaults.
func (t Tuning) WithDefaults() Tuning {
	d := defaultTuning()
	df := d.fields()
	for i, f := range t.fields() {
		if *f.v == 0 {
			*f.v = *df[i].v
		}
	}
	return t
}
