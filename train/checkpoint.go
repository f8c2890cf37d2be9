package train

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
)

// A checkpoint file holds everything a run needs to go on bit-exactly:
//
//	"BITVKCK1"                         8 bytes
//	u32 header length, JSON header     (CheckpointHeader)
//	params, AdamW m, AdamW v           3 × layout size × f32, little-endian
//	u32 CRC-32 (IEEE) of every byte before it
//
// The batches of a step are drawn from (seed, step), so the step number is
// the data loader's whole state.
const checkpointMagic = "BITVKCK1"

// CheckpointHeader describes a checkpoint.
type CheckpointHeader struct {
	Shape    Shape  `json:"shape"`
	Hyper    Hyper  `json:"hyper"`
	Float    bool   `json:"float"`
	Seed     uint64 `json:"seed"`
	Batch    int    `json:"batch"`
	Step     int    `json:"step"` // steps done
	Tokens   int64  `json:"tokens"`
	DataHash string `json:"data_hash"`  // Data.Hash of the training text
	VocabSHA string `json:"vocab_hash"` // sha256 of the vocabulary file
	Values   int    `json:"values"`     // layout size
}

// CheckpointFile is the file a checkpoint directory holds.
func CheckpointFile(dir string) string { return filepath.Join(dir, "checkpoint.bin") }

// SaveCheckpoint writes the model and optimizer state to dir atomically: a
// temporary file in dir, synced, then renamed over the last checkpoint, so
// an interrupted save leaves the previous one whole.
func SaveCheckpoint(dir string, h CheckpointHeader, m *Model, o *AdamW) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	h.Values = len(m.Params)
	tmp, err := os.CreateTemp(dir, ".checkpoint-*.tmp")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	hdr, err := json.Marshal(h)
	if err != nil {
		tmp.Close()
		return err
	}
	bw.WriteString(checkpointMagic)
	binary.Write(bw, binary.LittleEndian, uint32(len(hdr)))
	bw.Write(hdr)
	for _, buf := range [][]float32{m.Params, o.M, o.V} {
		writeFloats(bw, buf)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint: writing %s: %w", tmp.Name(), err)
	}
	if err := binary.Write(tmp, binary.LittleEndian, crc.Sum32()); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), CheckpointFile(dir)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func writeFloats(w io.Writer, v []float32) {
	var b [4 << 10]byte
	for len(v) > 0 {
		n := min(len(v), len(b)/4)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v[i]))
		}
		w.Write(b[:4*n])
		v = v[n:]
	}
}

// ReadCheckpointHeader reads and checks a checkpoint file whole (magic,
// sizes, CRC) and returns its header and the file's bytes.
func readCheckpoint(path string) (CheckpointHeader, []byte, error) {
	var h CheckpointHeader
	data, err := os.ReadFile(path)
	if err != nil {
		return h, nil, fmt.Errorf("checkpoint: %w", err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("checkpoint %s: %s (corrupt or not a bitvk checkpoint; delete it to start over)", path, fmt.Sprintf(format, a...))
	}
	if len(data) < len(checkpointMagic)+8 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return h, nil, bad("no %q magic", checkpointMagic)
	}
	body := data[:len(data)-4]
	if got, want := crc32.ChecksumIEEE(body), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return h, nil, bad("CRC-32 is %08x, the file says %08x", got, want)
	}
	p := len(checkpointMagic)
	n := int(binary.LittleEndian.Uint32(data[p:]))
	p += 4
	if n > len(body)-p {
		return h, nil, bad("header of %d bytes runs past the end", n)
	}
	dec := json.NewDecoder(bytes.NewReader(data[p : p+n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, bad("header: %v", err)
	}
	p += n
	if h.Values <= 0 || int64(len(body)-p) != 3*4*int64(h.Values) {
		return h, nil, bad("%d bytes of values, want 3×4×%d", len(body)-p, h.Values)
	}
	return h, data[p:len(body)], nil
}

// ReadCheckpointHeader returns a checkpoint's header after checking the
// whole file.
func ReadCheckpointHeader(dir string) (CheckpointHeader, error) {
	h, _, err := readCheckpoint(CheckpointFile(dir))
	return h, err
}

// LoadCheckpoint fills m and o from the checkpoint in dir; the layout must
// match the one the checkpoint was written with.
func LoadCheckpoint(dir string, m *Model, o *AdamW) (CheckpointHeader, error) {
	path := CheckpointFile(dir)
	h, vals, err := readCheckpoint(path)
	if err != nil {
		return h, err
	}
	if h.Shape != m.Layout.Shape || h.Values != len(m.Params) {
		return h, fmt.Errorf("checkpoint %s is of shape %+v, not %+v", path, h.Shape, m.Layout.Shape)
	}
	n := h.Values
	for i, buf := range [][]float32{m.Params, o.M, o.V} {
		src := vals[i*4*n : (i+1)*4*n]
		for j := range buf {
			buf[j] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*j:]))
		}
	}
	return h, nil
}

// ErrNoCheckpoint says --resume found nothing to resume.
var ErrNoCheckpoint = errors.New("no checkpoint")
