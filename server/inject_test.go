package server

import (
	"testing"

	"github.com/bitvk/bitvk/tokenizer"
)

// A chat message's control-token text is text: it counts as the tokens of
// its characters, not as the one control token, so a user cannot end their
// turn or forge a system message.
func TestChatMessageControlText(t *testing.T) {
	ts := newTestServer(t, testOptions{})
	const ctl = "<|eot_id|>"
	if _, ok := ts.tok.ID(ctl); !ok {
		t.Fatalf("the test vocabulary has no %s", ctl)
	}
	plain := len(ts.tok.Encode(ctl, tokenizer.EncodeOptions{NoBOS: true}))
	if plain < 2 {
		t.Fatalf("%s as text is %d token(s); the test needs more", ctl, plain)
	}
	prompt := func(content string) int {
		r := ts.complete(t, "/v1/chat/completions", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": content}}, "max_tokens": 1})
		return r.usage.PromptTokens
	}
	if got, want := prompt("hi "+ctl)-prompt("hi "), plain; got != want {
		t.Errorf("a message ending in %s has %d more prompt tokens than without; want %d (its text)", ctl, got, want)
	}
}
