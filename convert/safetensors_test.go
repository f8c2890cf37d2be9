package convert

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
)

func validTensors() []stTensor {
	return []stTensor{
		{"w", "F32", []uint64{2, 3}, f32Bytes([]float32{1, -2, 3.5, 0, 0.25, -1e-3})},
		{"b", "BF16", []uint64{2}, bf16Bytes([]float32{1.5, -2})},
		{"h", "F16", []uint64{2}, f16Bytes([]float32{0.5, -65504})},
		{"q", "U8", []uint64{1, 4}, []byte{0, 1, 2, 255}},
		{"i", "I8", []uint64{2}, []byte{0x80, 0x7f}},
		{"n", "I32", []uint64{}, []byte{0xfe, 0xff, 0xff, 0xff}},
		{"empty", "F32", []uint64{0, 4}, nil},
	}
}

func parseBytes(data []byte) (*Safetensors, error) {
	return ParseSafetensors("test.safetensors", bytes.NewReader(data), int64(len(data)))
}

func TestSafetensorsReadsEveryType(t *testing.T) {
	file := buildSafetensors(t, validTensors(), map[string]string{"format": "pt"})
	path := writeFile(t, filepath.Join(t.TempDir(), "m.safetensors"), file)
	s, err := OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Metadata["format"] != "pt" || len(s.Tensors) != 7 {
		t.Fatalf("metadata %v, %d tensors", s.Metadata, len(s.Tensors))
	}
	want := map[string][]float32{
		"w": {1, -2, 3.5, 0, 0.25, -1e-3}, "b": {1.5, -2}, "h": {0.5, -65504},
		"q": {0, 1, 2, 255}, "i": {-128, 127}, "n": {-2}, "empty": {},
	}
	for name, w := range want {
		ti, ok := s.Tensor(name)
		if !ok {
			t.Fatalf("tensor %s missing", name)
		}
		got, err := s.Floats(ti)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(w) {
			t.Fatalf("%s: %v, want %v", name, got, w)
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("%s[%d] = %v, want %v", name, i, got[i], w[i])
			}
		}
	}
	// The same through ReadAt (no mapping).
	p, err := parseBytes(file)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := p.Tensor("q")
	if d, err := p.Data(ti); err != nil || !bytes.Equal(d, []byte{0, 1, 2, 255}) {
		t.Errorf("Data(q) = %v, %v", d, err)
	}
	if _, err := p.Floats(TensorInfo{Name: "x", DType: "I64", Shape: []uint64{0}}); err == nil {
		t.Error("Floats of I64 should fail")
	}
}

// header builds a file from a raw JSON header and data.
func header(js string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return append(append(out, js...), data...)
}

func TestSafetensorsRejectsMalformedFiles(t *testing.T) {
	good := buildSafetensors(t, validTensors()[:1], nil)
	eight := make([]byte, 8)
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "too short for the 8-byte header length"},
		{"truncated length", []byte{1, 2, 3}, "too short"},
		{"header beyond the file", header(`{}`, nil)[:9], "runs past the end"},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, 1<<40), "over the 100000000-byte limit"},
		{"not JSON", header(`[1,2]`, nil), "does not start with '{'"},
		{"bad JSON", header(`{"w": {"dtype": "F32",}}`, nil), "invalid character"},
		{"truncated JSON", header(`{"w": {"dtype": "F32"`, nil), "header byte"},
		{"trailing garbage", header(`{} x`, nil), "data after the header"},
		{"bad UTF-8", header("{\"\xff\": 1}", nil), "not valid UTF-8"},
		{"unknown dtype", header(`{"w": {"dtype": "F4", "shape": [1], "data_offsets": [0, 1]}}`, []byte{0}), `unknown dtype "F4"`},
		{"dtype not a string", header(`{"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}}`, eight[:4]), "dtype is the number 4"},
		{"unknown field", header(`{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1}}`, []byte{0}), `unknown field "x"`},
		{"missing field", header(`{"w": {"dtype": "U8", "shape": [1]}}`, []byte{0}), `field "data_offsets" is missing`},
		{"negative shape", header(`{"w": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}`, []byte{0}), "not a non-negative integer"},
		{"float offset", header(`{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1.0]}}`, []byte{0}), "not a non-negative integer"},
		{"three offsets", header(`{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}`, []byte{0}), "want 2"},
		{"duplicate tensor", header(`{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}`, []byte{0, 0}), `tensor "w" appears twice`},
		{"duplicate field", header(`{"w": {"dtype": "U8", "dtype": "I8", "shape": [1], "data_offsets": [0, 1]}}`, []byte{0}), `field "dtype" appears twice`},
		{"metadata not strings", header(`{"__metadata__": {"a": 1}}`, nil), `value of "a" is the number 1`},
		{"offsets outside", header(`{"w": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}`, []byte{0, 0}), "beyond its 2 bytes"},
		{"offsets reversed", header(`{"w": {"dtype": "U8", "shape": [0], "data_offsets": [2, 1]}}`, []byte{0, 0}), "end before they begin"},
		{"shape × dtype ≠ bytes", header(`{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}`, eight[:4]), "takes 8 bytes, but data_offsets [0, 4] hold 4"},
		{"shape overflow", header(`{"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}}`, eight[:4]), "more than 2^64"},
		{"overlap", header(`{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}, "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}`, eight[:3]), `tensor "b" (bytes 1 to 3) overlaps tensor "a"`},
		{"gap", header(`{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "b": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}}`, eight[:3]), `a gap of 1 bytes between tensor "a"`},
		{"not from zero", header(`{"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}`, eight[:2]), "between the start of the data"},
		{"extra data", append(append([]byte{}, good...), 0), "1 bytes unaccounted for"},
		{"truncated data", good[:len(good)-1], "beyond its"},
	} {
		_, err := parseBytes(c.file)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "test.safetensors") {
			t.Errorf("%s: got %v, want an error naming the file and saying %q", c.name, err, c.want)
		}
	}
}

func TestCheckpointShards(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), buildSafetensors(t, []stTensor{{"x", "U8", []uint64{1}, []byte{7}}}, nil))
	writeFile(t, filepath.Join(dir, "b.safetensors"), buildSafetensors(t, []stTensor{{"y", "U8", []uint64{1}, []byte{9}}, {"z", "I8", []uint64{1}, []byte{1}}}, nil))
	writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"metadata": map[string]any{"total_size": 3}, "weight_map": map[string]string{"x": "a.safetensors", "y": "b.safetensors", "z": "b.safetensors"}})
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Names(), ","); got != "x,y,z" {
		t.Errorf("names %s", got)
	}
	if v, _, err := c.Floats("y"); err != nil || v[0] != 9 {
		t.Errorf("y = %v, %v", v, err)
	}
	if _, _, err := c.Floats("nope"); err == nil || !strings.Contains(err.Error(), `tensor "nope" is missing`) {
		t.Errorf("missing tensor: %v", err)
	}
	c.Close()

	for _, bad := range []struct {
		weightMap map[string]string
		want      string
	}{
		{map[string]string{"x": "a.safetensors", "y": "c.safetensors"}, "names shard c.safetensors (for tensor \"y\" and 0 more), which is missing"},
		{map[string]string{"x": "b.safetensors"}, `says tensor "x" is in b.safetensors, which does not hold it`},
		{map[string]string{"x": "../a.safetensors"}, "not a file name in the checkpoint directory"},
		{map[string]string{}, "weight_map is missing or empty"},
	} {
		writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"weight_map": bad.weightMap})
		if _, err := OpenCheckpoint(dir); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("index %v: got %v, want %q", bad.weightMap, err, bad.want)
		}
	}
	if _, err := OpenCheckpoint(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds neither model.safetensors nor") {
		t.Errorf("empty directory: %v", err)
	}
}

// FuzzSafetensors feeds the parser arbitrary files: it must never panic,
// and whatever it accepts must be readable tensor by tensor.
func FuzzSafetensors(f *testing.F) {
	f.Add(buildSafetensors(f, validTensors(), map[string]string{"format": "pt"}))
	f.Add(buildSafetensors(f, validTensors()[:1], nil))
	f.Add(buildSafetensors(f, nil, nil))
	f.Add(header(`{"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}, "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}`, []byte{1, 2, 3}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseBytes(data)
		if err != nil {
			return
		}
		var end uint64
		for _, ti := range s.Tensors {
			if ti.Begin != end {
				t.Fatalf("accepted tensor %q at %d after data ending at %d", ti.Name, ti.Begin, end)
			}
			end = ti.End
			d, err := s.Data(ti)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(d)) != ti.Elements()*uint64(ti.DType.Size()) {
				t.Fatalf("tensor %q: %d bytes", ti.Name, len(d))
			}
			if ti.Elements() < 1<<16 {
				s.Floats(ti) // must not panic
			}
		}
	})
}
