package gpu

import (
	"errors"
	"fmt"

	"github.com/bitvk/bitvk/gpu/vk"
	"github.com/bitvk/bitvk/nn"
)

// Several sequences (nn.MultiBackend). Each layer's K/V cache holds
// Options.Slots sequences of Context positions, slot s in rows
// [s·ctx, (s+1)·ctx). Every token of a pass carries its own position and
// the first cache row of its slot in the input buffer (see putInput), so
// the batched pipeline of Forward evaluates a mixed batch unchanged but for
// two things:
//   - attention: a workgroup of the prefill pipeline serves several tokens
//     with one read of the K/V rows, which holds only for tokens of one
//     slot; a pass with tokens of several slots is recorded with one token
//     per workgroup (recKey.mixed).
//   - the head computes the logits of the pass's last rows tokens. Every
//     token's key and value are written (rope_kv) before any token attends,
//     so the order of tokens within a pass is free: those whose logits are
//     wanted go last.
// Every kernel computes a token's values independently of the other tokens
// of its pass and of its place among them, so a token gets bit for bit the
// logits it gets alone.

var _ nn.MultiBackend = (*Backend)(nil)

// ForwardMulti evaluates tokens of several slots (see nn.MultiBackend), in
// passes of at most Batch() tokens in batch order.
func (b *Backend) ForwardMulti(batch []nn.SeqToken, logits []float32) error {
	if b.dev == nil {
		return errors.New("gpu: backend is closed")
	}
	v := b.c.Vocab
	want := 0
	for i, t := range batch {
		switch {
		case t.Seq < 0 || t.Seq >= b.slots:
			return fmt.Errorf("gpu: token %d of the batch is for slot %d; the cache holds %d (Options.Slots)", i, t.Seq, b.slots)
		case t.Pos < 0 || t.Pos >= b.ctx:
			return fmt.Errorf("gpu: token %d of the batch is at position %d, outside the context of %d", i, t.Pos, b.ctx)
		case t.Token < 0 || int(t.Token) >= v:
			return fmt.Errorf("gpu: token %d of the batch, %d, is outside the vocabulary of %d", i, t.Token, v)
		}
		if t.Logits {
			want++
		}
	}
	if len(logits) != want*v {
		return fmt.Errorf("gpu: logits buffer of %d for %d tokens wanting logits and a vocabulary of %d", len(logits), want, v)
	}
	row := 0 // the next row of logits
	for start := 0; start < len(batch); start += b.batch {
		chunk := batch[start:min(start+b.batch, len(batch))]
		T := len(chunk)
		i, n := 0, 0 // tokens placed; of them, wanting logits
		mixed := false
		for pass := range 2 { // those without logits first, then those with
			for _, t := range chunk {
				if t.Logits != (pass == 1) {
					continue
				}
				b.putInput(i, t.Token, t.Pos, t.Seq)
				i++
				if t.Logits {
					n++
				}
				mixed = mixed || t.Seq != chunk[0].Seq
			}
		}
		key := recKey{T: T, mode: outRows, rows: n, mixed: mixed}
		switch n {
		case 0:
			key.mode, key.rows = outNone, 0
		case 1:
			key.mode, key.rows = outLast, 0
		case T:
			key.mode, key.rows = outAll, 0
		}
		rec, err := b.recording(key)
		if err != nil {
			return err
		}
		if err := b.dev.Submit(rec); err != nil {
			return err
		}
		copy(logits[row*v:(row+n)*v], f32View(b.outHost.Mapped(), n*v))
		row += n
	}
	return nil
}

// CopySeq copies the keys and values of positions 0…n−1 of slot src into
// slot dst, every layer (see nn.MultiBackend).
func (b *Backend) CopySeq(dst, src, n int) error {
	switch {
	case b.dev == nil:
		return errors.New("gpu: backend is closed")
	case dst < 0 || dst >= b.slots || src < 0 || src >= b.slots:
		return fmt.Errorf("gpu: copying slot %d to slot %d: the cache holds slots 0…%d", src, dst, b.slots-1)
	case n < 0 || n > b.ctx:
		return fmt.Errorf("gpu: copying %d positions of slot %d: the context is %d", n, src, b.ctx)
	case n == 0 || dst == src:
		return nil
	}
	row := int64(b.c.KVDim()) * 2 // bytes per position: float16
	size := int64(n) * row
	r := b.dev.Record(fmt.Sprintf("copy of %d positions from slot %d to slot %d", n, src, dst))
	defer r.Release()
	for _, l := range b.layers {
		for _, c := range []*vk.Buffer{l.kc, l.vc} {
			r.Copy(vk.Range{Buf: c, Off: int64(src*b.ctx) * row, Size: size}, vk.Range{Buf: c, Off: int64(dst*b.ctx) * row, Size: size})
		}
	}
	if err := r.Finish(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	return b.dev.Submit(r)
}
