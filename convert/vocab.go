package convert

import (
	"fmt"

	"github.com/bitvk/bitvk/gguf"
	"github.com/bitvk/bitvk/nn"
)

// vocabFromHF reads the tokenizer of a checkpoint directory as the
// tokenizer.* keys of a GGUF file.
func vocabFromHF(dir string, rows int, bos, eos int32) ([]gguf.KV, error) {
	v, err := readHFTokenizer(dir, rows, bos, eos)
	if err != nil {
		return nil, err
	}
	return nn.VocabMeta(v), nil
}

// vocabFromGGUF copies every tokenizer.* key of a GGUF file (a vocabulary
// such as bitvk tokenizer-train writes, or a whole model) in file order, as
// the trainer's own export does, after checking that it builds a tokenizer
// whose ids fit the model's rows embedding rows.
func vocabFromGGUF(path string, rows int) ([]gguf.KV, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--vocab: %w", err)
	}
	defer f.Close()
	tok, err := nn.NewTokenizer(f)
	if err != nil {
		return nil, fmt.Errorf("--vocab %s: %w", path, err)
	}
	if tok.Len() > rows {
		return nil, fmt.Errorf("--vocab %s has %d tokens but the model's embedding has %d rows (vocab_size in config.json): it is not this model's vocabulary", path, tok.Len(), rows)
	}
	return nn.TokenizerMeta(f), nil
}
