package nntest

import (
	"math"
	"testing"

	"github.com/bitvk/bitvk/nn"
)

// MultiFactory makes the multi-sequence backend under test for a model,
// with a K/V cache of slots sequences of ctx positions each.
type MultiFactory func(c *nn.Config, w *nn.Weights, ctx, slots int) (nn.MultiBackend, error)

// MultiSeq checks a backend's multi-sequence forward pass: three sequences
// evaluated together, in mixed batches (prompt chunks of one beside
// single decode tokens of the others, slots in no particular order, a
// prefix copied between slots), each get the logits they get alone in
// slot 0 through Forward. exact backends must give them bit for bit; the
// others within the suite's tolerance. Tokens outside the slots, the
// context or the vocabulary are errors, not panics.
func MultiSeq(t *testing.T, newBackend MultiFactory, exact bool) {
	const ctx, slots = 32, 4
	m := NewModel(t, "tiny", StoreI2S, 13)
	v := m.Config.Vocab
	b, err := newBackend(m.Config, m.Weights, ctx, slots)
	if err != nil {
		t.Fatalf("backend: %v", err)
	}
	defer b.Close()
	if b.Slots() != slots || b.Context() != ctx {
		t.Fatalf("backend has %d slots of %d positions, want %d of %d", b.Slots(), b.Context(), slots, ctx)
	}

	// Three sequences; the third begins with the first's first 6 tokens,
	// which it takes from the first's slot by CopySeq.
	seqs := [][]int32{sequence(14, v), sequence(14, v)[3:], nil}
	for i := range seqs[1] {
		seqs[1][i] = (seqs[1][i]*5 + 3) % int32(v)
	}
	const shared = 6
	seqs[2] = append(append([]int32(nil), seqs[0][:shared]...), 9, 400%int32(v), 33, 2, 77, 5)
	slotOf := []int{2, 0, 3} // sequence → slot

	// Alone: each sequence in slot 0 by Forward, all logits at once.
	alone := make([][]float32, len(seqs))
	for i, s := range seqs {
		alone[i] = make([]float32, len(s)*v)
		if err := b.Forward(s, 0, alone[i]); err != nil {
			t.Fatalf("Forward of sequence %d alone: %v", i, err)
		}
	}

	// Together: a schedule of passes, each taking the next n tokens of
	// each sequence (0: none in that pass); every token wants its logits
	// but the prompt chunks' non-final ones, to mix both kinds.
	schedule := [][3]int{
		{5, 0, 0},
		{1, 8, 0}, // more tokens than some backends take in one pass
		{1, 1, 0}, // after this pass, sequence 0 holds 7 ≥ shared tokens: copy
		{2, 1, 2},
		{1, 1, 1},
		{4, 0, 1},
		{0, 0, 1},
		{0, 0, 1},
	}
	done := make([]int, len(seqs)) // tokens evaluated per sequence
	done[2] = shared               // after the copy below
	got := make([][]float32, len(seqs))
	for i, s := range seqs {
		got[i] = make([]float32, len(s)*v)
	}
	for step, counts := range schedule {
		if step == 3 {
			if err := b.CopySeq(slotOf[2], slotOf[0], shared); err != nil {
				t.Fatalf("CopySeq: %v", err)
			}
		}
		var batch []nn.SeqToken
		var rows [][2]int // (sequence, position) of each logits row
		// Interleave the sequences token by token, keeping each one's
		// own tokens in increasing position.
		for k := 0; ; k++ {
			added := false
			for i := len(seqs) - 1; i >= 0; i-- {
				if k >= counts[i] {
					continue
				}
				p := done[i] + k
				want := k == counts[i]-1 || p%2 == 1
				batch = append(batch, nn.SeqToken{Token: seqs[i][p], Seq: slotOf[i], Pos: p, Logits: want})
				if want {
					rows = append(rows, [2]int{i, p})
				}
				added = true
			}
			if !added {
				break
			}
		}
		logits := make([]float32, len(rows)*v)
		if err := b.ForwardMulti(batch, logits); err != nil {
			t.Fatalf("pass %d: ForwardMulti: %v", step, err)
		}
		for r, sp := range rows {
			copy(got[sp[0]][sp[1]*v:(sp[1]+1)*v], logits[r*v:(r+1)*v])
		}
		for i := range seqs {
			done[i] += counts[i]
		}
	}
	for i, s := range seqs {
		if done[i] != len(s) {
			t.Fatalf("the schedule evaluates %d of sequence %d's %d tokens", done[i], i, len(s))
		}
	}
	// The positions whose logits some pass returned: the odd ones and the
	// last of each chunk; compare those.
	checked := 0
	for i, s := range seqs {
		for p := range s {
			g, w := got[i][p*v:(p+1)*v], alone[i][p*v:(p+1)*v]
			if allZero(g) {
				continue // not asked for
			}
			checked++
			if exact {
				if d := firstDiff(g, w); d >= 0 {
					t.Errorf("sequence %d position %d: logit %d is %v in the mixed batch, %v alone", i, p, d, g[d], w[d])
				}
				continue
			}
			if r := Correlation(w, g); !(r >= MinCorrelation) {
				t.Errorf("sequence %d position %d: correlation %.6f with the logits alone", i, p, r)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d positions compared", checked)
	}

	// Bad batches are errors.
	bad := []struct {
		what  string
		batch []nn.SeqToken
		n     int
	}{
		{"slot out of range", []nn.SeqToken{{Token: 1, Seq: slots, Pos: 0, Logits: true}}, 1},
		{"negative slot", []nn.SeqToken{{Token: 1, Seq: -1, Pos: 0, Logits: true}}, 1},
		{"position past the context", []nn.SeqToken{{Token: 1, Seq: 0, Pos: ctx, Logits: true}}, 1},
		{"token outside the vocabulary", []nn.SeqToken{{Token: int32(v), Seq: 0, Pos: 0, Logits: true}}, 1},
		{"logits buffer of the wrong size", []nn.SeqToken{{Token: 1, Seq: 0, Pos: 0, Logits: true}}, 2},
	}
	for _, tc := range bad {
		if err := b.ForwardMulti(tc.batch, make([]float32, tc.n*v)); err == nil {
			t.Errorf("%s: no error", tc.what)
		}
	}
	for _, c := range [][3]int{{slots, 0, 1}, {0, -1, 1}, {0, 1, ctx + 1}} {
		if err := b.CopySeq(c[0], c[1], c[2]); err == nil {
			t.Errorf("CopySeq(%d, %d, %d): no error", c[0], c[1], c[2])
		}
	}
}

func allZero(x []float32) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

// firstDiff is the first index where a and b differ bit for bit, or −1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
