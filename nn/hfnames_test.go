package nn

import "testing"

func TestHFTensors(t *testing.T) {
	c := &Config{Arch: ArchBitNetB158, SubNorms: true, Layers: 2, Embd: 256, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64, Vocab: 300}
	table, err := HFTensors(c, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != 2+2*11 {
		t.Fatalf("%d tensors, want %d", len(table), 2+2*11)
	}
	byHF := map[string]HFTensor{}
	for _, e := range table {
		byHF[e.HF] = e
	}
	for hf, want := range map[string]HFTensor{
		"model.embed_tokens.weight":                      {GGUF: "token_embd.weight", Role: HFEmbedding, In: 256, Out: 300},
		"model.layers.1.self_attn.k_proj.weight":         {GGUF: "blk.1.attn_k.weight", Role: HFProjection, In: 256, Out: 128},
		"model.layers.0.self_attn.attn_sub_norm.weight":  {GGUF: "blk.0.attn_sub_norm.weight", Role: HFNorm, In: 256, Out: 1},
		"model.layers.0.mlp.ffn_sub_norm.weight":         {GGUF: "blk.0.ffn_sub_norm.weight", Role: HFNorm, In: 512, Out: 1},
		"model.layers.1.mlp.down_proj.weight":            {GGUF: "blk.1.ffn_down.weight", Role: HFProjection, In: 512, Out: 256},
		"model.layers.1.post_attention_layernorm.weight": {GGUF: "blk.1.ffn_norm.weight", Role: HFNorm, In: 256, Out: 1},
		"model.norm.weight":                              {GGUF: "output_norm.weight", Role: HFNorm, In: 256, Out: 1},
	} {
		got, ok := byHF[hf]
		want.HF = hf
		if !ok || got.GGUF != want.GGUF || got.Role != want.Role || got.In != want.In || got.Out != want.Out || got.PermuteHeads != 0 {
			t.Errorf("%s: %+v, want %+v", hf, got, want)
		}
	}
	if table[0].GGUF != TensorTokenEmbd || table[len(table)-1].GGUF != TensorOutputNorm {
		t.Errorf("order: first %s, last %s", table[0].GGUF, table[len(table)-1].GGUF)
	}

	c.Arch = ArchBitNet
	table, _ = HFTensors(c, false)
	if table[6].HF != "model.layers.0.self_attn.inner_attn_ln.weight" || table[len(table)-1].HF != "lm_head.weight" || table[len(table)-1].Role != HFOutput {
		t.Errorf("1bitLLM names: %s, last %s", table[6].HF, table[len(table)-1].HF)
	}

	c.Arch, c.SubNorms = ArchLlama, false
	table, _ = HFTensors(c, true)
	if len(table) != 2+2*9 || table[2].HF != "model.layers.0.self_attn.q_proj.weight" || table[2].PermuteHeads != 4 || table[3].PermuteHeads != 2 || table[4].PermuteHeads != 0 {
		t.Errorf("llama: %d tensors, %+v %+v %+v", len(table), table[2], table[3], table[4])
	}
	if _, err := HFTensors(&Config{Arch: "gpt2"}, true); err == nil {
		t.Error("unknown architecture accepted")
	}
	for class, arch := range map[string]string{"BitNetForCausalLM": ArchBitNetB158, "BitnetForCausalLM": ArchBitNet, "LlamaForCausalLM": ArchLlama} {
		if a, err := HFArch(class); a != arch || err != nil {
			t.Errorf("HFArch(%s) = %s, %v", class, a, err)
		}
	}
	if _, err := HFArch("MistralForCausalLM"); err == nil {
		t.Error("MistralForCausalLM accepted")
	}
}
