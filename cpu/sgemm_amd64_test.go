//go:build !purego

package cpu

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestSgemmAsmShapes: the tile shapes and probe FLOPs in sgemm_amd64.go are
// the ones tools/asmgen unrolled, as its declarations' comments state.
func TestSgemmAsmShapes(t *testing.T) {
	src, err := os.ReadFile("kernels_stubs_amd64.go")
	if err != nil {
		t.Fatal(err)
	}
	tiles := map[string]sgemmKernels{"sgemmTileAVX512": sgemmAVX512, "sgemmTileAVX2": sgemmAVX2}
	for _, m := range regexp.MustCompile(`// (\w+) is sgemmTile for (\d+)×(\d+) tiles`).FindAllSubmatch(src, -1) {
		s, ok := tiles[string(m[1])]
		if !ok {
			t.Errorf("unknown sgemm tile %s", m[1])
			continue
		}
		delete(tiles, string(m[1]))
		if mr, nr := atoi(t, m[2]), atoi(t, m[3]); mr != s.mr || nr != s.nr {
			t.Errorf("%s: generated %d×%d, sgemm_amd64.go says %d×%d", m[1], mr, nr, s.mr, s.nr)
		}
	}
	if len(tiles) > 0 {
		t.Errorf("no generated tile for %v", tiles)
	}
	probes := map[string]int{"fmaLoopAVX512": sgemmAVX512.fmaFlops, "fmaLoopAVX2": sgemmAVX2.fmaFlops}
	for _, m := range regexp.MustCompile(`// (\w+) runs iters iterations of .* \((\d+) FLOP each iteration\)`).FindAllSubmatch(src, -1) {
		if want, ok := probes[string(m[1])]; ok {
			delete(probes, string(m[1]))
			if got := atoi(t, m[2]); got != want {
				t.Errorf("%s: generated %d FLOP per iteration, sgemm_amd64.go says %d", m[1], got, want)
			}
		}
	}
	if len(probes) > 0 {
		t.Errorf("no generated probe for %v", probes)
	}
}

func atoi(t *testing.T, b []byte) int {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
