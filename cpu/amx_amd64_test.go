//go:build !purego

package cpu

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestTernaryMatMulAMX: the amx set's product against the twin on the
// shapes its tiles split on: whole and partial blocks of 32 rows, of 32
// tokens and of 16-token tiles (an odd last tile pairs with a zero one;
// 16 tokens or fewer take amxTernaryFew), too few tokens for the tiles,
// the model's widths, and odd strides. TestTernaryMatMul covers small
// shapes (and the VNNI fallbacks) for every set.
func TestTernaryMatMulAMX(t *testing.T) {
	if !hasAMX {
		t.Skip("this CPU or OS does not run AMX-INT8 (needs Intel Sapphire Rapids or later, on Linux)")
	}
	type shape struct{ n, rows, tokens int }
	var shapes []shape
	for _, n := range []int{128, 256, 640} {
		for _, rows := range []int{16, 17, 31, 32, 48, 69} {
			for _, tokens := range []int{1, 2, 3, 9, 15, 16, 17, 31, 32, 33, 95, 96, 97, 113, 130} {
				shapes = append(shapes, shape{n, rows, tokens})
			}
		}
	}
	shapes = append(shapes, shape{2560, 64, 128}, shape{6912, 32, 40}, shape{2560, 37, 100}, shape{256, 96, 250})
	rng := newRand()
	for _, s := range shapes {
		expectTernaryMatMul(t, amxKernels.ternaryMatMul, rng, s.n, s.rows, s.tokens)
	}
}

// TestTernaryMatMulAMXExtremes: the largest sums the contract allows
// (n = 2²¹ codes 2 against x = −128 and 127) through whole tiles, of the
// few-token kernel and of the pairs of token tiles.
func TestTernaryMatMulAMXExtremes(t *testing.T) {
	if !hasAMX {
		t.Skip("this CPU or OS does not run AMX-INT8")
	}
	n := 1 << 21
	const rows = 32
	w := make([]byte, rows*n/4)
	for i := range w {
		w[i] = 0xAA
	}
	for _, c := range []struct {
		tokens int
		xv     int8
	}{{max(amxMinTokens, 9), -128}, {max(amxMinTokens, 9), 127}, {27, -128}, {27, 127}} {
		tokens, xv := c.tokens, c.xv
		x := make([]int8, n)
		for i := range x {
			x[i] = xv
		}
		out := make([]int32, rows*tokens)
		amxKernels.ternaryMatMul(w, n/4, rows, x, 0, n, tokens, out, rows)
		for i, got := range out {
			if want := int32(2 * int(xv) * n); got != want {
				t.Fatalf("%d tokens, x=%d, output %d: %d, want %d", tokens, xv, i, got, want)
			}
		}
	}
}

// TestTernaryMatMulAMXConcurrent: more goroutines than threads run tile
// products at once while collections stop the world and preemption
// signals arrive, so the OS switches threads that hold tile state in the
// middle of a call: every result must still equal the twin's.
func TestTernaryMatMulAMXConcurrent(t *testing.T) {
	if !hasAMX {
		t.Skip("this CPU or OS does not run AMX-INT8")
	}
	const rows, n, tokens, goroutines, rounds = 128, 2048, 64, 6, 4000
	rng := newRand()
	w := randomTernaryRows(rng, rows, n, n/4)
	x := randomI8(rng, tokens*n, -128, 127, 127)
	want := make([]int32, tokens*rows)
	ternaryMatMulGeneric(w, n/4, rows, x, n, n, tokens, want, rows)
	stop := make(chan struct{})
	collected := make(chan struct{})
	go func() { // garbage and collections throughout
		defer close(collected)
		for {
			select {
			case <-stop:
				return
			default:
				_ = make([]byte, 1<<20)
				runtime.GC()
			}
		}
	}()
	errs := make(chan string, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := tokens // odd goroutines: the few-token kernel
			if g%2 == 1 {
				k = 9
			}
			out := make([]int32, k*rows)
			for r := 0; r < rounds; r++ {
				clear(out)
				amxKernels.ternaryMatMul(w, n/4, rows, x, n, n, k, out, rows)
				if !slices.Equal(out, want[:k*rows]) {
					errs <- fmt.Sprintf("round %d, %d tokens: the tiles' sums differ from the twin's", r, k)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-collected
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
