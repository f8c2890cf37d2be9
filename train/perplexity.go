package train

import (
	"fmt"

	"github.com/bitvk/bitvk/nn"
)

// Perplexity evaluates the model on d with llama-perplexity's method, the
// chunk plan and statistics of nn (what `bitvk perplexity` uses), so the
// number compares with `bitvk perplexity` on the exported file and with
// llama.cpp: the stream, BOS first, cut into chunks of nctx tokens, each
// chunk's first token replaced by BOS, and only the second half of each
// chunk scored. It returns the perplexity and its uncertainty.
func (m *Model) Perplexity(d *Data, nctx, batch int) (ppl, stderr float64, chunks int, err error) {
	if nctx > m.Layout.Shape.Context {
		return 0, 0, 0, fmt.Errorf("perplexity context %d is beyond the model's %d", nctx, m.Layout.Shape.Context)
	}
	stream := append([]int32{d.BOS}, d.Tokens...)
	plan, err := nn.PlanChunks(len(stream), nctx, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	v := m.Layout.Shape.Vocab
	var st nn.NLLStats
	batch = max(1, batch)
	for c := 0; c < plan.Chunks; c += batch {
		b := min(batch, plan.Chunks-c)
		tokens := make([]int32, 0, b*nctx)
		for i := 0; i < b; i++ {
			tokens = append(tokens, plan.Chunk(stream, c+i, d.BOS)...)
		}
		if _, err := m.Forward(tokens, nil, b, nctx); err != nil {
			return 0, 0, 0, err
		}
		logits := m.Logits()
		for i := 0; i < b; i++ {
			start := (c + i) * nctx
			for j := plan.First(); j < nctx-1; j++ {
				st.Add(nn.NLL(logits[(i*nctx+j)*v:(i*nctx+j+1)*v], stream[start+j+1]))
			}
		}
	}
	ppl, stderr = st.PPL()
	return ppl, stderr, plan.Chunks, nil
}
