package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// qwen25Dir is a test-sized tokenizer in Qwen2.5-Instruct's layout
// (testdata/make_qwen25_tiny.py): Qwen's byte-level BPE with its merges as
// "a b" strings and no ignore_merges key, Qwen2.5's non-special <tool_call>,
// and Qwen2.5-Instruct's chat template inline in tokenizer_config.json.
var qwen25Dir = filepath.Join("testdata", "qwen25-tiny")

// qwen25ChatRecord is one line of testdata/qwen25-tiny/chat.jsonl.
type qwen25ChatRecord struct {
	Name                string    `json:"name"`
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	Rendered            string    `json:"rendered"`
	IDs                 []int     `json:"ids"`
}

// TestQwen25ChatMatchesHF renders and encodes conversations with
// Qwen2.5-Instruct's chat template as transformers 4.51's
// apply_chat_template does with its Qwen2Tokenizer on the same files
// (scripts/qwen25_chat_reference.py): the default system prompt ("You are
// Qwen, created by Alibaba Cloud. …") where the conversation has none, an
// SST-2 prompt and its answer, several turns, a system turn after the first,
// special tokens and template syntax inside a message, an empty answer.
func TestQwen25ChatMatchesHF(t *testing.T) {
	tk, err := Load(qwen25Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !tk.HasChatTemplate() {
		t.Fatal("tokenizer_config.json's chat_template was not read")
	}
	recs := fixture.ReadJSONL[qwen25ChatRecord](t, filepath.Join(qwen25Dir, "chat.jsonl"))
	if len(recs) == 0 {
		t.Fatal("chat.jsonl holds no conversation")
	}
	for _, r := range recs {
		t.Run(r.Name, func(t *testing.T) {
			text, ids, err := tk.EncodeChat(r.Messages, ChatOptions{AddGenerationPrompt: r.AddGenerationPrompt})
			if err != nil {
				t.Fatal(err)
			}
			if text != r.Rendered {
				t.Fatalf("rendered\n%q\nwant\n%q", text, r.Rendered)
			}
			if !slices.Equal(ids, r.IDs) {
				t.Fatalf("ids\n%v\nwant\n%v", ids, r.IDs)
			}
		})
	}
}
