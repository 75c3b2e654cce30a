package data

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tokenizer"
)

// mistralV03 loads Mistral-7B-Instruct-v0.3's real tokenizer files, kept
// gzipped by the tokenizer package's tests.
func mistralV03(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer.model", "tokenizer_config.json"} {
		f, err := os.Open(filepath.Join("..", "tokenizer", "testdata", "spm", "mistral-v0.3", name+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSystemTurnOnlyWhenLast: Mistral-7B-Instruct-v0.3's template writes the
// system message only into a user turn that ends the conversation, so an
// answered conversation renders without it. The training text is then the
// generation prompt the model is asked at evaluation (with the system
// message) followed by the assistant turn as the template writes it, and
// only the answer and its </s> are supervised.
func TestSystemTurnOnlyWhenLast(t *testing.T) {
	tok := mistralV03(t)
	e := &Encoder{Tok: tok}
	ex := Example{ID: "s1", Task: SST2, Sentence: "a gorgeous film", Label: 1}

	// The template as it is: the answered render has no system message.
	answered, err := tok.RenderChat(append(Prompt(ex), tokenizer.Message{Role: "assistant", Content: SST2Target(1)}), tokenizer.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(answered, SST2System) {
		t.Fatalf("the template now writes the system message into an answered conversation: %q", answered)
	}

	promptText, promptIDs, err := e.EncodePrompt(ex)
	if err != nil {
		t.Fatal(err)
	}
	wantPrompt := "<s>[INST] " + SST2System + "\n\nSentence: a gorgeous film[/INST]"
	if promptText != wantPrompt {
		t.Fatalf("prompt %q, want %q", promptText, wantPrompt)
	}
	enc, err := e.Encode(ex)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantPrompt + " " + SST2Target(1) + "</s>"; enc.Text != want {
		t.Errorf("text %q, want %q", enc.Text, want)
	}
	if enc.PromptLen != len(promptIDs) || !slices.Equal(enc.IDs[:len(promptIDs)], promptIDs) {
		t.Errorf("the prompt's %d ids are not the first of the example's (PromptLen %d)", len(promptIDs), enc.PromptLen)
	}
	if !slices.Equal(enc.IDs, tok.Encode(enc.Text, false)) {
		t.Errorf("ids are not the text's")
	}
	var supervised []int
	for _, l := range enc.Labels {
		if l != IgnoreIndex {
			supervised = append(supervised, l)
		}
	}
	if !slices.Equal(supervised, enc.IDs[enc.PromptLen:]) || !slices.Contains(tok.StopIDs(), supervised[len(supervised)-1]) {
		t.Errorf("supervised %v, want the answer's ids through </s>: %v", supervised, enc.IDs[enc.PromptLen:])
	}
	if got := tok.Decode(supervised, false); !strings.Contains(got, SST2Target(1)) {
		t.Errorf("supervised tokens decode to %q", got)
	}
}

// TestThinkInAnswer: Qwen3's template renders the text before a "</think>"
// in the answer as reasoning, so the answered conversation does not start
// with the generation prompt (thinking off: an empty think block); the
// error says that the answer's "</think>" is why, not only that the
// template's renders disagree.
func TestThinkInAnswer(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "tokenizer", "testdata", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	e := &Encoder{Tok: tok}
	own := &OwnTask{Instruction: "Answer briefly."}
	for _, ex := range []Example{
		{ID: "line 2", Task: Generation, Prompt: "Capital of France?", Completion: "<think>It is Paris.</think>Paris"},
		{ID: "line 3", Task: Generation, Prompt: "Capital of France?", Completion: "It is Paris.</think>Paris", Own: own},
	} {
		_, err := e.Encode(ex)
		if err == nil || !strings.Contains(err.Error(), `example `+ex.ID+`: the chat template's generation prompt is not a prefix`) ||
			!strings.Contains(err.Error(), `the answer holds "</think>"`) {
			t.Errorf("%q: %v, want the render's error with the answer's </think> as its cause", ex.Completion, err)
		}
		if !errors.Is(err, ErrAnswer) {
			t.Errorf("%q: %v is not ErrAnswer: a run would stop instead of leaving the example out", ex.Completion, err)
		}
	}
	// A "<think>" alone is text like any other.
	if _, err := e.Encode(Example{ID: "line 4", Task: Generation, Prompt: "Tag?", Completion: "<think>"}); err != nil {
		t.Errorf("an answer holding <think> alone: %v", err)
	}
}

// TestInstructionDropped: a chat template without a system turn (the
// built-in demo's) leaves task.instruction out of every prompt it renders,
// so that the model never reads it, and InstructionDropped says so; Qwen3's
// template writes it, Mistral-7B-Instruct-v0.3's into the last user turn.
func TestInstructionDropped(t *testing.T) {
	qwen, err := tokenizer.Load("../tokenizer/testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "qwen3-tiny", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	systemless := "{%- for message in messages %}{%- if message.role != 'system' %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}" +
		"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(systemless), 0o644); err != nil {
		t.Fatal(err)
	}
	bare, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const instruction = "Classify the review. Answer negative or positive."
	for _, c := range []struct {
		name        string
		enc         *Encoder
		instruction string
		want        bool
	}{
		{"qwen3", &Encoder{Tok: qwen}, instruction, false},
		{"mistral v0.3 (in the last user turn)", &Encoder{Tok: mistralV03(t)}, instruction, false},
		{"no system turn", &Encoder{Tok: bare}, instruction, true},
		{"no system turn, padded", &Encoder{Tok: bare}, "  " + instruction + "\n", true},
		{"no instruction", &Encoder{Tok: bare}, "", false},
		{"mezo format", &Encoder{Tok: bare, Format: FormatMeZO}, instruction, false},
	} {
		got, err := c.enc.InstructionDropped(c.instruction)
		if err != nil || got != c.want {
			t.Errorf("%s: InstructionDropped = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
