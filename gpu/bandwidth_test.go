package gpu

import (
	"encoding/binary"
	"math"
	"testing"
)

// peakChain is one invocation's result of int8_peak: the sum of its chains
// x ← dot4(x, b) + x after iters steps.
func peakChain(gid uint32, p peakPush) uint32 {
	var s uint32
	for c := range uint32(peakChains) {
		x := p.Seed ^ gid*0x9E3779B9 ^ c*0x01010101
		for range p.Iters {
			var d int32
			for j := range 4 {
				d += int32(int8(x>>(8*j))) * int32(int8(p.B>>(8*j)))
			}
			x = uint32(d + int32(x))
		}
		s += x
	}
	return s
}

// TestInt8Peak: the probe's chains compute what the shader says (the sink
// is written by the one invocation whose sum is set as never), in both
// kernel sets, and MeasureInt8Peak reports a finite positive rate.
func TestInt8Peak(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "device", true: "plain"}[plain], func(t *testing.T) {
			a := newOps(t, plain)
			sink := a.buf(make([]byte, 16))
			defer sink.Release()
			wg := a.b.workgroup(peakWG)
			for _, tc := range []struct{ gid, iters, b uint32 }{{0, 1, 0x7F01FF81}, {5, 37, 0x80807F7F}, {wg + 3, 200, 0x01FF02FE}} {
				p := peakPush{Iters: tc.iters, B: tc.b, Seed: 0x2545F491}
				p.Never = peakChain(tc.gid, p)
				for g := range 2 * wg {
					if g != tc.gid && peakChain(g, p) == p.Never {
						t.Fatalf("invocation %d matches invocation %d's sum: pick another case", g, tc.gid)
					}
				}
				if _, err := a.b.int8PeakRun(sink, 2, p, 1); err != nil {
					t.Fatal(err)
				}
				got := binary.LittleEndian.Uint32(a.read(sink, 4))
				if got != p.Never {
					t.Errorf("invocation %d, %d steps, b %#x: sink %#x, want its sum %#x", tc.gid, tc.iters, tc.b, got, p.Never)
				}
			}
			peak, err := a.b.MeasureInt8Peak(1)
			if err != nil || !(peak > 0) || math.IsInf(peak, 0) {
				t.Fatalf("MeasureInt8Peak: %g MAC/s, %v", peak, err)
			}
			t.Logf("%s: %.2f GMAC/s", a.b.Kernels(), peak/1e9)
		})
	}
}
