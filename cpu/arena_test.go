package cpu

import (
	"testing"
	"unsafe"
)

// weightArena's pieces are 64-byte aligned, of the length asked, disjoint
// (writing one leaves the others as they were); pieces of at least
// arenaMin lie end to end in chunks that start on a huge-page boundary, a
// piece larger than a chunk gets one of its own, and a nil arena still
// allocates.
func TestWeightArena(t *testing.T) {
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	a := new(weightArena)
	sizes := []int{1, 63, 64, 65, 4096, 3 << 20, arenaChunk/2 + 7, arenaChunk + 1, 100, 0, 5, arenaMin}
	var pieces [][]byte
	for _, n := range sizes {
		p := a.bytes(n)
		if len(p) != n || cap(p) != n {
			t.Fatalf("bytes(%d): len %d cap %d", n, len(p), cap(p))
		}
		if n > 0 && addr(p)%64 != 0 {
			t.Fatalf("bytes(%d) at %#x: not 64-byte aligned", n, addr(p))
		}
		pieces = append(pieces, p)
	}
	if first := addr(pieces[5]); first%hugePage != 0 {
		t.Errorf("the first chunk starts at %#x, not on a %d-byte boundary", first, hugePage)
	}
	if second := addr(pieces[6]); second != addr(pieces[5])+uintptr(3<<20) {
		t.Errorf("the second large piece is at %#x, not right after the first (%#x, 3 MiB)", second, addr(pieces[5]))
	}
	if big := addr(pieces[7]); big%hugePage != 0 {
		t.Errorf("a piece larger than a chunk starts at %#x, not on its own chunk's boundary", big)
	}
	for i, p := range pieces {
		for j := range p {
			p[j] = byte(i + 1)
		}
	}
	for i, p := range pieces {
		for j, v := range p {
			if v != byte(i+1) {
				t.Fatalf("piece %d (%d bytes) byte %d is %d: another piece overlaps it", i, len(p), j, v)
			}
		}
	}
	var none *weightArena
	if p := none.bytes(100); len(p) != 100 || addr(p)%64 != 0 {
		t.Fatalf("nil arena: %d bytes at %#x", len(p), addr(p))
	}
	if h, q := a.f16(10), a.i8(10); len(h) != 10 || len(q) != 10 {
		t.Fatalf("f16(10), i8(10): lengths %d, %d", len(h), len(q))
	}
}
