package tokenizer

import (
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzTokenizerJSON: tokenizer.json's parser, then encoding and decoding
// with whatever it accepted: an error or a tokenizer, never a panic, a hang
// or gigabytes (fuzzguard). (Its seeds run in every go test; make fuzz fuzzes
// it.) Chat templates are not fuzzed: gonja runs them without limits (see
// chatTemplate).
func FuzzTokenizerJSON(f *testing.F) {
	pre := func(regex string) string {
		return `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + jsonString(regex) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`
	}
	for _, seed := range []string{
		`{"added_tokens":[{"id":5,"content":"<s>","special":true}],"normalizer":null,"pre_tokenizer":` + pre(llama3SplitRegex) + `,
			"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]},
			"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"c":4},"merges":["a b"],"ignore_merges":false}}`,
		`{"added_tokens":[{"id":3,"content":"<|im_end|>","special":true}],"normalizer":{"type":"NFC"},"pre_tokenizer":` + pre(qwen2SplitRegex) + `,
			"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3},"merges":["a b"]},"pre_tokenizer":` + pre(llama3SplitRegex) + `,"decoder":{"type":"ByteLevel"},"added_tokens":[]}`,
	} {
		f.Add([]byte(seed), "Hello world 12345 <s> café\n\n  ab")
	}
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		fuzzguard.Run(func() {
			tk, err := parseTokenizerJSON(raw)
			if err != nil {
				return
			}
			ids := tk.Encode(text, true)
			tk.Decode(ids, false)
			tk.DecodeHF(append(ids, -1, 1<<30), true)
			for _, id := range ids {
				tk.Token(id)
				tk.IsSpecial(id)
			}
			tk.Encode(strings.Repeat(text, 300/(len(text)+1)+1), false) // long words take the long-word path
		})
	})
}
