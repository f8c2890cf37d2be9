package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// argmaxRef is the argmax kernel's rule: the lowest index of the largest
// value, NaNs ignored, 0xFFFFFFFF when every value is NaN.
func argmaxRef(x []float32) uint32 {
	best := uint32(math.MaxUint32)
	for i, v := range x {
		if v == v && (best == math.MaxUint32 || v > x[best]) {
			best = uint32(i)
		}
	}
	return best
}

// TestArgmax runs the two-stage argmax (as GPUs run it) on vocabularies of
// one, a few and many first-stage workgroups (more than the 1024 it allows,
// so chunks grow), and the one-workgroup argmax of CPU devices, with ties
// inside and across workgroups, NaNs, infinities and nothing but NaNs,
// read from an offset as the batched head leaves them.
func TestArgmax(t *testing.T) {
	for _, split := range []bool{true, false} {
		t.Run(map[bool]string{true: "split", false: "one workgroup"}[split], func(t *testing.T) {
			testArgmax(t, split)
		})
	}
}

func testArgmax(t *testing.T, split bool) {
	a := newOps(t, true)
	a.b.argmaxSplit = split
	cpuDevice := a.b.onCPU()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{1, 2, 255, 256, 1023, 1024, 1025, 5000, 128256, argmaxChunk*argmaxMaxGroups + 777} {
		chunk, groups := argmaxPlan(n, cpuDevice && !split)
		cases := map[string]func(x []float32){
			"spread": func(x []float32) {
				for i := range x {
					x[i] = float32(math.Sin(float64(i) * 1.3))
				}
			},
			"tie across workgroups": func(x []float32) {
				for i := range x {
					x[i] = -1
				}
				x[n-1] = 7
				x[n/2] = 7 // the lower index wins
				if n > chunk {
					x[chunk] = 7
				}
			},
			"tie inside an invocation's range": func(x []float32) {
				for i := range x {
					x[i] = float32(i % 3) // 2 first at index 2
				}
			},
			"NaNs and infinities": func(x []float32) {
				for i := range x {
					x[i] = nan
					if i%5 == 1 {
						x[i] = -inf
					}
				}
				x[n-1] = inf
			},
			"all NaN": func(x []float32) {
				for i := range x {
					x[i] = nan
				}
			},
			"all −∞": func(x []float32) {
				for i := range x {
					x[i] = -inf
				}
			},
		}
		for name, fill := range cases {
			t.Run(fmt.Sprintf("%d/%s", n, name), func(t *testing.T) {
				const off = 3 // floats before the row
				buf := make([]float32, off+n)
				for i := range off {
					buf[i] = 1e30 // outside the row: never chosen
				}
				fill(buf[off:])
				want := argmaxRef(buf[off:])
				in := a.buf(f32Bytes(buf))
				a.b.argPart, a.b.result = a.buf(make([]byte, 8*argmaxMaxGroups)), a.buf(nil)
				a.run(func(rc *recorder) { rc.argmax(in, n, off) })
				got := binary.LittleEndian.Uint32(a.read(a.b.result, 4))
				if got != want {
					t.Errorf("argmax = %d, want %d (%d workgroups of %d)", int32(got), int32(want), groups, chunk)
				}
			})
		}
	}
}
