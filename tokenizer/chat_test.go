package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

type chatRecord struct {
	Model          string         `json:"model"`
	Task           string         `json:"task"`
	Example        int            `json:"example"`
	Variant        string         `json:"variant"`
	Messages       []Message      `json:"messages"`
	TemplateKwargs map[string]any `json:"template_kwargs"`
	Rendered       string         `json:"rendered"`
	IDs            []int          `json:"ids"`
	PromptIsPrefix *bool          `json:"prompt_is_token_prefix"`
	CompletionText *string        `json:"completion_text"`
	CompletionIDs  []int          `json:"completion_ids"`
}

// options turns a fixture's apply_chat_template keyword arguments into
// ChatOptions, checking that the special-token strings are the tokenizer's.
func (r chatRecord) options(t *testing.T, tk *Tokenizer) ChatOptions {
	t.Helper()
	var opt ChatOptions
	for k, v := range r.TemplateKwargs {
		switch k {
		case "add_generation_prompt":
			opt.AddGenerationPrompt = v.(bool)
		case "enable_thinking":
			b := v.(bool)
			opt.EnableThinking = &b
		case "date_string":
			opt.DateString = v.(string)
		case "bos_token", "eos_token", "pad_token":
			if id, ok := tk.TokenID(v.(string)); !ok || map[string]int{"bos_token": tk.bosID, "eos_token": tk.eosID, "pad_token": tk.padID}[k] != id {
				t.Fatalf("template kwarg %s=%q is not the tokenizer's", k, v)
			}
		default:
			t.Fatalf("unknown template kwarg %q", k)
		}
	}
	return opt
}

// TestChatRenders renders every public conversation (both models, all
// variants) and compares the text byte for byte and the ids exactly. Full
// conversations must also be their generation prompt plus the recorded
// completion, in text and in ids.
func TestChatRenders(t *testing.T) {
	for _, name := range models {
		t.Run(name, func(t *testing.T) {
			tk := model(t, name)
			recs := fixture.ReadJSONL[chatRecord](t, fixturePath(t, "ref", "public", name+".chat.jsonl"))
			type key struct {
				task    string
				example int
				suffix  string
			}
			prompts := map[key]chatRecord{}
			for _, r := range recs {
				if p, ok := strings.CutPrefix(r.Variant, "prompt"); ok {
					prompts[key{r.Task, r.Example, p}] = r
				}
			}
			variants := map[string]int{}
			for _, r := range recs {
				what := fmt.Sprintf("%s %s #%d %s", name, r.Task, r.Example, r.Variant)
				text, ids, err := tk.EncodeChat(r.Messages, r.options(t, tk))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if text != r.Rendered {
					t.Errorf("%s: rendered\n got  %q\n want %q", what, text, r.Rendered)
					continue
				}
				if !slices.Equal(ids, r.IDs) {
					t.Errorf("%s: ids\n got  %v\n want %v", what, ids, r.IDs)
					continue
				}
				variants[r.Variant]++
				if full, ok := strings.CutPrefix(r.Variant, "full"); ok && r.CompletionText != nil {
					p, ok := prompts[key{r.Task, r.Example, full}]
					if !ok {
						t.Fatalf("%s: no matching prompt record", what)
					}
					if p.Rendered+*r.CompletionText != text {
						t.Errorf("%s: prompt + completion_text != rendered", what)
					}
					if r.PromptIsPrefix != nil && *r.PromptIsPrefix && !slices.Equal(append(slices.Clone(p.IDs), r.CompletionIDs...), ids) {
						t.Errorf("%s: prompt ids + completion_ids != ids", what)
					}
				}
			}
			t.Logf("exact renders and ids per variant: %v (of %d records)", variants, len(recs))
		})
	}
}

// TestChatOptions checks the knobs the trainer pins: Llama's date and Qwen3's thinking switch.
func TestChatOptions(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be brief. "}, {Role: "user", Content: " Hi "}}
	llama := model(t, "llama3.2")
	s, err := llama.RenderChat(msgs, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if s != want {
		t.Errorf("llama default date:\n got  %q\n want %q", s, want)
	}
	s, _ = llama.RenderChat(msgs, ChatOptions{DateString: "03 Feb 2025"})
	if !strings.Contains(s, "Today Date: 03 Feb 2025\n") {
		t.Errorf("llama pinned date not used: %q", s)
	}

	qwen := model(t, "qwen3")
	off := false
	s, _ = qwen.RenderChat(msgs[1:], ChatOptions{AddGenerationPrompt: true, EnableThinking: &off})
	if want := "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; s != want {
		t.Errorf("qwen enable_thinking=false:\n got  %q\n want %q", s, want)
	}
	s, _ = qwen.RenderChat(msgs[1:], ChatOptions{AddGenerationPrompt: true})
	if want := "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n"; s != want {
		t.Errorf("qwen default thinking:\n got  %q\n want %q", s, want)
	}
}

// TestTemplateFeatures exercises what HF templates rely on beyond the two
// real ones: strftime_now, raise_exception, namespace(), loop controls and
// trim/lstrip_blocks.
func TestTemplateFeatures(t *testing.T) {
	cases := []struct{ name, src, want, wantErr string }{
		{"strftime_now", `{{ strftime_now("%d %b %Y|%Y-%m-%d|%B %A") }}`, "03 Feb 2025|2025-02-03|February Monday", ""},
		{"raise_exception", `{% if messages|length > 1 %}{{ raise_exception("only one message") }}{% endif %}`, "", "only one message"},
		{"raise_exception of 15 MB", `{{ raise_exception("é" * 7500000) }}`, "", `the template raised an error: éééé`},
		// The engine's error chain, without the Go structs it prints for each filter call.
		{"a filter's error", `{{ range(0, 10, 0)|list }}`, "", `filter list (line 1, column 20): invalid call to function`},
		{"an error under the output filter", `{{ messages[::0] }}`, "", `at line 1: filtered_expression(filtered_expression(messages[`},
		{"namespace", "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}", "2", ""},
		{"loop controls", "{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.role }}{% break %}{% endfor %}", "assistant", ""},
		{"trim and lstrip blocks", "{% for m in messages %}\n    {% if true %}\n{{ m.content }}\n    {% endif %}\n{% endfor %}\n", "a\nb\n", ""},
		{"reverse slice and string methods", "{% for m in messages[::-1] %}{{ m.content.upper().strip() }}{{ loop.index0 }}{% endfor %}", "B0A1", ""},
		// The engine panics on these: an error, not a crash.
		{"string formatting", `{{ '%s' % messages[0].content }}`, "", "chat template:"},
		{"modulo by zero", `{{ 5 % 0 }}`, "", "chat template:"},
		{"negative repeat is empty, as in Python", `{{ 'a' * -1 }}`, "", ""},
		// The parser panics on this one (found by fuzzing).
		{"test without a name", `{% if x is %}a{% endif %}`, "", "chat template does not parse"},
	}
	msgs := []Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpl, err := newChatTemplate(c.src)
			if err != nil && c.wantErr != "" && strings.Contains(err.Error(), c.wantErr) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.render(msgs, nil, "03 Feb 2025")
			if c.wantErr != "" {
				if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "&{<Token") {
					t.Fatalf("error %.300v (%d bytes), want one containing %q", err, len(fmt.Sprint(err)), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %q want %q", got, c.want)
			}
		})
	}
}

// TestConcurrentUse encodes and renders from many goroutines at once; run
// with -race to check the cache and the template engine.
func TestConcurrentUse(t *testing.T) {
	tk := model(t, "qwen3")
	text := "Zeroth-order fine-tuning estimates gradients from two forward passes; naïve café 12345 <think>ok</think>"
	want := tk.Encode(text, false)
	msgs := []Message{{Role: "user", Content: text}}
	wantChat, _ := tk.RenderChat(msgs, ChatOptions{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if got := tk.Encode(text, false); !slices.Equal(got, want) {
					t.Errorf("concurrent encode differs: %v", got)
					return
				}
				if got, err := tk.RenderChat(msgs, ChatOptions{}); err != nil || got != wantChat {
					t.Errorf("concurrent render differs: %q %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestMalformedFiles checks that broken inputs give an error naming the file and the field,
// of a line's length whatever the file holds.
func TestMalformedFiles(t *testing.T) {
	good := map[string]string{
		"tokenizer.json": `{"added_tokens":[{"id":5,"content":"<s>","special":true}],
			"normalizer":null,
			"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + jsonString(llama3SplitRegex) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},
			"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]},
			"decoder":{"type":"ByteLevel"},
			"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"c":4},"merges":["a b"],"ignore_merges":false}}`,
		"tokenizer_config.json": `{"bos_token":"<s>","eos_token":"<s>"}`,
		"chat_template.jinja":   `{% for m in messages %}{{ m.content }}{% endfor %}`,
	}
	cases := []struct {
		name, file, find, replace, wantField string
	}{
		{"valid", "", "", "", ""},
		{"bad json", "tokenizer.json", `"decoder"`, `"decoder`, "invalid JSON"},
		{"merge not in vocab", "tokenizer.json", `"a b"`, `"a z"`, "model.merges[0]"},
		{"merge not a pair", "tokenizer.json", `"a b"`, `"ab"`, "model.merges[0]"},
		{"unknown model", "tokenizer.json", `"type":"BPE"`, `"type":"WordPiece"`, "model.type"},
		{"a Unigram model", "tokenizer.json", `"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"c":4}`, `"type":"Unigram","vocab":[["a",-1.0]]`, `model.type: "Unigram" is not supported`},
		{"unknown regex", "tokenizer.json", `\\p{N}{1,3}`, `\\d+`, "pre_tokenizer: pretokenizers[0].pattern.Regex"},
		{"unknown normalizer", "tokenizer.json", `"normalizer":null`, `"normalizer":{"type":"NFKC"}`, "normalizer: type"},
		{"template token", "tokenizer.json", `{"id":"<s>","type_id":0}`, `{"id":"<x>","type_id":0}`, "post_processor: single[0].SpecialToken.id"},
		{"eos not a token", "tokenizer_config.json", `"eos_token":"<s>"`, `"eos_token":"</s>"`, "eos_token"},
		{"template syntax", "chat_template.jinja", `{% endfor %}`, `{% endfor`, "chat_template"},
		{"template the parser panics on", "chat_template.jinja", `{% for m in messages %}`, `{% if m is %}{% for m in messages %}`, "chat_template: chat template does not parse"},
		{"id far too large", "tokenizer.json", `"c":4`, `"c":1099511627776`, `model.vocab["c"]: id 1099511627776 outside`},
		{"ids far apart", "tokenizer.json", `"c":4`, `"c":16777215`, "model.vocab: ids run to 16777215 for 5 tokens"},
		{"two tokens one id", "tokenizer.json", `"c":4`, `"c":2`, `model.vocab: "ab" and "c" both have id 2`},
		{"added token on another token's id", "tokenizer.json", `{"id":5,"content":"<s>"`, `{"id":2,"content":"<s>"`, `added_tokens[0] ("<s>"): id 2 is model.vocab's "ab"`},
		{"added id far too large", "tokenizer.json", `{"id":5,"content":"<s>"`, `{"id":1099511627776,"content":"<s>"`, `added_tokens[0] ("<s>"): id 1099511627776 outside`},
		// A stranger's string of megabytes is quoted in part, with its length.
		{"added token of 1 MiB on another token's id", "tokenizer.json", `{"id":5,"content":"<s>"`, `{"id":2,"content":"<s>` + strings.Repeat("x", 1<<20) + `"`,
			`added_tokens[0] ("<s>xxxxxxxxxx` + strings.Repeat("x", 147) + `"… (1048579 bytes)): id 2 is model.vocab's "ab"`},
		{"model type of 1 MiB", "tokenizer.json", `"type":"BPE"`, `"type":"` + strings.Repeat("é", 1<<19) + `"`, `model.type: "ééééé`},
		{"merge of 1 MiB", "tokenizer.json", `"a b"`, `"a ` + strings.Repeat("z", 1<<20) + `"`, `zz"… (1048576 bytes): token not in model.vocab`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, content := range good {
				if f == c.file {
					if !strings.Contains(content, c.find) {
						t.Fatalf("test setup: %q not in %s", c.find, f)
					}
					content = strings.Replace(content, c.find, c.replace, 1)
				}
				if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tk, err := Load(dir)
			if c.file == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := tk.Encode("ab c", true); !slices.Equal(got, []int{5, 2, 3, 4}) {
					t.Errorf("tiny tokenizer: got %v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > 1000 {
				t.Fatalf("error of %d bytes, beginning %.300q", len(msg), msg)
			}
			if !strings.Contains(msg, filepath.Join(dir, c.file)) || !strings.Contains(msg, c.wantField) {
				t.Errorf("error %q should name %s and %q", msg, c.file, c.wantField)
			}
		})
	}
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
