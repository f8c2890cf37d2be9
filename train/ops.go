package train

import (
	"math"

	"github.com/bitvk/bitvk/nn"
)

// The operations of the model, each a forward and a backward function over
// row-major activations of N = batch·T rows. Backward functions add into
// the gradients they are given (d… += …), so a value used twice collects
// both contributions; the caller zeroes gradients once per step.

// embedForward: x[n] = E[tok[n]], E [vocab][C] (already rounded to F16).
func embedForward(x, e []float32, tok []int32, c int) {
	for n, t := range tok {
		copy(x[n*c:(n+1)*c], e[int(t)*c:(int(t)+1)*c])
	}
}

// embedBackward: dE[tok[n]] += dx[n].
func embedBackward(de, dx []float32, tok []int32, c int) {
	for n, t := range tok {
		row := de[int(t)*c : (int(t)+1)*c]
		for i, v := range dx[n*c : (n+1)*c] {
			row[i] += v
		}
	}
}

// roundF16: dst = float16(src), the values the GGUF stores. The STE passes
// the gradient of dst to src unchanged.
func roundF16(dst, src []float32) {
	for i, v := range src {
		dst[i] = nn.RoundF16(v)
	}
}

// rmsnormForward: r = 1/√(mean(x²) + eps), y = x·r·w, per row of C; rstd
// keeps r for the backward pass. The sum of squares is float64, as in
// nn/ref.
func rmsnormForward(y, rstd, x, w []float32, c int, eps float32) {
	for n := range rstd {
		xr := x[n*c : (n+1)*c]
		var ss float64
		for _, v := range xr {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(c)+float64(eps))
		rstd[n] = float32(r)
		yr := y[n*c : (n+1)*c]
		for i, v := range xr {
			yr[i] = float32(float64(v) * r * float64(w[i]))
		}
	}
}

// rmsnormBackward: with x̂ = x·r and y = x̂·w,
//
//	dw += Σ_rows dy·x̂
//	dx += r·(dx̂ − x̂·mean(dx̂·x̂)),  dx̂ = dy·w
//
// (r depends on x: ∂r/∂x_j = −r³·x_j/C).
func rmsnormBackward(dx, dw, dy, x, w, rstd []float32, c int) {
	dxh := make([]float32, c)
	for n := range rstd {
		r := float64(rstd[n])
		xr, dyr, dxr := x[n*c:(n+1)*c], dy[n*c:(n+1)*c], dx[n*c:(n+1)*c]
		var dot float64
		for i := range xr {
			xh := float64(xr[i]) * r
			dxh[i] = dyr[i] * w[i]
			dw[i] += float32(float64(dyr[i]) * xh)
			dot += float64(dxh[i]) * xh
		}
		mean := dot / float64(c)
		for i := range xr {
			xh := float64(xr[i]) * r
			dxr[i] += float32(r * (float64(dxh[i]) - xh*mean))
		}
	}
}

// quantizeForward is BitLinear's activation quantization with the
// straight-through estimator: per row s = 127/max(1e-5, max|x|), y =
// clamp(round_half_even(x·s), −128, 127)/s, the int8 codes of nn/ref's
// Quantize divided by s. Its backward is the identity (dx = dy), so it has
// no function. float is the --float mode: y = x.
func quantizeForward(y, x []float32, c int, float bool) {
	if float {
		copy(y, x)
		return
	}
	for n := 0; n < len(x)/c; n++ {
		xr, yr := x[n*c:(n+1)*c], y[n*c:(n+1)*c]
		m := float32(1e-5)
		for _, v := range xr {
			m = max(m, float32(math.Abs(float64(v))))
		}
		s := 127 / m
		for i, v := range xr {
			q := max(-128, min(127, math.RoundToEven(float64(v*s))))
			yr[i] = float32(q) / s
		}
	}
}

// ternarize is BitLinear's weight quantization with the straight-through
// estimator: γ = mean|W| over the tensor, W_q = RoundClip(W/(γ+1e-6), −1,
// 1)·γ. It returns γ, the per-tensor scale the I2_S file stores. Its
// backward is the identity (dW = dW_q). float is the --float mode: W_q = W.
func ternarize(wq, w []float32, float bool) float32 {
	if float {
		copy(wq, w)
		return 1
	}
	gamma := absMean(w)
	inv := 1 / (float64(gamma) + 1e-6)
	for i, v := range w {
		wq[i] = float32(ternaryOf(float64(v)*inv)) * gamma
	}
	return gamma
}

// absMean is γ = mean|W|, summed in float64 and rounded to float32 (the
// scale as stored).
func absMean(w []float32) float32 {
	var s float64
	for _, v := range w {
		s += math.Abs(float64(v))
	}
	return float32(s / float64(len(w)))
}

// ternaryOf is RoundClip(x, −1, 1) with rounding half to even.
func ternaryOf(x float64) int8 {
	return int8(max(-1, min(1, math.RoundToEven(x))))
}

// ropeTable holds cos and sin of pos·base^(−2i/d) for pos < T, i < d/2.
type ropeTable struct {
	half     int
	cos, sin []float32 // [T][half]
}

func newRopeTable(t, dim int, base float32) ropeTable {
	half := dim / 2
	r := ropeTable{half: half, cos: make([]float32, t*half), sin: make([]float32, t*half)}
	for p := 0; p < t; p++ {
		for i := 0; i < half; i++ {
			theta := float64(p) * math.Pow(float64(base), -2*float64(i)/float64(dim))
			s, c := math.Sincos(theta)
			r.cos[p*half+i], r.sin[p*half+i] = float32(c), float32(s)
		}
	}
	return r
}

// ropeForward rotates, in place, every head of every row (width = heads·d,
// row n at position n mod T) in NEOX pairs (i, i+d/2):
//
//	a' = a·cos θ − b·sin θ,  b' = a·sin θ + b·cos θ,  θ = pos·base^(−2i/d)
//
// ropeBackward applies the transposed rotation (θ → −θ) to the gradient,
// since the rotation is orthogonal.
func ropeForward(x []float32, width, t int, r ropeTable) { rope(x, width, t, r, 1) }

func ropeBackward(dx []float32, width, t int, r ropeTable) { rope(dx, width, t, r, -1) }

func rope(x []float32, width, t int, r ropeTable, sign float32) {
	d := 2 * r.half
	for n := 0; n < len(x)/width; n++ {
		pos := n % t
		cs, sn := r.cos[pos*r.half:(pos+1)*r.half], r.sin[pos*r.half:(pos+1)*r.half]
		for h := 0; h < width/d; h++ {
			v := x[n*width+h*d : n*width+(h+1)*d]
			for i := 0; i < r.half; i++ {
				a, b := v[i], v[i+r.half]
				s := sign * sn[i]
				v[i] = a*cs[i] - b*s
				v[i+r.half] = a*s + b*cs[i]
			}
		}
	}
}

// reluSqGateForward: h = relu(g)²·u.
func reluSqGateForward(h, g, u []float32) {
	for i := range h {
		r := max(g[i], 0)
		h[i] = r * r * u[i]
	}
}

// reluSqGateBackward: dg += dh·u·2·relu(g), du += dh·relu(g)².
func reluSqGateBackward(dg, du, dh, g, u []float32) {
	for i := range dh {
		r := max(g[i], 0)
		dg[i] += dh[i] * u[i] * 2 * r
		du[i] += dh[i] * r * r
	}
}

// residualAdd: x = a + b.
func residualAdd(x, a, b []float32) {
	for i := range x {
		x[i] = a[i] + b[i]
	}
}

// crossEntropy turns logits [N][V] into probabilities in place and
// returns the summed loss Σ_n −log p[n][target[n]] (float64
// log-sum-exp). Targets below 0 are not scored.
func crossEntropy(logits []float32, target []int32, v int) float64 {
	var loss float64
	for n, t := range target {
		row := logits[n*v : (n+1)*v]
		m := row[0]
		for _, x := range row {
			m = max(m, x)
		}
		var zt float32
		if t >= 0 {
			zt = row[t] - m
		}
		var sum float64
		for i, x := range row {
			e := math.Exp(float64(x - m))
			row[i] = float32(e)
			sum += e
		}
		if t >= 0 {
			loss += math.Log(sum) - float64(zt)
		}
		inv := 1 / sum
		for i := range row {
			row[i] = float32(float64(row[i]) * inv)
		}
	}
	return loss
}

// crossEntropyBackward: dlogits = (p − onehot(target))·scale, in place over
// the probabilities crossEntropy left. Unscored rows get zero.
func crossEntropyBackward(probs []float32, target []int32, v int, scale float32) {
	for n, t := range target {
		row := probs[n*v : (n+1)*v]
		if t < 0 {
			clear(row)
			continue
		}
		row[t] -= 1
		for i := range row {
			row[i] *= scale
		}
	}
}
