package convert

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bitvk/bitvk/gguf"
)

// editConfig rewrites dir/config.json through edit.
func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	writeJSON(t, filepath.Join(dir, "config.json"), cfg)
}

// editTensors rewrites dir/model.safetensors through edit.
func editTensors(t *testing.T, dir string, edit func([]stTensor) []stTensor) {
	t.Helper()
	s, err := OpenSafetensors(filepath.Join(dir, SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	var ts []stTensor
	for _, ti := range s.Tensors {
		d, err := s.Data(ti)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, stTensor{ti.Name, ti.DType, ti.Shape, slices.Clone(d)})
	}
	s.Close()
	writeFile(t, filepath.Join(dir, SingleFile), buildSafetensors(t, edit(ts), nil))
}

func without(name string) func([]stTensor) []stTensor {
	return func(ts []stTensor) []stTensor {
		return slices.DeleteFunc(ts, func(x stTensor) bool { return x.name == name })
	}
}

func TestConvertErrors(t *testing.T) {
	q0 := "model.layers.0.self_attn.q_proj.weight"
	for _, c := range []struct {
		name string
		spec func(*hfSpec)
		edit func(t *testing.T, dir string)
		opts Options
		want string
	}{
		{name: "no config", edit: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "config.json")) }, want: "reading the model configuration"},
		{name: "unknown class", edit: func(t *testing.T, dir string) {
			editConfig(t, dir, func(c map[string]any) { c["architectures"] = []string{"GPT2LMHeadModel"} })
		}, want: `model class "GPT2LMHeadModel" is not one bitvk converts`},
		{name: "activation", edit: func(t *testing.T, dir string) {
			editConfig(t, dir, func(c map[string]any) { c["hidden_act"] = "gelu" })
		}, want: `hidden_act "gelu": a BitNetForCausalLM model uses relu2`},
		{name: "rope scaling", edit: func(t *testing.T, dir string) {
			editConfig(t, dir, func(c map[string]any) { c["rope_scaling"] = map[string]any{"type": "yarn"} })
		}, want: "rope_scaling"},
		{name: "other quantization", edit: func(t *testing.T, dir string) {
			editConfig(t, dir, func(c map[string]any) { c["quantization_config"] = map[string]any{"quant_method": "gptq"} })
		}, want: `quant_method "gptq"`},
		{name: "shape", edit: func(t *testing.T, dir string) {
			editConfig(t, dir, func(c map[string]any) { c["num_key_value_heads"] = 4 })
		},
			want: "model.layers.0.self_attn.k_proj.weight is U8 [32 256]: packed ternary weights of a 256×256 matrix have shape [64 256]"},
		{name: "missing tensor", edit: func(t *testing.T, dir string) { editTensors(t, dir, without("model.layers.1.mlp.up_proj.weight")) },
			want: "tensor model.layers.1.mlp.up_proj.weight is missing"},
		{name: "missing scale", edit: func(t *testing.T, dir string) { editTensors(t, dir, without(q0+"_scale")) },
			want: "holds packed ternary weights but " + q0 + "_scale is missing"},
		{name: "extra tensor", edit: func(t *testing.T, dir string) {
			editTensors(t, dir, func(ts []stTensor) []stTensor {
				return append(ts, stTensor{"model.layers.0.self_attn.q_proj.bias", "F32", []uint64{1}, make([]byte, 4)})
			})
		}, want: "holds tensors that a bitnet-b1.58 model does not have: model.layers.0.self_attn.q_proj.bias"},
		{name: "code 3", edit: func(t *testing.T, dir string) {
			editTensors(t, dir, func(ts []stTensor) []stTensor {
				for _, x := range ts {
					if x.name == q0 {
						x.data[5] = 0xff
					}
				}
				return ts
			})
		}, want: "blk.0.attn_q.weight (from " + q0 + " in "},
		{name: "ptq on packed", opts: Options{PTQ: true}, want: "--ptq absmean quantizes float weights, but " + q0 + " is already ternary"},
		{name: "no tokenizer", edit: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "tokenizer.json")) }, want: "has no tokenizer.json: give the vocabulary with --vocab"},
		{name: "unknown pre-tokenizer", edit: func(t *testing.T, dir string) {
			path := filepath.Join(dir, "tokenizer.json")
			raw, _ := os.ReadFile(path)
			writeFile(t, path, []byte(strings.Replace(string(raw), `\\p{N}{1,3}`, `\\p{N}+`, 1)))
		}, want: "pre_tokenizer"},
		{name: "bad eos", edit: func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"eos_token": "</s>"})
		}, want: `eos_token "</s>" is not in the vocabulary`},
		{name: "vocab file missing", opts: Options{Vocab: "/nonexistent/vocab.gguf"}, want: "--vocab"},
		{name: "tq1_0 rows", spec: func(s *hfSpec) { s.embd, s.ffn = 128, 256 }, opts: Options{Type: gguf.TypeTQ1_0},
			want: "TQ1_0 needs rows of a multiple of 256 values, the model's are 128 (use --type i2_s)"},
		{name: "not a ternary type", opts: Options{Type: gguf.TypeQ8_0}, want: "ternary type Q8_0: convert writes I2_S, TQ2_0 or TQ1_0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := bitnetSpec()
			if c.spec != nil {
				c.spec(&s)
			}
			m := writeHF(t, s)
			if c.edit != nil {
				c.edit(t, m.dir)
			}
			out := filepath.Join(t.TempDir(), "out.gguf")
			_, err := Convert(m.dir, out, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
			t.Log(err)
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed conversion left %s behind", out)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*tmp*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
