package cpu

import (
	"math"
	"testing"

	"github.com/bitvk/bitvk/nn/nntest"
)

// ProfileForward charges a pass's whole wall time to its stages, one
// matrix-product call per projection and layer, one attention per layer,
// one head, with the matrices' and the cache's bytes; it leaves the
// backend as fast as before (no profiler left on) and rejects passes it
// cannot run.
func TestProfileForward(t *testing.T) {
	m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 5)
	b, err := New(m.Config, m.Weights, Options{Threads: 2, Context: 16, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	L := m.Config.Layers
	var matBytes, matMACs int64
	for _, l := range b.layers {
		for _, mt := range []*ternaryMatrix{l.qkv, l.o, l.gateUp, l.down} {
			matBytes += int64(len(mt.data) + 4*len(mt.rowScale) + 4*len(mt.groupScale))
			matMACs += int64(mt.rows * mt.n)
		}
	}
	profiles := []struct {
		name string
		f    func(n, pos, runs int) (*Profile, error)
	}{{"ProfileForward", b.ProfileForward}, {"ProfileVerify", b.ProfileVerify}}
	for _, pf := range profiles {
		for _, tc := range []struct{ n, pos int }{{1, 9}, {8, 0}} {
			p, err := pf.f(tc.n, tc.pos, 3)
			if err != nil {
				t.Fatal(err)
			}
			if p.Tokens != tc.n || p.Pos != tc.pos || p.Threads != 2 || p.WallNanoseconds <= 0 || p.WaitNanoseconds < 0 || p.WaitNanoseconds > p.WallNanoseconds {
				t.Errorf("n=%d: implausible profile %+v", tc.n, *p)
			}
			var sum, waits float64
			calls := map[string]int{}
			bytes, macs := map[string]int64{}, map[string]int64{}
			for _, st := range p.Stages {
				sum += st.Nanoseconds
				waits += st.WaitNanoseconds
				calls[st.Label], bytes[st.Label], macs[st.Label] = st.Calls, st.Bytes, st.MACs
				if st.WaitNanoseconds < 0 || st.WaitNanoseconds > st.Nanoseconds {
					t.Errorf("n=%d: %s waited %g ns of %g", tc.n, st.Label, st.WaitNanoseconds, st.Nanoseconds)
				}
			}
			if math.Abs(sum-p.WallNanoseconds) > 1e-6*p.WallNanoseconds {
				t.Errorf("n=%d: stages add to %g ns of %g", tc.n, sum, p.WallNanoseconds)
			}
			if math.Abs(waits-p.WaitNanoseconds) > 1e-6*p.WallNanoseconds {
				t.Errorf("n=%d: the stages' waits add to %g ns of %g", tc.n, waits, p.WaitNanoseconds)
			}
			mm, att, hd := stageNames[stageMatMul].label, stageNames[stageAttention].label, stageNames[stageHead].label
			if calls[mm] != 4*L || bytes[mm] != matBytes || macs[mm] != int64(tc.n)*matMACs {
				t.Errorf("n=%d: matrix products: %d calls, %d bytes, %d multiply-adds; want %d, %d, %d", tc.n, calls[mm], bytes[mm], macs[mm], 4*L, matBytes, int64(tc.n)*matMACs)
			}
			for label, n := range macs {
				if label != mm && n != 0 {
					t.Errorf("n=%d: %s: %d multiply-adds, want none", tc.n, label, n)
				}
			}
			kv := int64(m.Config.KVDim())
			var cache int64
			for i := 0; i < tc.n; i++ {
				cache += 4 * kv * int64(tc.pos+i+1)
			}
			if calls[att] != L || bytes[att] != int64(L)*cache {
				t.Errorf("n=%d: attention: %d calls, %d bytes; want %d, %d", tc.n, calls[att], bytes[att], L, int64(L)*cache)
			}
			if calls[hd] != 1 || bytes[hd] != b.head.bytes() {
				t.Errorf("%s n=%d: head: %d calls, %d bytes", pf.name, tc.n, calls[hd], bytes[hd])
			}
		}
		if b.prof != nil || b.pool.waited != nil {
			t.Error("the profiler stayed on")
		}
		for _, tc := range []struct{ n, pos int }{{0, 0}, {9, 0}, {1, 16}, {2, 15}, {1, -1}} {
			if _, err := pf.f(tc.n, tc.pos, 1); err == nil {
				t.Errorf("%s(%d, %d) accepted", pf.name, tc.n, tc.pos)
			}
		}
	}
}
