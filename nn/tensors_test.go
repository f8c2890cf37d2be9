package nn

import "testing"

func TestNames(t *testing.T) {
	if got := LayerTensorName(3, FFNUp); got != "blk.3.ffn_up.weight" {
		t.Errorf("LayerTensorName = %q", got)
	}
	if got := ArchKey(ArchBitNetB158, SuffixHeadCountKV); got != "bitnet-b1.58.attention.head_count_kv" {
		t.Errorf("ArchKey = %q", got)
	}
	if len(BitNetLayerTensors) != 11 {
		t.Errorf("a bitnet-b1.58 block has 11 weights, the table lists %d", len(BitNetLayerTensors))
	}
}
