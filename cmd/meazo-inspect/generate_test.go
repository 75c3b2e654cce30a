package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
)

// charRune is the character of token id (≥ 3) in charTokenizer's
// vocabulary.
func charRune(id int) rune { return rune(0x4E00 + id) }

// charText is the text of ids in charTokenizer's vocabulary.
func charText(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteRune(charRune(id))
	}
	return b.String()
}

// writeCharTokenizer writes into dir a SentencePiece-style tokenizer.json
// without merges whose tokens are single characters, one per id of a
// vocabulary of n (ids 0-2: <unk>, <s>, </s>), so that any list of ids
// from 3 on is the encoding of its characters (charText): a text for the
// fixtures' prompts, whose greedy continuations transformers made from
// their ids. eos names the eos_token.
func writeCharTokenizer(t *testing.T, dir string, n int, eos string) {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	var added []map[string]any
	for id, s := range []string{"<unk>", "<s>", "</s>"} {
		added = append(added, map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	for id := 3; id < n; id++ {
		vocab[string(charRune(id))] = id
	}
	tok := map[string]any{"version": "1.0", "added_tokens": added, "normalizer": nil, "pre_tokenizer": nil, "post_processor": nil,
		"decoder": map[string]any{"type": "Fuse"},
		"model":   map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": false, "vocab": vocab, "merges": []any{}}}
	cfg := map[string]any{"bos_token": "<s>", "eos_token": eos, "unk_token": "<unk>"}
	for name, v := range map[string]any{"tokenizer.json": tok, "tokenizer_config.json": cfg} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// generated is one line of generate's text output.
type generated struct {
	Prompt    string `json:"prompt"`
	PromptIDs []int  `json:"prompt_ids"`
	IDs       []int  `json:"ids"`
	Text      string `json:"text"`
}

// runGenerateText runs generate with args and reads its JSON lines.
func runGenerateText(t *testing.T, stdin string, args ...string) []generated {
	t.Helper()
	var stdout bytes.Buffer
	if err := runGenerate(append([]string{"--backend", "cpu"}, args...), strings.NewReader(stdin), &stdout); err != nil {
		t.Fatal(err)
	}
	var out []generated
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var g generated
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		out = append(out, g)
	}
	return out
}

// untilStop is ids up to and including the first of stops: a greedy
// generation that stops there (the tokens before a stop do not depend on it).
func untilStop(ids, stops []int) []int {
	for i, id := range ids {
		if slices.Contains(stops, id) {
			return ids[:i+1]
		}
	}
	return ids
}

// TestGenerateTextMatchesHF: text prompts on llama-tiny (with
// writeCharTokenizer, whose text of the fixture's prompts encodes to their
// ids) give transformers' greedy tokens for those ids: both prompts in one
// left-padded batch (the reference's genbatch_new_tokens) and one at a time
// (genN_new_tokens); and stop at the tokenizer's eos_token as evaluation
// does (there a token of the reference's continuation), the text without it.
func TestGenerateTextMatchesHF(t *testing.T) {
	src := fixture.Dir(t, "fixtures", "models", "llama-tiny")
	ref := fixture.OpenRef(t, filepath.Join(src, "reference.safetensors"))
	prompts := [][]int{ref.Ints("gen0_prompt"), ref.Ints("gen1_prompt")}
	batch := rows(ref.Ints("genbatch_new_tokens"), 8)
	single := [][]int{ref.Ints("gen0_new_tokens"), ref.Ints("gen1_new_tokens")}
	stopAt := single[0][3] // the fourth token of the first continuation
	for _, tc := range []struct {
		name, batchSize string
		eos             int // the tokenizer's eos_token (2: </s>, the config's eos_token_id too)
		want            [][]int
	}{
		{"one batch", "8", 2, batch},
		{"one at a time", "1", 2, single},
		{"stop at the tokenizer's eos", "1", stopAt, [][]int{untilStop(single[0], []int{stopAt, 2}), untilStop(single[1], []int{stopAt, 2})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyModel(t, src)
			eos := "</s>"
			if tc.eos != 2 {
				eos = string(charRune(tc.eos))
			}
			writeCharTokenizer(t, dir, 512, eos)
			got := runGenerateText(t, "", "--model", dir, "--prompt", charText(prompts[0]), "--prompt", charText(prompts[1]),
				"--max-new-tokens", "8", "--batch-size", tc.batchSize)
			if len(got) != 2 {
				t.Fatalf("%d output lines, want 2", len(got))
			}
			for i, g := range got {
				want := tc.want[i]
				text := want
				if n := len(want); want[n-1] == tc.eos {
					text = want[:n-1]
				}
				if !slices.Equal(g.PromptIDs, prompts[i]) || g.Prompt != charText(prompts[i]) {
					t.Errorf("prompt %d: read %q %v, want the fixture's %v", i, g.Prompt, g.PromptIDs, prompts[i])
				}
				if !slices.Equal(g.IDs, want) || g.Text != charText(text) {
					t.Errorf("prompt %d: %v %q, want transformers' %v %q", i, g.IDs, g.Text, want, charText(text))
				}
			}
		})
	}
}

// copyModel copies a fixture model's config and weights into a new
// directory, for a tokenizer to be written beside them.
func copyModel(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	copyFiles(t, src, dir, "config.json", "generation_config.json", "model.safetensors")
	return dir
}

// copyFiles copies the named files from the directory src into dst.
func copyFiles(t *testing.T, src, dst string, names ...string) {
	t.Helper()
	for _, f := range names {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGenerateTextMatchesIDs: the text paths give what the ids path gives
// for the same ids, left-padded the same, with the same stop ids: --prompt
// with a character tokenizer, and --messages with Qwen3's chat template
// (tokenizer/testdata/qwen3-tiny on a random model of its vocabulary),
// whose prompts are the chat command's renders with the generation prompt
// and without thinking, and whose stops are the tokenizer's end-of-turn
// ids and the config's eos.
func TestGenerateTextMatchesIDs(t *testing.T) {
	chars := t.TempDir()
	cfg := &model.Config{Architecture: "LlamaForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 5e5, TieEmbeddings: true, BOSTokenID: 1, EOSTokenIDs: []int{2}}
	if err := model.WriteRandom(chars, cfg, 7, 0.3); err != nil {
		t.Fatal(err)
	}
	writeCharTokenizer(t, chars, 64, "</s>")
	qwen := qwenChatModel(t)
	conversations := `{"messages": [{"role": "user", "content": "What is the capital of France?"}]}
{"messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}], "enable_thinking": true}
`
	for _, tc := range []struct {
		name, model, stdin, stop string
		args                     []string
	}{
		{"--prompt", chars, "", "2", []string{"--prompt", charText([]int{5, 9, 33}), "--prompt", charText([]int{40, 41, 42, 43, 44, 60})}},
		{"--messages", qwen, conversations, "768,770,2", []string{"--messages", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runGenerateText(t, tc.stdin, append([]string{"--model", tc.model, "--max-new-tokens", "12"}, tc.args...)...)
			var prompts [][]int
			for _, g := range got {
				prompts = append(prompts, g.PromptIDs)
			}
			seqs := generateIDsRun(t, tc.model, prompts, tc.stop)
			for i, g := range got {
				if !slices.Equal(g.IDs, seqs[i]) {
					t.Errorf("prompt %d: text path %v, ids path %v", i, g.IDs, seqs[i])
				}
			}
			if tc.model == qwen {
				sameAsChat(t, qwen, conversations, got)
			}
		})
	}
}

// generateIDsRun runs generate --input on prompts left-padded (pad 0,
// masked) with --stop.
func generateIDsRun(t *testing.T, dir string, prompts [][]int, stop string) [][]int {
	t.Helper()
	width := 0
	for _, p := range prompts {
		width = max(width, len(p))
	}
	var ids, mask [][]int
	for _, p := range prompts {
		pad := width - len(p)
		ids = append(ids, append(make([]int, pad), p...))
		mask = append(mask, append(make([]int, pad), slices.Repeat([]int{1}, len(p))...))
	}
	in := filepath.Join(t.TempDir(), "in.json")
	b, _ := json.Marshal(map[string]any{"input_ids": ids, "attention_mask": mask})
	os.WriteFile(in, b, 0o644)
	var stdout bytes.Buffer
	if err := runGenerate([]string{"--backend", "cpu", "--model", dir, "--input", in, "--max-new-tokens", "12", "--stop", stop}, nil, &stdout); err != nil {
		t.Fatal(err)
	}
	var out struct{ Sequences [][]int }
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Sequences
}

// qwenChatModel writes a random Qwen3 model of tokenizer/testdata/qwen3-tiny's
// vocabulary (768 tokens and 5 added) with that tokenizer and chat template.
func qwenChatModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := &model.Config{Architecture: "Qwen3ForCausalLM", VocabSize: 773, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
		BOSTokenID: -1, EOSTokenIDs: []int{2}}
	if err := model.WriteRandom(dir, cfg, 11, 0.3); err != nil {
		t.Fatal(err)
	}
	copyFiles(t, filepath.Join("..", "..", "tokenizer", "testdata", "qwen3-tiny"), dir, "tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
	return dir
}

// sameAsChat: generate read the conversations as the chat command renders
// them with the generation prompt, without thinking unless a line asks
// for it (evaluation's rendering).
func sameAsChat(t *testing.T, dir, conversations string, got []generated) {
	t.Helper()
	var lines []any
	for _, l := range strings.Split(strings.TrimSpace(conversations), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		m["add_generation_prompt"] = true
		if _, ok := m["enable_thinking"]; !ok {
			m["enable_thinking"] = false
		}
		lines = append(lines, m)
	}
	for i, r := range runLines(t, "chat", dir, lines) {
		var text string
		var ids []int
		json.Unmarshal(r["rendered"], &text)
		json.Unmarshal(r["ids"], &ids)
		if got[i].Prompt != text || !slices.Equal(got[i].PromptIDs, ids) {
			t.Errorf("conversation %d: generate read %q, chat renders %q", i, got[i].Prompt, text)
		}
		if want := "<|im_start|>assistant\n"; !strings.Contains(text, want) {
			t.Errorf("conversation %d: no generation prompt %q in %q", i, want, text)
		}
	}
	if strings.Contains(got[1].Prompt, "<think>\n\n</think>") || !strings.Contains(got[0].Prompt, "<think>\n\n</think>") {
		t.Errorf("thinking: off by default (an empty think block), on where asked: %q, %q", got[0].Prompt, got[1].Prompt)
	}
}

// TestGenerateTextErrors: prompts given no way or two ways, and prompts
// with nothing to continue, are refused, naming what is wrong.
func TestGenerateTextErrors(t *testing.T) {
	dir := qwenChatModel(t)
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, []byte("\n\n"), 0o644)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no prompt", "", nil, "give the prompts one way"},
		{"two ways", "", []string{"--prompt", "a", "--input", "in.json"}, "give the prompts one way"},
		{"a stray argument", "", []string{"--prompt", "a", "b"}, `unexpected argument "b"`},
		{"batch size 0", "", []string{"--prompt", "a", "--batch-size", "0"}, "--batch-size must be positive"},
		{"an empty prompt", "", []string{"--prompt", ""}, "encodes to no tokens"},
		{"no conversation", "", []string{"--messages", empty}, "holds no conversation"},
		{"no generation prompt", `{"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false}`,
			[]string{"--messages", "-"}, `line 1: "add_generation_prompt": false`},
		{"a message without a role", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n{\"messages\": [{\"content\": \"x\"}]}",
			[]string{"--messages", "-"}, `line 2: field "messages[0].role": missing`},
		{"a bad stop id", "", []string{"--prompt", "a", "--stop", "7,x"}, `--stop: "x" is not a token id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runGenerate(append([]string{"--backend", "cpu", "--model", dir}, tc.args...), strings.NewReader(tc.stdin), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that says %q", err, tc.want)
			}
		})
	}
}

// TestGenerateTokenizerPastVocab: a text prompt on a model whose tokenizer
// has ids past its embedding (the tiny Ministral-3, vocab 512, with the
// tekken fixture's 1,651-id tokenizer) is refused as meazo-train and
// meazo-eval refuse it, naming the tokenizer and the vocabulary, before any
// prompt runs; it said only that an input id was outside the vocabulary.
func TestGenerateTokenizerPastVocab(t *testing.T) {
	dir := t.TempDir()
	copyFiles(t, "../../model/testdata/ministral3/ministral3-tiny/bf16", dir, "config.json", "model.safetensors")
	copyFiles(t, "../../tokenizer/testdata/tekken", dir, "tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
	for _, args := range [][]string{{"--prompt", "hello"}, {"--messages", "-"}} {
		err := runGenerate(append([]string{"--backend", "cpu", "--model", dir, "--max-new-tokens", "1"}, args...),
			strings.NewReader(`{"messages": [{"role": "user", "content": "hello"}]}`+"\n"), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "the tokenizer has ids up to 1650 but the model's vocab_size is 512") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
