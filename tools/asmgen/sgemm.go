package main

// sgemmTile: the micro-kernel of the trainer's float32 matrix products
// (cpu/sgemm.go). The driver there packs A into micro-panels of MR rows and
// B into micro-panels of NR columns, kc values of the inner dimension each,
// and calls the micro-kernel once per MR×NR tile of C:
//
//	c[r·ldc + j] += Σ_{p<kc} a[p·MR + r] · b[p·NR + j]   for r < MR, j < NR
//
// a: MR floats per p (the tile's rows at one p), b: NR floats per p (the
// tile's columns at one p), both contiguous; c row-major with ldc floats
// between rows. The whole tile lives in accumulators for the kc steps: per p
// the kernel loads NR/W vectors of b (W lanes per vector), broadcasts each
// of the MR values of a and multiplies it into the NR/W accumulators of its
// row (an outer product), so each loaded value feeds MR or NR/W FMAs. At the
// end the tile is added into c, row by row.
//
// Versions:
//
//	sgemmTileAVX512  12×32: 24 zmm accumulators, 2 zmm of b and one
//	                 vbroadcastss per row per p (2 loads + 12 broadcasts
//	                 for 24 FMAs); p loop unrolled 4 times.
//	sgemmTileAVX2    6×16: 12 ymm accumulators, 2 ymm of b, one broadcast
//	                 register (15 of the 16 ymm); 2 loads + 6 broadcasts
//	                 for 12 FMAs; p loop unrolled 4 times.
//	fmaLoopAVX512    FMAPeak's probe: 16 independent zmm FMA chains on
//	                 registers only, so nothing but the FMA units limits it.
//	fmaLoopAVX2      the same with 12 ymm chains.
//
// A chain needs latency × issue rate independent accumulators to keep the
// FMA units busy (4 cycles × 2 per cycle = 8 on Zen 4 and Zen 5); both tiles
// and both probes have more. Embedded-broadcast FMAs (vfmadd231ps.bcst,
// no vbroadcastss) ran the 12×32 tile at two thirds of this one's speed on
// Zen 5; a 6×64 zmm tile ran as fast as 12×32 (docs/KERNELS.md).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

const sgemmTileSig = "func(kc int, a, b, c []float32, ldc int)"

// Tile shapes, mirrored in cpu/sgemm_amd64.go (a test checks them).
const (
	sgemmAVX512MR, sgemmAVX512NR = 12, 32
	sgemmAVX2MR, sgemmAVX2NR     = 6, 16
	sgemmUnroll                  = 4 // p steps per loop iteration, a power of 2
)

// vecISA is what a micro-kernel needs from its register width.
type vecISA struct {
	width int                          // float32 lanes per vector
	alloc func() reg.VecVirtual        // a new vector register
	zero  func(n int) []reg.VecVirtual // n new vector registers, zeroed
}

var (
	isaAVX512 = vecISA{16, ZMM, zmms}
	isaAVX2   = vecISA{8, YMM, ymms}
)

func genSgemmTileAVX512() {
	genSgemmTile("sgemmTileAVX512", isaAVX512, sgemmAVX512MR, sgemmAVX512NR)
}

func genSgemmTileAVX2() {
	genSgemmTile("sgemmTileAVX2", isaAVX2, sgemmAVX2MR, sgemmAVX2NR)
}

// genSgemmTile emits the MR×NR micro-kernel name with vectors of isa.
func genSgemmTile(name string, isa vecISA, MR, NR int) {
	TEXT(name, NOSPLIT, sgemmTileSig)
	Pragma("noescape")
	Doc(fmt.Sprintf("%s is sgemmTile for %d×%d tiles: c[r·ldc + j] += Σ_{p<kc} a[p·%d + r]·b[p·%d + j].",
		name, MR, NR, MR, NR))
	V := NR / isa.width // vectors per row of the tile
	kc := load(Param("kc"))
	a := load(Param("a").Base())
	b := load(Param("b").Base())
	c := load(Param("c").Base())
	ldc := load(Param("ldc"))
	SHLQ(U8(2), ldc) // bytes
	rows := newStrided(c, ldc, MR)

	// The tile of c is read only at the end; ask for it now so that its
	// lines arrive while the FMAs run.
	for r := 0; r < MR; r++ {
		for d := 0; d < 4*NR; d += 64 {
			PREFETCHT0(rows.at(r, d))
		}
	}

	acc := isa.zero(MR * V) // acc[r·V + v]: row r, columns v·W … v·W+W-1
	// step emits one p: the outer product of a[d·MR : d·MR+MR] and
	// b[d·NR : d·NR+NR] (d counts p from the pointers' current place).
	step := func(d int) {
		bv := make([]reg.VecVirtual, V)
		for v := range bv {
			bv[v] = isa.alloc()
			VMOVUPS(Mem{Base: b, Disp: 4 * (d*NR + v*isa.width)}, bv[v])
		}
		for r := 0; r < MR; r++ {
			t := isa.alloc()
			VBROADCASTSS(Mem{Base: a, Disp: 4 * (d*MR + r)}, t)
			for v := 0; v < V; v++ {
				VFMADD231PS(bv[v], t, acc[r*V+v])
			}
		}
	}

	// kc/U unrolled iterations, then kc%U single steps.
	blocks := GP64()
	MOVQ(kc, blocks)
	SHRQ(U8(bitsLen(sgemmUnroll)), blocks)
	loop, tail, single, done := label("sgemm"), label("sgemmtail"), label("sgemmone"), label("sgemmdone")
	TESTQ(blocks, blocks)
	JZ(LabelRef(tail))
	Label(loop)
	for d := 0; d < sgemmUnroll; d++ {
		step(d)
	}
	ADDQ(U32(4*sgemmUnroll*MR), a)
	ADDQ(U32(4*sgemmUnroll*NR), b)
	DECQ(blocks)
	JNZ(LabelRef(loop))
	Label(tail)
	ANDQ(U8(sgemmUnroll-1), kc)
	JZ(LabelRef(done))
	Label(single)
	step(0)
	ADDQ(U32(4*MR), a)
	ADDQ(U32(4*NR), b)
	DECQ(kc)
	JNZ(LabelRef(single))
	Label(done)

	for r := 0; r < MR; r++ {
		for v := 0; v < V; v++ {
			m := rows.at(r, 4*v*isa.width)
			VADDPS(m, acc[r*V+v], acc[r*V+v])
			VMOVUPS(acc[r*V+v], m)
		}
	}
	VZEROUPPER()
	RET()
}

// FMA probe sizes: chains and the FLOPs of one loop iteration.
const (
	fmaAVX512Chains = 16
	fmaAVX2Chains   = 12
)

func genFMALoopAVX512() { genFMALoop("fmaLoopAVX512", isaAVX512, fmaAVX512Chains) }
func genFMALoopAVX2()   { genFMALoop("fmaLoopAVX2", isaAVX2, fmaAVX2Chains) }

// genFMALoop emits func(iters int): iters iterations of chains independent
// FMAs on registers (0·0 + acc: the values stay 0, never denormal).
func genFMALoop(name string, isa vecISA, chains int) {
	TEXT(name, NOSPLIT, "func(iters int)")
	Doc(fmt.Sprintf("%s runs iters iterations of %d independent %d-lane FMAs (%d FLOP each iteration), registers only.",
		name, chains, isa.width, 2*chains*isa.width))
	n := load(Param("iters"))
	src := isa.zero(2)
	acc := isa.zero(chains)
	loop, done := label("fma"), label("fmadone")
	TESTQ(n, n)
	JLE(LabelRef(done))
	Label(loop)
	for _, r := range acc {
		VFMADD231PS(src[0], src[1], r)
	}
	DECQ(n)
	JNZ(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}

// int8LoopChains is how many independent int8 multiply-add instructions
// an int8 probe iteration issues: more than a core's throughput ×
// latency, so that only throughput limits it.
const int8LoopChains = 12

// genInt8Loop emits the int8 multiply-accumulate peak probe of a kernel
// set, registers only: vpdpbusd zmm (64 byte products summed into int32
// per instruction) for avx512vnni, vpmaddubsw ymm (32 byte products summed
// in pairs) for avx2, the instruction each set's ternary kernels are
// bound by.
func genInt8Loop(name string, vnni bool) {
	TEXT(name, NOSPLIT, "func(iters int)")
	macs := 32
	if vnni {
		macs = 64
	}
	Doc(fmt.Sprintf("%s runs iters iterations of %d independent int8 multiply-add instructions (%d MACs each iteration), registers only.",
		name, int8LoopChains, int8LoopChains*macs))
	n := load(Param("iters"))
	var src, acc []reg.VecVirtual
	if vnni {
		src, acc = zmms(2), zmms(int8LoopChains)
	} else {
		src, acc = ymms(2), ymms(int8LoopChains)
	}
	loop, done := label("int8"), label("int8done")
	TESTQ(n, n)
	JLE(LabelRef(done))
	Label(loop)
	for _, r := range acc {
		if vnni {
			vpdpbusd(src[0], src[1], r)
		} else {
			VPMADDUBSW(src[0], src[1], r)
		}
	}
	DECQ(n)
	JNZ(LabelRef(loop))
	Label(done)
	VZEROUPPER()
	RET()
}
