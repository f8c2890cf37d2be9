package cpu

import (
	"math"

	"github.com/bitvk/bitvk/nn"
)

// scratch holds every buffer a forward pass needs, allocated once for the
// largest batch (T positions): a pass allocates no buffers.
type scratch struct {
	x      []float32   // [T][embd] residual stream
	a      []float32   // [T][max(embd, ffn)] normalized input of a BitLinear
	q      []int8      // [T][max(embd, ffn)] its int8 quantization
	qScale []float32   // [T] s = 127/max|a|
	qSum   []int32     // [T] Σ q, the correction of the code sums
	raw    []int32     // [T][2·ffn or qkv rows] code sums Σ c·q
	y      []float32   // [T][2·ffn or qkv rows] BitLinear outputs
	att    []float32   // [T][embd] attention output
	scores [][]float32 // [worker][queries][ctx] attention weights of an item's queries
	q16    [][]float32 // [worker][queries][head_dim] those queries rounded to float16
	attOut [][]float32 // [worker][queries][head_dim] their outputs, before they go to att
	qT     [][]float32 // [worker][head_dim][queries] an item's queries transposed, for the wide kernels (wide.go)
	runs   []int       // the first token of each run attention takes together, then T
	k16    [][]uint16  // [worker][head_dim] a key converted to float16, before it goes to its block
	rope   []float64   // [T][rope_dim] cos then sin of each position
	xn     []float32   // [headTile][embd] normalized final states
	head   headScratch
	tok    []int32 // [T] the tokens of a ForwardMulti pass
	seq    []int   // [T] each position's slot of the K/V cache
	pos    []int   // [T] each position's place in its slot's sequence

	// The pass's pool jobs, set up before each run (job says why).
	norm     normJob
	ropeKV   ropeKVJob
	residual residualJob
	attend   attendJob
	normRows [][normGroup][]float32 // [worker] the rows normJob sums together
	normSums [][normGroup]float64   // [worker] and their sums of squares
}

// newScratch allocates the buffers of passes of up to T tokens over ctx
// positions a slot, on workers threads; wideAttention says whether the
// kernel set has the wide attention kernels (items of longRunQueries
// queries).
func newScratch(c *nn.Config, h *head, T, ctx, workers int, wideAttention bool) scratch {
	wide := max(c.Embd, c.FFN)
	rows := max(2*c.FFN, c.Embd+2*c.KVDim())
	s := scratch{
		x:      make([]float32, T*c.Embd),
		a:      make([]float32, T*wide),
		q:      make([]int8, T*wide),
		qScale: make([]float32, T),
		qSum:   make([]int32, T),
		raw:    make([]int32, T*rows),
		y:      make([]float32, T*rows),
		att:    make([]float32, T*c.Embd),
		rope:   make([]float64, T*c.RopeDim),
		xn:     make([]float32, headTile*c.Embd),
		head:   h.newScratch(),
		tok:    make([]int32, T),
		seq:    make([]int, T),
		pos:    make([]int, T),
	}
	queries := max(c.Heads/c.KVHeads, runQueries) // the most an attention item takes
	if wideAttention {
		queries = max(queries, longRunQueries)
	}
	for w := 0; w < workers; w++ {
		s.scores = append(s.scores, make([]float32, queries*ctx))
		s.q16 = append(s.q16, make([]float32, queries*c.HeadDim))
		s.k16 = append(s.k16, make([]uint16, c.HeadDim))
		s.attOut = append(s.attOut, make([]float32, queries*c.HeadDim))
		if wideAttention {
			s.qT = append(s.qT, make([]float32, queries*c.HeadDim))
		} else {
			s.qT = append(s.qT, nil)
		}
	}
	s.runs = make([]int, 0, T+1)
	s.normRows = make([][normGroup][]float32, workers)
	s.normSums = make([][normGroup]float64, workers)
	return s
}

// forwardBatch evaluates T = len(tokens) tokens, token t at position
// s.pos[t] of slot s.seq[t], and writes the logits of tokens first… into
// out ([T−first][vocab]).
func (b *Backend) forwardBatch(tokens []int32, out []float32, first int) error {
	c, s := b.c, &b.s
	T, E, kv := len(tokens), c.Embd, c.KVDim()
	b.pool.solo = T == 1 && b.soloDecode
	for t, tok := range tokens {
		if err := b.embd.Row(int(tok), s.x[t*E:(t+1)*E]); err != nil {
			return err
		}
		b.ropeTable(s.pos[t], s.rope[t*c.RopeDim:(t+1)*c.RopeDim])
	}
	b.lap(stageOther, 0)
	var cacheBytes int64 // K and V rows attention reads per layer
	for t := range T {
		cacheBytes += int64(2 * 2 * (s.pos[t] + 1) * kv)
	}
	for li := range b.layers {
		l := &b.layers[li]
		// attention
		b.normEach(T, E, l.attnNorm, preResidual, nil)
		b.lap(stageNorm, 0)
		b.bitLinear(l.qkv, T)
		s.ropeKV = ropeKVJob{b, li}
		b.pool.runJob(T, smallJob, &s.ropeKV)
		b.lap(stageRopeKV, 0)
		b.attention(li, T)
		b.lap(stageAttention, cacheBytes)
		b.normEach(T, E, l.attnSubNorm, preAttention, nil)
		b.lap(stageNorm, 0)
		b.bitLinear(l.o, T)
		if b.trace != nil { // the residual stream after attention, as x + o would be
			tx := make([]float32, T*E)
			for i := range tx {
				tx[i] = s.x[i] + s.y[i]
			}
			b.trace(li, nn.StageAttention, tx)
		}

		// feed-forward; each stage first adds the previous projection to x
		F := c.FFN
		b.normEach(T, E, l.ffnNorm, preAddResidual, nil)
		b.lap(stageNorm, 0)
		if sumsGate(c, l.gateUp) {
			b.bitLinearSums(l.gateUp, T)
			b.normEach(T, F, l.ffnSubNorm, preGateSums, l.gateUp)
		} else {
			b.bitLinear(l.gateUp, T)
			b.normEach(T, F, l.ffnSubNorm, preGate, nil)
		}
		b.lap(stageNorm, 0)
		b.bitLinear(l.down, T)
		s.residual = residualJob{b}
		b.pool.runJob(T, smallJob, &s.residual)
		b.lap(stageNorm, 0)
		if b.trace != nil {
			b.trace(li, nn.StageFFN, s.x[:T*E])
		}
	}
	for t0 := first; t0 < T; t0 += headTile {
		n := min(headTile, T-t0)
		for t := 0; t < n; t++ {
			rmsNorm(b.k, s.xn[t*E:(t+1)*E], s.x[(t0+t)*E:(t0+t+1)*E], b.outNorm, c.Eps)
		}
		b.head.logits(b.k, b.pool, &s.head, s.xn[:n*E], n, out[(t0-first)*c.Vocab:(t0-first+n)*c.Vocab])
		b.lap(stageHead, b.head.bytes())
	}
	return nil
}

// ropeKVJob rotates the queries and keys of a pass's positions (RoPE) and
// writes each position's keys and values into layer li's cache.
type ropeKVJob struct {
	b  *Backend
	li int
}

func (j *ropeKVJob) do(w, lo, hi int) {
	b, li := j.b, j.li
	c, s := b.c, &b.s
	E, kv, hd := c.Embd, c.KVDim(), c.HeadDim
	qkvRows := E + 2*kv
	for t := lo; t < hi; t++ {
		y := s.y[t*qkvRows : (t+1)*qkvRows]
		cs := s.rope[t*c.RopeDim : (t+1)*c.RopeDim]
		for h := 0; h < c.Heads+c.KVHeads; h++ { // query heads, then key heads
			rope(b.k, y[h*hd:h*hd+c.RopeDim], cs, c.RopeInterleaved)
		}
		for h := 0; h < c.KVHeads; h++ { // the token's row of each head's cache
			at := b.cacheRow(s.seq[t], h, s.pos[t])
			b.k.f32ToF16(b.vCache[li][at:at+hd], y[E+kv+h*hd:E+kv+(h+1)*hd])
			// The key into its block, positions innermost.
			k16 := s.k16[w]
			b.k.f32ToF16(k16, y[E+h*hd:E+(h+1)*hd])
			p := s.pos[t]
			kb := b.kBase(s.seq[t], h) + p/kBlock*kBlock*hd + p%kBlock
			kc := b.kCache[li][kb : kb+(hd-1)*kBlock+1]
			for d, x := range k16 {
				kc[d*kBlock] = x
			}
		}
	}
}

// residualJob adds the down projection's outputs to the residual stream.
type residualJob struct{ b *Backend }

func (j *residualJob) do(_, lo, hi int) {
	b := j.b
	s, E := &b.s, b.c.Embd
	for t := lo; t < hi; t++ {
		b.k.addF32(s.x[t*E:(t+1)*E], s.y[t*E:(t+1)*E])
	}
}

// rmsNorm writes x / sqrt(mean(x²) + eps) · w into dst (which may be x),
// rounded as nn/ref (and ggml) round it: x·x in float32 summed in float64,
// the mean in float32, scale = 1/sqrtf(mean + eps) in float32, then
// (x·scale)·w in float32.
func rmsNorm(k kernels, dst, x, w []float32, eps float32) {
	normalize(k, dst, x, w, k.sumSquares(x), eps)
}

// sumSquaresGeneric is Σ float32(x·x) summed in float64 in order:
// rmsNorm's sum (kernels.sumSquares).
func sumSquaresGeneric(x []float32) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	return sum
}

// sumSquaresRowsGeneric sets sums[i] = sumSquaresGeneric(rows[i]) for up
// to normGroup rows of one length; two to four rows at a time through
// sumSquares4, the first ones again filling its chains.
func sumSquaresRowsGeneric(rows [][]float32, sums []float64) {
	for len(rows) > 0 {
		g := rows[:min(4, len(rows))]
		if len(g) == 1 {
			sums[0] = sumSquaresGeneric(g[0])
		} else {
			var r [4][]float32
			for i := range r {
				r[i] = g[i%len(g)]
			}
			s := sumSquares4(r[0], r[1], r[2], r[3])
			copy(sums, s[:len(g)])
		}
		rows, sums = rows[len(g):], sums[len(g):]
	}
}

// sumSquares4 is sumSquaresGeneric of four rows of one length, each summed
// in its own order as sumSquaresGeneric sums it (so bit for bit the same),
// the four dependency chains interleaved: a float64 add waits on the one
// before it in its row, and four rows keep four adds in flight. (The
// SIMD sets take eight rows in the lanes of their registers: inEights.)
func sumSquares4(x0, x1, x2, x3 []float32) [4]float64 {
	n := len(x0)
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	var s0, s1, s2, s3 float64
	for i, v := range x0 {
		s0 += float64(float32(v * v))
		s1 += float64(float32(x1[i] * x1[i]))
		s2 += float64(float32(x2[i] * x2[i]))
		s3 += float64(float32(x3[i] * x3[i]))
	}
	return [4]float64{s0, s1, s2, s3}
}

// normalize is rmsNorm given x's sumSquares.
func normalize(k kernels, dst, x, w []float32, sum float64, eps float32) {
	k.normScale(dst[:len(x)], x, normFactor(sum, len(x), eps), w)
}

// normFactor is rmsNorm's scale of a row of n values whose sumSquares is
// sum.
func normFactor(sum float64, n int, eps float32) float32 {
	mean := float32(sum / float64(n))
	return float32(1 / float32(math.Sqrt(float64(float32(mean+eps)))))
}

// normInput is where a norm's row of position t comes from (normJob.row).
type normInput int

const (
	preResidual    normInput = iota // the residual stream s.x
	preAttention                    // attention's output s.att
	preAddResidual                  // s.x after adding the last projection's output s.y to it
	preGate                         // the FFN's activation of s.y (gate and up), written into s.a
	preGateSums                     // the same from the gate and up projection's code sums s.raw (sumsGate)
)

// normEach makes each position's BitLinear input: the row [n] of position
// t that pre names, normalized by rmsNorm with the weights w (nil: the row
// as it is) into s.a and quantized into s.q; in parallel over the T
// positions, up to normGroup positions' norm sums together
// (kernels.sumSquaresRows).
func (b *Backend) normEach(T, n int, w []float32, pre normInput, gateUp *ternaryMatrix) {
	// Positions handed out in groups as the workers free up: the same work
	// each, but one core may run slower (pp128 on two threads: a median
	// 2-6% faster than fixed halves, measured alternately in one process).
	// A pass of fewer than a group of positions a worker (verification, a
	// step of a few sequences) splits them evenly instead, rather than
	// leave the helpers idle.
	align := normGroup
	if T < normGroup*b.threads {
		align = max(1, T/b.threads)
	}
	b.s.norm = normJob{b, n, w, pre, gateUp}
	b.pool.runChunksJob(T, align, &b.s.norm)
}

// normGroup: the most positions normJob sums the squares of together: 8,
// the rows sumSquares8AVX512 takes in its lanes.
const normGroup = 8

// normJob is normEach's pool job.
type normJob struct {
	b      *Backend
	n      int
	w      []float32
	pre    normInput
	gateUp *ternaryMatrix // preGateSums' projection
}

// row returns position t's row to normalize, a (its row of s.a) where the
// input is made there.
func (j *normJob) row(t int, a []float32) []float32 {
	b := j.b
	s, E, F := &b.s, b.c.Embd, b.c.FFN
	switch j.pre {
	case preResidual:
		return s.x[t*E : (t+1)*E]
	case preAttention:
		return s.att[t*E : (t+1)*E]
	case preAddResidual:
		x := s.x[t*E : (t+1)*E]
		b.k.addF32(x, s.y[t*E:(t+1)*E])
		return x
	case preGateSums:
		m, raw := j.gateUp, s.raw[t*2*F:(t+1)*2*F]
		b.k.reluSqSums(a, raw[:F], raw[F:], s.qSum[t], s.qScale[t], m.rowScale[:F], m.rowScale[F:])
		return a
	default: // preGate
		gate(b.k, b.c.Activation, a, s.y[t*2*F:t*2*F+F], s.y[t*2*F+F:(t+1)*2*F])
		return a
	}
}

func (j *normJob) do(wk, lo, hi int) {
	b, n, w := j.b, j.n, j.w
	s := &b.s
	rows, sums := &s.normRows[wk], &s.normSums[wk]
	for t0 := lo; t0 < hi; t0 += normGroup {
		t1 := min(t0+normGroup, hi)
		for t := t0; t < t1; t++ {
			rows[t-t0] = j.row(t, s.a[t*n:(t+1)*n])
		}
		if w != nil {
			b.k.sumSquaresRows(rows[:t1-t0], sums[:t1-t0])
		}
		for t := t0; t < t1; t++ {
			a, row := s.a[t*n:(t+1)*n], rows[t-t0]
			if w == nil {
				if len(row) > 0 && &row[0] != &a[0] {
					copy(a, row)
				}
				quantizeRows(b.k, a, 1, n, s.q[t*n:(t+1)*n], s.qScale[t:t+1], s.qSum[t:t+1])
				continue
			}
			// The norm's last step and the absmax of its output in one
			// pass, then the quantization.
			m := b.k.normScaleMax(a, row, normFactor(sums[t-t0], n, b.c.Eps), w)
			s.qScale[t], s.qSum[t] = quantizeInput(b.k, a, m, s.q[t*n:(t+1)*n])
		}
	}
}

// quantizeRows quantizes T rows of x [T][n] into q [T][n] with
// s = float32(127/m), m = max(1e-5, max|x|) in float64, and round half to
// even of the float32 product x·s, as nn/ref (and bitnet.cpp) do; it also
// stores each row's scale and Σ q (k.quantizeI8).
func quantizeRows(k kernels, x []float32, T, n int, q []int8, scale []float32, sum []int32) {
	for t := 0; t < T; t++ {
		xr := x[t*n : (t+1)*n]
		scale[t], sum[t] = quantizeInput(k, xr, k.maxAbs(xr), q[t*n:(t+1)*n])
	}
}

// quantizeInput is quantizeRows of one row x whose max|x| is mx: it returns
// the row's scale and Σ q.
func quantizeInput(k kernels, x []float32, mx float32, q []int8) (float32, int32) {
	sc := float32(127 / max(1e-5, float64(mx)))
	return sc, k.quantizeI8(x, sc, q)
}

// maxAbsGeneric is max|x| (0 for no values), four lanes at a time.
func maxAbsGeneric(x []float32) float32 {
	var m0, m1, m2, m3 uint32 // |x| as bits: for non-NaN floats, order as integers
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0 = max(m0, math.Float32bits(x[i])&^(1<<31))
		m1 = max(m1, math.Float32bits(x[i+1])&^(1<<31))
		m2 = max(m2, math.Float32bits(x[i+2])&^(1<<31))
		m3 = max(m3, math.Float32bits(x[i+3])&^(1<<31))
	}
	for ; i < len(x); i++ {
		m0 = max(m0, math.Float32bits(x[i])&^(1<<31))
	}
	return math.Float32frombits(max(m0, m1, m2, m3))
}

// roundClampI8 rounds x half to even and clamps it to [−128, 127]. Adding
// and subtracting 1.5·2²³ rounds a float32 of magnitude below 2²² to an
// integer in the current (nearest-even) mode; larger values clamp anyway.
// The explicit conversions keep the compiler from fusing or widening.
func roundClampI8(x float32) int8 {
	const magic = 12582912 // 1.5·2²³
	if x > 127 {
		x = 127
	}
	if x < -128 {
		x = -128
	}
	r := float32(float32(x+magic) - magic)
	return int8(int32(r))
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// bitLinear computes the BitLinear outputs s.y [T][m.rows] of the
// quantized rows s.q [T][m.n].
func (b *Backend) bitLinear(m *ternaryMatrix, T int) {
	s := &b.s
	m.apply(b.k, b.pool, s.q, s.qScale, s.qSum, T, s.raw, s.y)
	b.lapMACs(stageMatMul, int64(len(m.data)+4*len(m.rowScale)+4*len(m.groupScale)), int64(T)*int64(m.rows)*int64(m.n))
}

// bitLinearSums is bitLinear up to the code sums s.raw: their outputs are
// left to the next step (the ReLU² gate, sumsGate).
func (b *Backend) bitLinearSums(m *ternaryMatrix, T int) {
	s := &b.s
	m.apply(b.k, b.pool, s.q, s.qScale, s.qSum, T, s.raw, nil)
	b.lapMACs(stageMatMul, int64(len(m.data)+4*len(m.rowScale)), int64(T)*int64(m.rows)*int64(m.n))
}

// sumsGate says whether the FFN's gate takes the gate and up projection
// m's code sums (kernels.reluSqSums) instead of its outputs: for ReLU²
// and one scale a row. On the Intel Xeon VM, a 2B pass of 128 tokens
// wrote 7 MB of outputs a layer only to read them back.
func sumsGate(c *nn.Config, m *ternaryMatrix) bool {
	return c.Activation == nn.ReLUSquared && m.groupScale == nil
}

// apply computes y [T][m.rows] for the quantized input q [T][m.n] (scales
// qScale, sums qSum), the code sums going through raw [T][m.rows] (and
// stopping there for y nil, with one scale a row); the
// matrix rows are split across the pool's workers: in fixed shares for a
// step of a few tokens (each worker's rows one stream from DRAM), in
// guided ranges for a prompt's chunk, whose products are arithmetic.
func (m *ternaryMatrix) apply(k kernels, p *pool, q []int8, qScale []float32, qSum []int32, T int, raw []int32, y []float32) {
	m.job = applyJob{m, k, q, qScale, qSum, T, raw, y}
	if T >= guidedTokens {
		p.runGuidedJob(m.rows, 16, guidedRows, &m.job)
		return
	}
	p.runJob(m.rows, 16, &m.job)
}

// A prompt's ternary products (a pass of at least guidedTokens tokens) are
// handed out in guided ranges (pool.runGuidedJob) of at least guidedRows
// rows instead of fixed halves. They run long enough for one core of a VM
// to fall behind the other for a while, and with fixed halves the faster
// one then waited for it: a 128-token pass of the 2B shape on two threads
// of the Intel Xeon VM, the caller's waits 38-45 ms (medians) against 6-7
// guided, the pass 835-840 ms against 793-804 (medians of 25 passes each,
// the two alternated in one process, twice). A decode step keeps its
// halves: guided, its waits went 1.4 → 0.6 ms but the step was no faster
// (51.7 against 52.4-53.3 ms), its streams cut shorter.
const (
	guidedTokens = 16
	guidedRows   = 64
)

// applyJob is apply's pool job (a matrix's own: a backend runs one pass at
// a time).
type applyJob struct {
	m      *ternaryMatrix
	k      kernels
	q      []int8
	qScale []float32
	qSum   []int32
	T      int
	raw    []int32
	y      []float32
}

func (j *applyJob) do(_, lo, hi int) {
	m, k, q, T, raw, y := j.m, &j.k, j.q, j.T, j.raw, j.y
	if m.groupScale != nil {
		m.applyGroups(*k, q, j.qScale, T, lo, hi, y)
		return
	}
	w := m.data[lo*m.stride:]
	if T == 1 {
		k.ternaryRows(w, m.stride, q[:m.n], raw[lo:hi])
	} else {
		k.ternaryMatMul(w, m.stride, hi-lo, q, m.n, m.n, T, raw[lo:], m.rows)
	}
	if y == nil {
		return
	}
	for t := 0; t < T; t++ {
		// float32(float32(Σc·q − Σq)/s)·scale, each step in float32 as
		// nn/ref (and bitnet.cpp) take it; the sum is exact.
		o := t * m.rows
		k.scaleSums(y[o+lo:o+hi], raw[o+lo:o+hi], j.qSum[t], j.qScale[t], m.rowScale[lo:hi])
	}
}

// applyGroups is apply for rows lo…hi of a matrix with one scale per 256
// weights: each group's exact sum times its scale, summed in float64 in
// order, as nn/ref sums them.
func (m *ternaryMatrix) applyGroups(k kernels, q []int8, qScale []float32, T, lo, hi int, y []float32) {
	groups := m.n / groupLen
	var one [1]int32
	for t := 0; t < T; t++ {
		qt := q[t*m.n : (t+1)*m.n]
		for r := lo; r < hi; r++ {
			var acc float64
			for g := 0; g < groups; g++ {
				qg := qt[g*groupLen : (g+1)*groupLen]
				k.ternaryRows(m.data[r*m.stride+g*groupLen/4:], m.stride, qg, one[:])
				var qsum int32
				for _, v := range qg {
					qsum += int32(v)
				}
				acc += float64(m.groupScale[r*groups+g]) * float64(one[0]-qsum)
			}
			y[t*m.rows+r] = float32(acc / float64(qScale[t]))
		}
	}
}

// gate sets h[i] = activate(a, g[i])·u[i] (NaN aside), the activation
// chosen once and ReLU without a branch: the signs of g are random, and a
// branch per element mispredicted half the time (40 µs a layer of the 2B
// shape, against 3 without).
func gate(k kernels, a nn.Activation, h, g, u []float32) {
	if a == nn.ReLUSquared {
		k.reluSqMul(h, g, u)
		return
	}
	g, u = g[:len(h)], u[:len(h)]
	for i := range h {
		h[i] = activate(a, g[i]) * u[i]
	}
}

func activate(a nn.Activation, g float32) float32 {
	if a == nn.ReLUSquared {
		r := max(g, 0)
		return r * r
	}
	return float32(float64(g) / (1 + math.Exp(-float64(g))))
}

// ropeTable fills cs [rope_dim] with cos(pos·θ_i) for i < rope_dim/2, then
// sin(pos·θ_i), θ_i = base^(−2i/rope_dim).
func (b *Backend) ropeTable(pos int, cs []float64) {
	half := len(cs) / 2
	for i := 0; i < half; i++ {
		cs[half+i], cs[i] = math.Sincos(float64(pos) * b.invFreq[i])
	}
}

// rope rotates one head's first rope_dim values in NEOX pairs (i, i+half)
// (k.ropeNeox), or in adjacent pairs (2i, 2i+1) when interleaved (the
// llama architecture); pair i turns by the angle of cs[i], cs[half+i].
func rope(k kernels, x []float32, cs []float64, interleaved bool) {
	if !interleaved {
		k.ropeNeox(x, cs)
		return
	}
	half := len(x) / 2
	for i := 0; i < half; i++ {
		cos, sin := cs[i], cs[half+i]
		x[2*i], x[2*i+1] = turn(x[2*i], x[2*i+1], cos, sin)
	}
}

// attention computes, for each of T tokens t and each query head h,
// softmax(q·Kᵀ/√head_dim) · V over the positions 0…s.pos[t] of slot
// s.seq[t] of the cache, KV head h/(heads/kv_heads), into s.att. Work items
// (token, head) are split across the workers.
func (b *Backend) attention(li, T int) {
	c, s := b.c, &b.s
	group := c.Heads / c.KVHeads
	// A work item is sub query heads that share a K/V head, of a run of
	// up to runQueries/sub tokens of one sequence at consecutive positions
	// (a prompt's, a verification pass's), which attendRun reads K and V
	// once for: all the group's heads unless that leaves a worker idle.
	sub := group
	rq := runQueries
	if s.pos[0]+1 >= longRunPositions && b.k.kScoresWide != nil {
		rq = longRunQueries
	}
	for {
		b.tokenRuns(T, max(1, rq/sub))
		if sub%2 != 0 || (len(s.runs)-1)*c.Heads/sub >= b.threads {
			break
		}
		sub /= 2
	}
	// Handed out as the workers free up: a prompt's later tokens attend to
	// more positions (pp128 on two threads of the 2B shape: with fixed
	// halves the caller waited 62% of attention's time for its helper, and
	// the pass took 4% longer).
	s.attend = attendJob{b, li, sub}
	b.pool.runChunksJob((len(s.runs)-1)*(c.Heads/sub), 1, &s.attend)
}

// runQueries is how many queries attention takes at once where a K/V
// head has fewer query heads (axpyF16Rows4's four): the heads of two
// tokens of nano-kjv's shape (two query heads a K/V head), of four of a
// model without grouped queries.
const runQueries = 4

// A pass whose first token sees at least longRunPositions positions (a
// long prompt's later chunks) takes longRunQueries queries an item where
// the kernel set has the wide kernels (wide.go), which then read and
// widen each key and value once for all of them. On the Intel Xeon VM
// (avx512vnni): items of 16 queries at 1,000-4,000 positions 119-124
// GFLOP/s against 84-99 four queries a call (BenchmarkAttendRun); the last
// 128 tokens of a 2,048-token prompt 2.49 → 2.18 s on one thread, 1.05 →
// 0.95 on two (medians of 5, alternated in one process, the same logits).
const (
	longRunQueries   = 16
	longRunPositions = 256
)

// attnWideQueries is the fewest queries of an item that attendRun gives to
// the wide kernels.
const attnWideQueries = 8

// tokenRuns splits the pass's T tokens into runs of at most R tokens of one
// slot at consecutive positions, into s.runs (each run's first token, then
// T).
func (b *Backend) tokenRuns(T, R int) {
	s := &b.s
	s.runs = s.runs[:0]
	for t := 0; t < T; t++ {
		if n := len(s.runs); n == 0 || t-s.runs[n-1] == R || s.seq[t] != s.seq[t-1] || s.pos[t] != s.pos[t-1]+1 {
			s.runs = append(s.runs, t)
		}
	}
	s.runs = append(s.runs, T)
}

// attendJob is attention's pool job: an item is sub query heads of each
// token of a run.
type attendJob struct {
	b       *Backend
	li, sub int
}

func (j *attendJob) do(w, lo, hi int) {
	b, sub := j.b, j.sub
	c, s := b.c, &b.s
	E, hd := c.Embd, c.HeadDim
	qkvRows := E + 2*c.KVDim()
	group := c.Heads / c.KVHeads
	per := c.Heads / sub // items per run
	kc, vc := b.kCache[j.li], b.vCache[j.li]
	for item := lo; item < hi; item++ {
		r, h := item/per, item%per*sub // run, first head
		t, R := s.runs[r], s.runs[r+1]-s.runs[r]
		q := s.y[t*qkvRows+h*hd:]
		kt := b.kBase(s.seq[t], h/group)       // the K/V head's keys in the slot
		at := b.cacheRow(s.seq[t], h/group, 0) // and its values
		attendRun(b.k, q, qkvRows, R, sub, hd, kc[kt:], vc[at:], s.pos[t]+1, s.q16[w], s.scores[w], s.attOut[w], s.att[t*E+h*hd:], E, s.qT[w])
	}
}

// attendRun is attendGroup for the sub query heads of each of R tokens of
// one sequence, token r at q[r·qStride:] (its heads one after another)
// seeing n0 + r positions, its output going to o[r·oStride:]: the scores
// of all R·sub queries in one kScores call, their weighted sums of V in
// fours over the n0 positions every token sees, then each later token's
// own last positions. With attnWideQueries queries or more and the set's
// wide kernels, the scores and those sums go through kScoresWide and
// axpyF16RowsWide instead, the queries transposed into qT [≥R·sub·hd]
// (nil: never). ob [≥R·sub·hd] is scratch. Each query's result is bit for
// bit what attendGroup gives it alone: a score is the same bits in any
// call, and axpyF16Rows adds position after position, so the sum split at
// n0 adds the same terms in the same order.
func attendRun(k kernels, q []float32, qStride, R, sub, hd int, kt, vc []uint16, n0 int, q16, scores, ob, o []float32, oStride int, qT []float32) {
	if R == 1 {
		attendGroup(k, q[:sub*hd], hd, kt, vc, n0, q16, scores, o[:sub*hd])
		return
	}
	nq, nmax := R*sub, n0+R-1
	qh := q16[:nq*hd]
	for r := 0; r < R; r++ {
		k.roundF16(qh[r*sub*hd:(r+1)*sub*hd], q[r*qStride:r*qStride+sub*hd])
	}
	sc := scores[:nq*nmax]
	wide := k.kScoresWide != nil && nq >= attnWideQueries && hd%16 == 0 && len(qT) >= nq*hd
	if wide {
		for j := 0; j < nq; j++ {
			for d, x := range qh[j*hd : (j+1)*hd] {
				qT[d*nq+j] = x
			}
		}
		k.kScoresWide(kt, hd, nmax, qT, nq, nq, sc, nmax)
	} else {
		k.kScores(kt, hd, nmax, qh, nq, sc, nmax)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i := 0; i < nq; i++ {
		softmax(k, sc[i*nmax:i*nmax+n0+i/sub], scale)
	}
	ob = ob[:nq*hd]
	clear(ob)
	if wide {
		k.axpyF16RowsWide(sc, nmax, nq, n0, vc, hd, ob, hd)
	} else {
		i := 0
		for ; i+4 <= nq; i += 4 {
			k.axpyF16Rows4(sc[i*nmax:], nmax, n0, vc, hd, ob[i*hd:], hd, hd)
		}
		for ; i < nq; i++ {
			k.axpyF16Rows(sc[i*nmax:i*nmax+n0], vc, hd, ob[i*hd:(i+1)*hd])
		}
	}
	for i := sub; i < nq; i++ { // the positions n0… of tokens 1…R−1
		k.axpyF16Rows(sc[i*nmax+n0:i*nmax+n0+i/sub], vc[n0*hd:], hd, ob[i*hd:(i+1)*hd])
	}
	for r := 0; r < R; r++ {
		copy(o[r*oStride:r*oStride+sub*hd], ob[r*sub*hd:(r+1)*sub*hd])
	}
}

// attendGroup computes o_j = softmax(q_j·Kᵀ/√hd)·V for the query heads q_j
// (q holds them one after another, hd values each) over n cache positions,
// K being the float16 keys kt in kScores' blocks of 16 positions and V the
// float16 rows vc [n][hd] (one K/V head); q16 [≥len(q)] and scores
// [≥len(q)/hd·n] are scratch. Each head's result is what it gets alone
// (kScores gives each score one chain over the head's dimensions, and
// the few-query kernels give each query its one-query bits), so how heads
// are grouped changes nothing. It rounds as nn/ref does: q to float16
// before K·q (accumulated in float32), score·float32(1/√hd), e =
// float32(exp(score − max)) (the kernel set's expSub: the assembly within
// a few float32 ulps of it), Σe in float64, P = e·float32(1/Σe), all in
// float32 but the sum.
func attendGroup(k kernels, q []float32, hd int, kt, vc []uint16, n int, q16, scores, o []float32) {
	heads := len(q) / hd
	qh := q16[:len(q)]
	k.roundF16(qh, q)
	scale := float32(1 / math.Sqrt(float64(hd)))
	sc := scores[:heads*n]
	k.kScores(kt, hd, n, qh, heads, sc, n)
	for j := 0; j < heads; j++ {
		softmax(k, sc[j*n:(j+1)*n], scale)
	}
	clear(o)
	j := 0
	for ; j+4 <= heads; j += 4 {
		k.axpyF16Rows4(sc[j*n:], n, n, vc, hd, o[j*hd:], hd, hd)
	}
	for ; j < heads; j++ {
		k.axpyF16Rows(sc[j*n:(j+1)*n], vc, hd, o[j*hd:(j+1)*hd])
	}
}

// softmax turns the scores p into attention weights in place: p·scale,
// e = exp(p − max), then e·float32(1/Σe), Σe in float64 (attendGroup's
// rounding).
func softmax(k kernels, p []float32, scale float32) {
	mx := k.scaleMax(p, scale)
	sum := k.expSub(p, mx)
	k.scaleMax(p, float32(1/sum))
}

// smallJob is the fewest positions a per-position step (RoPE and the K/V
// writes, the residual add) hands to each worker: for fewer, one thread
// does them all, since a hand-off costs more than the work (a pass of four
// tokens of the 2B shape on two threads of the Zen 4 VM: RoPE and the
// cache writes 1.0 → 0.4 ms, the caller's waits in them 0.7 → 0).
const smallJob = 4
