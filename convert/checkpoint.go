package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Checkpoint file names, as transformers writes them.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Checkpoint is the weights of a Hugging Face checkpoint directory: one
// model.safetensors, or the shards a model.safetensors.index.json lists.
type Checkpoint struct {
	Dir    string
	shards []*Safetensors
	where  map[string]*Safetensors // tensor name → the shard holding it
}

// OpenCheckpoint opens the safetensors weights in dir, checking every
// shard and, for a sharded checkpoint, that each tensor the index names is
// in the shard it names.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, where: map[string]*Safetensors{}}
	index := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(index)
	switch {
	case err == nil:
		if err := c.openShards(index, raw); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	s, err := OpenSafetensors(filepath.Join(dir, SingleFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s holds neither %s nor %s: is it a Hugging Face checkpoint directory (safetensors weights)?", dir, SingleFile, IndexFile)
	}
	if err != nil {
		return nil, err
	}
	c.shards = []*Safetensors{s}
	for _, t := range s.Tensors {
		c.where[t.Name] = s
	}
	return c, nil
}

// openShards reads the index {"metadata": {...}, "weight_map": {tensor:
// shard}} and opens the shards in name order.
func (c *Checkpoint) openShards(index string, raw []byte) error {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("%s: %v", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return fmt.Errorf("%s: weight_map is missing or empty", index)
	}
	byShard := map[string][]string{}
	for tensor, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return fmt.Errorf("%s: tensor %q is in shard %q, which is not a file name in the checkpoint directory", index, tensor, shard)
		}
		byShard[shard] = append(byShard[shard], tensor)
	}
	names := make([]string, 0, len(byShard))
	for shard := range byShard {
		names = append(names, shard)
	}
	slices.Sort(names)
	for _, shard := range names {
		tensors := byShard[shard]
		slices.Sort(tensors)
		s, err := OpenSafetensors(filepath.Join(c.Dir, shard))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s names shard %s (for tensor %q and %d more), which is missing from %s (incomplete download?)", IndexFile, shard, tensors[0], len(tensors)-1, c.Dir)
		}
		if err != nil {
			return err
		}
		c.shards = append(c.shards, s)
		for _, t := range tensors {
			if _, ok := s.Tensor(t); !ok {
				return fmt.Errorf("%s says tensor %q is in %s, which does not hold it (a shard from another download?)", IndexFile, t, shard)
			}
			c.where[t] = s
		}
	}
	return nil
}

// Close closes every shard.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, s := range c.shards {
		errs = append(errs, s.Close())
	}
	c.shards = nil
	return errors.Join(errs...)
}

// Names returns every tensor name, sorted.
func (c *Checkpoint) Names() []string {
	names := make([]string, 0, len(c.where))
	for n := range c.where {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Tensor returns the tensor called name and the file holding it.
func (c *Checkpoint) Tensor(name string) (TensorInfo, *Safetensors, bool) {
	s, ok := c.where[name]
	if !ok {
		return TensorInfo{}, nil, false
	}
	t, _ := s.Tensor(name)
	return t, s, true
}

// Floats returns the values of tensor name as float32 (see
// Safetensors.Floats).
func (c *Checkpoint) Floats(name string) ([]float32, TensorInfo, error) {
	t, s, ok := c.Tensor(name)
	if !ok {
		return nil, t, fmt.Errorf("%s: tensor %q is missing", c.Dir, name)
	}
	v, err := s.Floats(t)
	return v, t, err
}
