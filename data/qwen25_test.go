package data_test

import (
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/tokenizer"
)

// TestQwen25Encode: an SST-2 example rendered with Qwen2.5-Instruct's chat
// template (the tokenizer package's test-sized tokenizer in Qwen2.5's
// layout, whose renders TestQwen25ChatMatchesHF holds to transformers')
// supervises the assistant's answer and the <|im_end|> that closes it, and
// nothing of the prompt, which is the generation prompt's render: the
// paper's system turn (not Qwen's default one), the sentence, the
// assistant header.
func TestQwen25Encode(t *testing.T) {
	tok, err := tokenizer.Load("../tokenizer/testdata/qwen25-tiny")
	if err != nil {
		t.Fatal(err)
	}
	enc := data.Encoder{Tok: tok}
	ex := data.Example{Task: data.SST2, ID: "0", Sentence: "a gorgeous , witty , seductive movie .", Label: 1}
	e, err := enc.Encode(ex)
	if err != nil {
		t.Fatal(err)
	}
	start, end := e.Supervised()
	if got := tok.Decode(e.IDs[start:end], false); got != data.SST2Target(1)+"<|im_end|>" {
		t.Errorf("trained on %q, want %q", got, data.SST2Target(1)+"<|im_end|>")
	}
	prompt, ids, err := enc.EncodePrompt(ex)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\n" + data.SST2System + "<|im_end|>\n<|im_start|>user\nSentence: " + ex.Sentence +
		"<|im_end|>\n<|im_start|>assistant\n"
	if prompt != want || e.PromptLen != len(ids) || start != len(ids) || !strings.HasPrefix(e.Text, prompt) {
		t.Errorf("prompt %q (%d tokens; supervision from %d, PromptLen %d), want %q", prompt, len(ids), start, e.PromptLen, want)
	}
}
