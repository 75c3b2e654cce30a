package train

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/tokenizer"
)

// TestEncodeFirstIsSequential: encoding a split on every core gives what
// encoding it example by example gives, with and without a limit and with
// examples the length rule drops on either side of a chunk's end (run
// under -race, it also checks that the tokenizer and its chat template
// render concurrently without a data race).
func TestEncodeFirstIsSequential(t *testing.T) {
	dir, _ := demoConfig(t, 2)
	tok, err := tokenizer.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	exs, _, err := data.ReadAll(filepath.Join(dir, "data", "train.tsv"), data.SST2, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for len(exs) < 1300 { // more than two chunks
		exs = append(exs, exs...)
	}
	for i := range exs {
		exs[i].ID = fmt.Sprint(i)
	}
	enc := &data.Encoder{Tok: tok}
	noStop := func(string) error { return nil }
	var lengths []int
	for _, ex := range exs {
		e, err := enc.Encode(ex)
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, len(e.IDs))
	}
	slices.Sort(lengths)
	median := lengths[len(lengths)/2] // a rule that drops about half
	for _, tc := range []struct{ max, limit int }{{0, 0}, {0, 700}, {median, 0}, {median, 600}} {
		rule := lengthRule{max: tc.max, name: "task.max_length"}
		got, err := encodeFirst(exs, enc, rule, tc.limit, 0, false, "train", io.Discard, noStop)
		if err != nil {
			t.Fatal(err)
		}
		var want []data.Sequence
		for _, ex := range exs {
			if tc.limit > 0 && len(want) >= tc.limit {
				break
			}
			e, err := enc.Encode(ex)
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.Sequence()
			if err != nil {
				t.Fatal(err)
			}
			if !rule.tooLong(ex, len(e.IDs)) {
				want = append(want, s)
			}
		}
		if len(want) == 0 || len(want) == len(exs) && tc.max > 0 {
			t.Fatalf("max %d: the rule drops %d of %d: not a test of dropping", tc.max, len(exs)-len(want), len(exs))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("max %d, limit %d: %d examples encoded, want the sequential loop's %d (or other ones)", tc.max, tc.limit, len(got), len(want))
		}
	}
}

// TestEncodeFirstLeavesOutUnrenderedAnswers: an example whose answer the
// chat template cannot render after the model's prompt (Qwen3's template
// and an answer holding "</think>") is left out of its split with a
// warning naming it, as a malformed row is, and stops the run under
// task.strict or when it leaves nothing.
func TestEncodeFirstLeavesOutUnrenderedAnswers(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("..", "tokenizer", "testdata", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	enc := &data.Encoder{Tok: tok}
	ex := func(id, completion string) data.Example {
		return data.Example{ID: id, Task: data.Generation, Prompt: "Capital of France?", Completion: completion}
	}
	exs := []data.Example{ex("line 1", "Paris"), ex("line 2", "It is Paris.</think>Paris"), ex("line 3", "Lyon")}
	noStop := func(string) error { return nil }
	var log strings.Builder
	got, err := encodeFirst(exs, enc, lengthRule{}, 0, 0, false, "train", &log, noStop)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d examples, %v; want the other two", len(got), err)
	}
	if !strings.Contains(log.String(), `warning: train split: left out 1: ids "line 2", whose answers the chat template cannot render`) {
		t.Errorf("log:\n%s", log.String())
	}
	if _, err := encodeFirst(exs, enc, lengthRule{}, 0, 0, true, "train", io.Discard, noStop); err == nil || !strings.Contains(err.Error(), "example line 2") {
		t.Errorf("task.strict: %v, want the example's error", err)
	}
	if _, err := encodeFirst(exs[1:2], enc, lengthRule{}, 0, 0, false, "train", io.Discard, noStop); err == nil || !strings.Contains(err.Error(), "every example left out") {
		t.Errorf("nothing left: %v", err)
	}
}

// TestFitRouge: a test example of a ROUGE-scored task with a reference
// past ROUGE's cap is left out with a warning naming it before anything is
// trained (the evaluation at the end failed on it); other tasks, and
// examples within the cap, are kept.
func TestFitRouge(t *testing.T) {
	long := strings.Repeat("w ", eval.MaxRougeTokens+1)
	exs := []data.Example{
		{ID: "line 1", Task: data.Generation, Prompt: "p", Completion: "short"},
		{ID: "line 2", Task: data.Generation, Prompt: "p", Completion: "short", References: []string{long}},
		{ID: "line 3", Task: data.Generation, Prompt: "p", Completion: strings.Repeat("w", eval.MaxRougeTokens+10)}, // one token
	}
	var log strings.Builder
	got, err := fitRouge("test", data.Generation, exs, &log)
	if err != nil || len(got) != 2 || got[0].ID != "line 1" || got[1].ID != "line 3" {
		t.Fatalf("kept %v, %v; want lines 1 and 3", got, err)
	}
	if !strings.Contains(log.String(), `warning: test split: 1: ids "line 2" skipped, a reference longer than ROUGE's cap`) {
		t.Errorf("log: %s", log.String())
	}
	if _, err := fitRouge("test", data.XSum, []data.Example{{ID: "0", Task: data.XSum, Summary: long}}, io.Discard); err == nil {
		t.Error("XSum with every reference too long: no error")
	}
	if got, err := fitRouge("test", data.SQuAD, []data.Example{{ID: "0", Task: data.SQuAD, Answers: []string{long}}}, io.Discard); err != nil || len(got) != 1 {
		t.Errorf("SQuAD (not scored by ROUGE): %v, %v", got, err)
	}
}

// TestCheckChatTemplateTask: a tokenizer without a chat template is sent to
// task.format mezo for SST-2 only; for SQuAD, XSum and the generation tasks,
// which format mezo refuses, the error says that the task needs a template.
func TestCheckChatTemplateTask(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "tokenizer", "testdata", "qwen3-tiny")
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} { // not chat_template.jinja
		b, err := os.ReadFile(filepath.Join(src, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkChatTemplate(tok, data.FormatMeZO, data.SST2, "task.format mezo"); err != nil {
		t.Errorf("sst2 in format mezo: %v", err)
	}
	if err := checkChatTemplate(tok, data.FormatChat, data.SST2, "task.format mezo"); err == nil || !strings.Contains(err.Error(), "takes task.format mezo") {
		t.Errorf("sst2: %v, want the fix task.format mezo", err)
	}
	for _, task := range []data.Task{data.SQuAD, data.XSum, data.Generation} {
		err := checkChatTemplate(tok, data.FormatChat, task, "task.format mezo")
		if err == nil || !strings.Contains(err.Error(), "task "+string(task)+" is rendered with it") || strings.Contains(err.Error(), "takes task.format mezo") {
			t.Errorf("%s: %v, want that the task needs a chat template", task, err)
		}
	}
}
