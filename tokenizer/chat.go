package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// Chat templates render a conversation as the text a model was trained on.
// bitvk does not run Jinja: each template is written here in Go, chosen by
// name (--chat-template) or detected from the architecture and the file's
// Jinja text (tokenizer.chat_template), the way llama.cpp detects them.
//
// Every template renders message by message, so the rendering of a
// conversation is a prefix of the rendering with one more message, and the
// generation prompt is a prefix of the rendered assistant turn. A chat that
// keeps its KV cache between turns relies on this: it only evaluates the
// text past what it has already seen. Templates do not add BOS; Encode does.

// Message is one turn of a conversation. Role is "system", "user" or
// "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template renders conversations in one model's chat format.
type Template struct {
	name      string
	endOfTurn string
	doc       string
	render    func(b *rendering, msgs []Message, addGenerationPrompt bool)
}

// rendering is a template's output being written: the template's own text
// (control tokens included) and the messages' text, whose byte ranges it
// records.
type rendering struct {
	strings.Builder
	content []Range
}

// msg writes a message's text and records where it lies.
func (r *rendering) msg(s string) {
	if s != "" {
		r.content = append(r.content, Range{r.Len(), r.Len() + len(s)})
	}
	r.WriteString(s)
}

// Name is the template's name, as --chat-template takes it.
func (t *Template) Name() string { return t.name }

// EndOfTurn is the text (a control token) that ends a turn: generation of an
// assistant turn stops at it, and a rendered assistant turn ends with it.
func (t *Template) EndOfTurn() string { return t.endOfTurn }

// Apply renders msgs; with addGenerationPrompt it ends with the opening of
// an assistant turn, for the model to continue. The text holds control
// tokens, so encode it with ParseSpecial.
func (t *Template) Apply(msgs []Message, addGenerationPrompt bool) string {
	text, _ := t.ApplyRanges(msgs, addGenerationPrompt)
	return text
}

// ApplyRanges is Apply that also returns the byte ranges of the text that
// the messages' contents fill. Encoding the text with ParseSpecial and
// these ranges as EncodeOptions.Plain reads control tokens only where the
// template wrote them: a message that holds "<|eot_id|>" cannot end its
// turn or open another (what a server's untrusted users could otherwise
// do).
func (t *Template) ApplyRanges(msgs []Message, addGenerationPrompt bool) (string, []Range) {
	var b rendering
	t.render(&b, msgs, addGenerationPrompt)
	return b.String(), b.content
}

// Architecture names (general.architecture) that decide a template.
const (
	archBitNetB158 = "bitnet-b1.58" // Microsoft BitNet b1.58 2B4T
	archBitNet     = "bitnet"       // 1bitLLM base models
)

var templates = map[string]*Template{
	"bitnet": {
		name: "bitnet", endOfTurn: "<|eot_id|>",
		doc: "BitNet b1.58 2B4T: \"Role: content<|eot_id|>\" turns, prompt \"Assistant: \"",
		render: func(b *rendering, msgs []Message, gen bool) {
			for _, m := range msgs {
				b.WriteString(capitalize(m.Role) + ": ")
				b.msg(m.Content)
				b.WriteString("<|eot_id|>")
			}
			if gen {
				b.WriteString("Assistant: ")
			}
		},
	},
	"llama3": {
		name: "llama3", endOfTurn: "<|eot_id|>",
		doc: "LLaMA-3: <|start_header_id|>role<|end_header_id|>\\n\\ncontent<|eot_id|>",
		render: func(b *rendering, msgs []Message, gen bool) {
			for _, m := range msgs {
				// LLaMA-3's own template trims each message.
				b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
				b.msg(strings.TrimSpace(m.Content))
				b.WriteString("<|eot_id|>")
			}
			if gen {
				b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
			}
		},
	},
	"chatml": {
		name: "chatml", endOfTurn: "<|im_end|>",
		doc: "ChatML (Falcon-E): <|im_start|>role\\ncontent<|im_end|>\\n",
		render: func(b *rendering, msgs []Message, gen bool) {
			for _, m := range msgs {
				b.WriteString("<|im_start|>" + m.Role + "\n")
				b.msg(m.Content)
				b.WriteString("<|im_end|>\n")
			}
			if gen {
				b.WriteString("<|im_start|>assistant\n")
			}
		},
	},
	"falcon3": {
		name: "falcon3", endOfTurn: "<|endoftext|>",
		doc: "Falcon3: <|role|>\\ncontent\\n, assistant turns end with <|endoftext|>",
		render: func(b *rendering, msgs []Message, gen bool) {
			for _, m := range msgs {
				b.WriteString("<|" + m.Role + "|>\n")
				b.msg(m.Content)
				if m.Role == "assistant" {
					// Falcon3's template closes an assistant turn with its
					// EOS, which is what the model generated to end it.
					b.WriteString("<|endoftext|>")
				}
				b.WriteString("\n")
			}
			if gen {
				b.WriteString("<|assistant|>\n")
			}
		},
	},
	"llama2": {
		name: "llama2", endOfTurn: "</s>",
		doc: "LLaMA-2 without <<SYS>>: [INST] user [/INST]assistant</s>",
		render: func(b *rendering, msgs []Message, gen bool) {
			inTurn := false
			for _, m := range msgs {
				if m.Role == "assistant" {
					b.msg(m.Content)
					b.WriteString("</s>")
					inTurn = false
					continue
				}
				if !inTurn {
					b.WriteString("[INST] ")
					inTurn = true
				}
				if m.Role == "system" {
					b.msg(m.Content)
					b.WriteString("\n")
				} else {
					b.msg(m.Content)
					b.WriteString(" [/INST]")
				}
			}
			// The model answers right after [/INST]: no generation prompt.
		},
	},
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TemplateNames lists the built-in templates, for --chat-template's help.
func TemplateNames() []string {
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TemplateDoc is a one-line description of a template's format ("" for an
// unknown name).
func TemplateDoc(name string) string {
	if t, ok := templates[name]; ok {
		return t.doc
	}
	return ""
}

// LookupTemplate returns the built-in template of that name.
func LookupTemplate(name string) (*Template, error) {
	if t, ok := templates[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("tokenizer: unknown chat template %q (choose from %s)", name, strings.Join(TemplateNames(), ", "))
}

// DetectTemplate picks the template for a model from its architecture and
// its Jinja chat template (either may be ""). BitNet b1.58 2B4T files carry
// placeholder Jinja, so the architecture decides for them; otherwise the
// Jinja's marker tokens do, as in llama.cpp. When nothing fits, the error
// says to choose one by name.
func DetectTemplate(arch, jinja string) (*Template, error) {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(jinja, x) {
				return false
			}
		}
		return true
	}
	var name string
	switch {
	case arch == archBitNetB158:
		name = "bitnet"
	case jinja == "" && arch == archBitNet:
		name = "llama2" // 1bitLLM's base models have no template
	case jinja == "":
		return nil, fmt.Errorf("tokenizer: the model has no chat template; choose one by name (%s)", strings.Join(TemplateNames(), ", "))
	case has("<|im_start|>"):
		name = "chatml"
	case has("<|start_header_id|>", "<|end_header_id|>"):
		name = "llama3"
	case has("<|assistant|>", "<|user|>"):
		name = "falcon3"
	case has("[INST]"):
		name = "llama2"
	case has("Assistant: ", "<|eot_id|>"):
		name = "bitnet"
	default:
		return nil, fmt.Errorf("tokenizer: the model's chat template is not one bitvk knows; choose one by name (%s)", strings.Join(TemplateNames(), ", "))
	}
	return templates[name], nil
}
