package train

import (
	"fmt"
	"math"
)

// Perplexity evaluates the model on d with llama-perplexity's method, so
// the number compares with `bitvk perplexity` on the exported file and
// with llama.cpp: the stream, BOS first, cut into chunks of nctx tokens,
// each chunk's first token replaced by BOS, and only the second half of
// each chunk scored (positions nctx/2 … nctx−2 predicting the next
// token). It returns exp(mean NLL) and its standard error
// (ppl·√(var(NLL)/(count−1))).
func (m *Model) Perplexity(d *Data, nctx, batch int) (ppl, stderr float64, chunks int, err error) {
	if nctx < 4 || nctx > m.Layout.Shape.Context {
		return 0, 0, 0, fmt.Errorf("perplexity context %d must be in [4, %d]", nctx, m.Layout.Shape.Context)
	}
	stream := append([]int32{d.BOS}, d.Tokens...)
	chunks = len(stream) / nctx
	if chunks == 0 {
		return 0, 0, 0, fmt.Errorf("%d tokens are fewer than one chunk of %d", len(stream), nctx)
	}
	v := m.Layout.Shape.Vocab
	first := nctx / 2
	var nll, nll2 float64
	count := 0
	batch = max(1, batch)
	for c := 0; c < chunks; c += batch {
		b := min(batch, chunks-c)
		tokens := make([]int32, 0, b*nctx)
		for i := 0; i < b; i++ {
			start := (c + i) * nctx
			tokens = append(tokens, stream[start:start+nctx]...)
			tokens[i*nctx] = d.BOS
		}
		if _, err := m.Forward(tokens, nil, b, nctx); err != nil {
			return 0, 0, 0, err
		}
		logits := m.Logits()
		for i := 0; i < b; i++ {
			start := (c + i) * nctx
			for j := first; j < nctx-1; j++ {
				row := logits[(i*nctx+j)*v : (i*nctx+j+1)*v]
				lp := logSoftmaxAt(row, stream[start+j+1])
				nll -= lp
				nll2 += lp * lp
				count++
			}
		}
	}
	mean := nll / float64(count)
	ppl = math.Exp(mean)
	variance := nll2/float64(count) - mean*mean
	if variance > 0 && count > 1 {
		stderr = ppl * math.Sqrt(variance/float64(count-1))
	}
	return ppl, stderr, chunks, nil
}

// logSoftmaxAt is log softmax(row)[t], in float64.
func logSoftmaxAt(row []float32, t int32) float64 {
	m := row[0]
	for _, x := range row {
		m = max(m, x)
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x - m))
	}
	return float64(row[t]-m) - math.Log(sum)
}
