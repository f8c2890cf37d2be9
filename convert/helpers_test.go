package convert

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/bitvk/bitvk/gguf"
)

// stTensor is one tensor for a test safetensors file.
type stTensor struct {
	name  string
	dtype DType
	shape []uint64
	data  []byte
}

// buildSafetensors lays tensors out in the given order, as the format
// requires: u64 header length, the JSON header padded with spaces to a
// multiple of 8, the data.
func buildSafetensors(t testing.TB, tensors []stTensor, meta map[string]string) []byte {
	t.Helper()
	header := map[string]any{}
	if meta != nil {
		header["__metadata__"] = meta
	}
	var off uint64
	for _, x := range tensors {
		shape := x.shape
		if shape == nil {
			shape = []uint64{}
		}
		header[x.name] = map[string]any{"dtype": x.dtype, "shape": shape, "data_offsets": []uint64{off, off + uint64(len(x.data))}}
		off += uint64(len(x.data))
	}
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(out, hj...)
	for _, x := range tensors {
		out = append(out, x.data...)
	}
	return out
}

func writeFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, js)
}

func f32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func bf16Bytes(v []float32) []byte {
	out := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(out[2*i:], gguf.F32ToBF16(x))
	}
	return out
}

func f16Bytes(v []float32) []byte { return gguf.EncodeF16(v) }

// packHF packs ternary codes of a rows×cols matrix as transformers'
// pack_weights describes: code w+1, row i·rows/4 + p into bits 2i+1:2i of
// packed byte (p, c). Written from that description, independently of
// UnpackHF.
func packHF(codes []int8, rows, cols int) []byte {
	block := rows / 4
	out := make([]byte, block*cols)
	for r := 0; r < rows; r++ {
		i, p := r/block, r%block
		for c := 0; c < cols; c++ {
			out[p*cols+c] |= byte(codes[r*cols+c]+1) << (2 * i)
		}
	}
	return out
}
