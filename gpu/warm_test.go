package gpu

import (
	"testing"

	"github.com/bitvk/bitvk/nn/nntest"
)

// Warming the cache (Tuning.Warm = 2) changes no bit of a decode step's
// logits, fused (7, 5 dispatches a layer) or not, its weights whole or in
// shards of 4 KiB (several warm dispatches in one barrier interval, each
// with its own sink range); its dispatches read every ternary weight of
// the model once a step, in no barrier of their own; a pass of a few
// tokens warms too, a prompt's (more than fewTokens) does not.
func TestWarmDecode(t *testing.T) {
	needVulkan(t)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"fused", Options{Fusion: FuseOn}},
		{"unfused", Options{Fusion: FuseOff}},
		{"layer5", Options{Fusion: FuseOn, Tune: Tuning{Layer: 5, NormPasses: 1}}},
		{"sharded", Options{Fusion: FuseOn, MaxShardBytes: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := nntest.NewModel(t, "tiny", nntest.StoreI2S, 11)
			V := m.Config.Vocab
			toks := []int32{3, 141, 59, 26, 5, 35, 8, 97}
			var logits [2][]float32
			var profs [2]*Profile
			for i, warm := range []int{0, 2} {
				o := tc.o
				o.Context, o.Tune.Warm = 2*fewTokens, warm
				b := open(t, m.Config, m.Weights, o)
				if got := b.Tuning().Warm; got != max(warm, 1) {
					t.Fatalf("warm=%d: the backend runs warm=%d", warm, got)
				}
				logits[i] = make([]float32, (len(toks)+1)*V)
				for p, tok := range toks {
					if err := b.Forward([]int32{tok}, p, logits[i][p*V:(p+1)*V]); err != nil {
						t.Fatal(err)
					}
				}
				// A pass of a few tokens, as a verification pass is.
				if err := b.Forward(toks[:5], len(toks), logits[i][len(toks)*V:]); err != nil {
					t.Fatal(err)
				}
				p, err := b.ProfileForward(1, len(toks), 1)
				if err != nil {
					t.Skipf("no timestamps on this device: %v", err)
				}
				profs[i] = p
				if warm == 2 {
					var want int64
					shards := 0
					for _, l := range b.layers {
						for _, tm := range []*ternaryMatrix{l.qkv, l.o, l.gateUp, l.down} {
							want += int64(tm.rows * tm.k / 4)
							shards += len(tm.shards)
						}
					}
					var got int64
					calls := 0
					for _, c := range p.Commands {
						if c.Label == "l2 warm" {
							got += c.Bytes
							calls++
						}
					}
					if got != want || calls != shards {
						t.Errorf("warm dispatches read %d bytes in %d dispatches, want every ternary weight once (%d bytes, %d shards)", got, calls, want, shards)
					}
					for _, n := range []int{4, fewTokens + 1} {
						pp, err := b.ProfileForward(n, 0, 1)
						if err != nil {
							t.Fatal(err)
						}
						calls = 0
						for _, c := range pp.Commands {
							if c.Label == "l2 warm" {
								calls++
							}
						}
						if (calls > 0) != (n <= fewTokens) {
							t.Errorf("a pass of %d tokens: %d warm dispatches", n, calls)
						}
					}
				}
			}
			for j := range logits[0] {
				if logits[0][j] != logits[1][j] {
					t.Fatalf("logit %d: %v warm, %v not", j, logits[1][j], logits[0][j])
				}
			}
			c0, c1 := profs[0].Counts, profs[1].Counts
			if c1.Barriers != c0.Barriers || c1.Dispatches <= c0.Dispatches {
				t.Errorf("counts %+v warm, %+v not: want more dispatches, the same barriers", c1, c0)
			}
		})
	}
}
