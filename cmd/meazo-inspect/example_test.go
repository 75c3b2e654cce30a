package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

func TestExampleCommand(t *testing.T) {
	dir := fixture.Dir(t)
	for _, c := range []struct {
		model, task, data string
		index             int
		want              string
	}{
		{"llama3.2", "sst2", "data/sst2/dev.tsv", 1, "Sentiment: terrible<|eot_id|>"},
		{"qwen3", "squad", "data/squad/dev-v1.1.json", 0, "Answer: Denver Broncos<|im_end|>"},
		{"qwen3", "xsum", "data/xsum/test_subset.jsonl", 0, "Summary: A new picture of the Queen to appear on coins has been unveiled.<|im_end|>"},
	} {
		var out bytes.Buffer
		err := runExample([]string{"--model", filepath.Join(dir, "fixtures/tokenizers", c.model), "--task", c.task,
			"--data", filepath.Join(dir, c.data), "--index", string(rune('0' + c.index))}, nil, &out)
		if err != nil {
			t.Fatalf("%s %s: %v", c.model, c.task, err)
		}
		if got := exampleSupervised(out.String()); got != c.want {
			t.Errorf("%s %s: supervised text %q, want %q", c.model, c.task, got, c.want)
		}
		if !strings.Contains(out.String(), "--- rendered text ---") {
			t.Errorf("no rendered text in output")
		}
	}
	// The date Llama-3's template prints: --date-string, as meazo-eval task
	// names it, or its older name --date.
	for _, flag := range []string{"--date-string", "--date"} {
		var out bytes.Buffer
		err := runExample([]string{"--model", filepath.Join(dir, "fixtures/tokenizers/llama3.2"), "--task", "sst2",
			"--data", filepath.Join(dir, "data/sst2/dev.tsv"), flag, "01 Jan 2025"}, nil, &out)
		if err != nil || !strings.Contains(out.String(), "Today Date: 01 Jan 2025") {
			t.Errorf("%s: %v\n%s", flag, err, out.String())
		}
	}
	// A classification on the user's own data: the instruction is the
	// system turn, the label string the supervised answer.
	own := filepath.Join(t.TempDir(), "own.jsonl")
	os.WriteFile(own, []byte(`{"text":"a superb cast","label":"positive"}`+"\n"), 0o644)
	var cls bytes.Buffer
	err := runExample([]string{"--model", filepath.Join(dir, "fixtures/tokenizers/qwen3"), "--task", "classification", "--data", own,
		"--labels", "[negative, positive]", "--instruction", "Classify the review."}, nil, &cls)
	if err != nil || exampleSupervised(cls.String()) != "positive<|im_end|>" ||
		!strings.Contains(cls.String(), "<|im_start|>system\nClassify the review.<|im_end|>\n<|im_start|>user\na superb cast<|im_end|>") {
		t.Errorf("classification: %v\n%s", err, cls.String())
	}
	if err := runExample([]string{"--model", "m", "--task", "sst2", "--data", own, "--labels", "[a, b]"}, nil, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--labels and --instruction are for tasks classification and generation") {
		t.Errorf("--labels on sst2: %v", err)
	}
	// A file of malformed rows says why it has no example.
	os.WriteFile(own, []byte("text,label\n"+`{"text":"a superb cast","label":"good"}`+"\n"), 0o644)
	err = runExample([]string{"--model", filepath.Join(dir, "fixtures/tokenizers/qwen3"), "--task", "classification", "--data", own,
		"--labels", "[negative, positive]"}, nil, io.Discard)
	if want := "--index 0, but the file has 0 well-formed examples (and 2 malformed rows, the first: " + own + ": line 1: "; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("malformed rows: %v, want …%s…", err, want)
	}
	var out bytes.Buffer
	err = runExample([]string{"--model", filepath.Join(dir, "fixtures/tokenizers/qwen3"), "--task", "sst2",
		"--data", filepath.Join(dir, "data/sst2/dev.tsv"), "--index", "5000"}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "872 well-formed examples") {
		t.Errorf("out-of-range index: %v", err)
	}
}

// TestHelp: every command's -h says what it does, what it reads, what it
// prints and an example (cli.CheckHelp); forward's names its input files.
func TestHelp(t *testing.T) {
	if err := commands.CheckHelp(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if status := commands.Exec([]string{"forward", "-h"}, nil, io.Discard, &stderr); status != 0 ||
		!strings.Contains(stderr.String(), "Reads:    --model DIR: an HF model directory (config.json, safetensors weights)") {
		t.Errorf("forward -h: status %d\n%s", status, stderr.String())
	}
}

// TestExampleMeZO: --format mezo shows what an OPT run (task.format mezo)
// trains on: MeZO's SST2Template, "{sentence.strip()} It was terrible|great",
// with OPT's BOS </s> first and the label word's tokens alone supervised;
// without it, a tokenizer with no chat template is refused naming --format
// mezo.
func TestExampleMeZO(t *testing.T) {
	dir := t.TempDir()
	vocab := map[string]int{"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "Ġ": 4} // Ġ: GPT-2's byte-level space
	for c := '!'; c <= '~'; c++ {
		vocab[string(c)] = len(vocab)
	}
	v, _ := json.Marshal(vocab)
	tc, _ := json.Marshal(map[string]any{"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>", "pad_token": "<pad>", "add_bos_token": true})
	files := map[string]string{"vocab.json": string(v), "merges.txt": "#version: 0.2\n", "tokenizer_config.json": string(tc),
		"sst2.tsv": "sentence\tlabel\nhide new secretions from the parental units \t0\na gripping , funny film \t1\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--model", dir, "--task", "sst2", "--data", filepath.Join(dir, "sst2.tsv"), "--index", "1"}
	var out bytes.Buffer
	if err := runExample(append(args, "--format", "mezo"), nil, &out); err != nil {
		t.Fatal(err)
	}
	_, text, _ := strings.Cut(out.String(), "--- rendered text ---\n")
	text, tokens, _ := strings.Cut(text, "\n--- tokens")
	if want := "a gripping , funny film It was great"; text != want {
		t.Errorf("rendered text %q, want %q", text, want)
	}
	if _, rows, _ := strings.Cut(tokens, "\n"); !strings.HasPrefix(rows, "      0       2 \"</s>\"\n") {
		t.Errorf("the first token is not OPT's BOS </s> (2), unsupervised:\n%s", rows)
	}
	if got := exampleSupervised(out.String()); got != " great" {
		t.Errorf("supervised text %q, want \" great\"\n%s", got, out.String())
	}
	if err := runExample(args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "takes --format mezo") {
		t.Errorf("format chat without a chat template: %v", err)
	}
	// SQuAD has no MeZO template: the message says so up front, not at the
	// example (named as if it were at fault), and the missing chat template
	// does not send the user to --format mezo, which is then refused.
	squad := filepath.Join(dir, "squad.json")
	if err := os.WriteFile(squad, []byte(`{"data": [{"title": "T", "paragraphs": [{"context": "Paris is in France.", "qas": [{"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sq := []string{"--model", dir, "--task", "squad", "--data", squad}
	if err := runExample(append(slices.Clone(sq), "--format", "mezo"), nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--format mezo has only SST-2's template (MeZO's), not task squad") {
		t.Errorf("squad with --format mezo: %v", err)
	}
	if err := runExample(sq, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "task squad is rendered with it") || strings.Contains(err.Error(), "takes --format mezo") {
		t.Errorf("squad without a chat template: %v, want that the task needs one", err)
	}
	if err := runExample(append(args, "--format", "alpaca"), nil, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown format "alpaca"`) {
		t.Errorf("--format alpaca: %v", err)
	}
}
