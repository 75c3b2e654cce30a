package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzTokenizerJSON: tokenizer.json's parser, then encoding and decoding
// with whatever it accepted: an error or a tokenizer, never a panic, a hang
// or gigabytes (fuzzguard). (Its seeds run in every go test; make fuzz fuzzes
// it.)
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
		`{"added_tokens":[{"id":1,"content":"<s>","special":true}],"normalizer":null,"pre_tokenizer":` + pre(tekkenSplitRegex) + `,
			"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":2,"b":3,"ab":4,"Ġ":5},"merges":[["a","b"]],"ignore_merges":true}}`,
		// SentencePiece-style (spm.go): Metaspace with byte fallback; the legacy
		// normalizer with <unk> and fuse_unk; a split Metaspace with a Metaspace decoder
		spmSeed(`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}`, true),
		spmSeed(`"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`, false),
		strings.Replace(spmSeed(`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, false),
			`"decoder":{"type":"Sequence"`, `"decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always"},"x":{"type":"Sequence"`, 1),
	} {
		f.Add([]byte(seed), "Hello world 12345 <s> café\n\n  ab HTTPServer e\u0301/\n/ ▁<0x41>🤗")
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

// spmSeed is a SentencePiece-style tokenizer.json with the given
// normalizer or pre-tokenizer, with or without the 256 byte tokens.
func spmSeed(component string, byteFallback bool) string {
	vocab := `"<unk>":0,"<s>":1,"▁":2,"a":3,"b":4,"▁a":5,"ab":6`
	if byteFallback {
		for b := 0; b < 256; b++ {
			vocab += fmt.Sprintf(`,"<0x%02X>":%d`, b, 7+b)
		}
	}
	return `{"added_tokens":[{"id":1,"content":"<s>","special":true}],` + component + `,
		"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]},
		"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
		"model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":` + fmt.Sprint(byteFallback) + `,"vocab":{` + vocab + `},"merges":["▁ a","a b"]}}`
}

// FuzzChatTemplate: a chat template from a model repository, parsed and
// rendered in the sandbox (sandbox.go) with a message the fuzzer chooses: an
// error or a render, never a panic, a hang or gigabytes (fuzzguard). The
// seeds are real templates' constructs and every attack of sandbox_test.go.
func FuzzChatTemplate(f *testing.F) {
	seeds := []string{
		"{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content | trim + '<|im_end|>\\n' }}{% endfor %}" +
			"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
		"{% set ns = namespace(n=0) %}{% for m in messages[::-1] %}{% set ns.n = ns.n + loop.index0 // 2 %}" +
			"{% if m.content.startswith('<') and '</think>' in m.content %}{{ m.content.split('</think>')[-1].lstrip('\\n') }}{% endif %}{% endfor %}{{ ns.n }}",
		"{% macro f(x, n=3) %}{% if n > 0 %}[{{ f(x, n - 1) }}]{% else %}{{ x|tojson }}{% endif %}{% endmacro %}{{ f(messages[0]) }}{{ strftime_now('%d %b %Y') }}",
		"{{ raise_exception('only user and assistant roles') if messages|length > 9 else date_string|upper }}",
	}
	for _, group := range [][]attack{recursionAttacks(), timeAttacks(), memoryAttacks(), arithmeticAttacks(), structureAttacks(), sourceAttacks()} {
		for _, a := range group {
			if len(a.src) < 4096 {
				seeds = append(seeds, a.src)
			}
		}
	}
	for _, s := range seeds {
		f.Add(s, "Hello <think>x</think> world")
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		fuzzguard.Run(func() {
			tpl, err := newChatTemplate(src)
			if err != nil {
				return
			}
			msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: content}, {Role: "assistant", Content: content}}
			_, _ = tpl.render(msgs, map[string]any{"add_generation_prompt": true, "bos_token": "<s>"}, "")
		})
	})
}

// FuzzLoadDir: a model repository's tokenizer_config.json and
// chat_template.jinja (none when empty), both the fuzzer's, beside a real
// tokenizer.json (the Qwen3-like or the Tekken test tokenizer), through Load
// and, when it loads, a conversation rendered and encoded as the trainer
// does: an error naming the file, never a panic, a hang or gigabytes
// (fuzzguard). The seeds are the test tokenizers' own files.
func FuzzLoadDir(f *testing.F) {
	sources := []string{filepath.Join("testdata", "qwen3-tiny"), filepath.Join("testdata", "tekken")}
	for i, src := range sources {
		var files [2][]byte
		for j, name := range []string{"tokenizer_config.json", "chat_template.jinja"} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				f.Fatal(err)
			}
			files[j] = b
		}
		f.Add(uint8(i), files[0], files[1], "Hello <think>x</think> world", true)
		f.Add(uint8(i), files[0], []byte(nil), "<|im_end|>", false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, which uint8, cfg, template []byte, content string, thinking bool) {
		tj, err := os.ReadFile(filepath.Join(sources[int(which)%len(sources)], "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "chat_template.jinja"))
		files := map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": cfg}
		if len(template) > 0 {
			files["chat_template.jinja"] = template
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fuzzguard.Run(func() {
			tk, err := Load(dir)
			if err != nil {
				if !strings.Contains(err.Error(), dir) {
					t.Fatalf("the error does not name the file: %v", err)
				}
				return
			}
			msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: content}, {Role: "assistant", Content: content}}
			if _, ids, err := tk.EncodeChat(msgs, ChatOptions{AddGenerationPrompt: !thinking, EnableThinking: &thinking}); err == nil {
				tk.Decode(ids, true)
			}
		})
	})
}
