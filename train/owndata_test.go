package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
)

// The tasks on the user's own data (classification, generation), trained
// end to end on the demo's model and tokenizer, and a classification that
// spells out SST-2's conversation scored as SST-2 is, bit for bit.

// writeJSONL writes one JSON object a line.
func writeJSONL(t *testing.T, path string, rows []map[string]any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoRows converts the demo's synthetic sentiment TSV (name: train, dev)
// into rows of a task on the user's own data, row(i, example) each, in a
// file named after name and tag.
func demoRows(t *testing.T, dir, name, tag string, row func(int, data.Example) map[string]any) string {
	t.Helper()
	exs, _, err := data.ReadAll(filepath.Join(dir, "data", name+".tsv"), data.SST2, data.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for i, ex := range exs {
		rows = append(rows, row(i, ex))
	}
	out := filepath.Join(dir, "data", name+"-"+tag+".jsonl")
	writeJSONL(t, out, rows)
	return out
}

// TestOwnDataEndToEnd trains each task on the user's own data a few steps
// with each kind of trained parameters (LoRA, prompt tuning, the model's
// own weights), and checks the run and its test metrics.
func TestOwnDataEndToEnd(t *testing.T) {
	dir, cfg := demoConfig(t, 3)
	words := data.SST2LabelWords
	// Classification: the label by string on even rows, by index on odd ones.
	classify := func(i int, ex data.Example) map[string]any {
		r := map[string]any{"text": ex.Sentence, "label": ex.Label}
		if i%2 == 0 {
			r["label"] = words[ex.Label]
		}
		return r
	}
	// Generation: answer the label word; "it was <word>" also scores as right.
	generate := func(i int, ex data.Example) map[string]any {
		return map[string]any{"id": i, "prompt": "Review: " + ex.Sentence, "completion": words[ex.Label], "references": []string{"it was " + words[ex.Label]}}
	}
	files := map[string][2]string{}
	for task, row := range map[string]func(int, data.Example) map[string]any{"classification": classify, "generation": generate} {
		files[task] = [2]string{demoRows(t, dir, "train", task, row), demoRows(t, dir, "dev", task, row)}
	}
	const instruction = "Say whether the review is great or terrible."
	for _, tc := range []struct {
		task, kind, instruction string
		want                    []string // the test metrics
	}{
		{"classification", "lora", "", []string{"accuracy"}},
		{"classification", "prompt", instruction, []string{"accuracy"}},
		{"classification", "full", instruction, []string{"accuracy"}},
		{"generation", "lora", instruction, []string{"exact_match", "f1", "rouge1", "rouge2", "rougeL", "rougeLsum"}},
		{"generation", "prompt", instruction, []string{"exact_match", "f1", "rouge1", "rouge2", "rougeL", "rougeLsum"}},
		{"generation", "full", "", []string{"exact_match", "f1", "rouge1", "rouge2", "rougeL", "rougeLsum"}},
	} {
		name := tc.task + "-" + tc.kind
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			set := []string{"task.name=" + tc.task, "task.train=" + files[tc.task][0], "task.test=" + files[tc.task][1],
				"task.instruction=" + tc.instruction, "adapter.kind=" + tc.kind, "adapter.virtual_tokens=4",
				"train.eval_every=3", "train.checkpoint_every=0", "task.max_train=64", "task.max_validation=8", "task.max_test=6",
				"eval.base=true", "output.dir=" + out}
			if tc.task == "classification" {
				set = append(set, "task.labels=[terrible, great]")
			} else {
				set = append(set, "eval.max_new_tokens=4")
			}
			if tc.kind == "full" {
				set = append(set, "optimizer.lr=1e-3")
			}
			s, err := Run(Options{ConfigPath: cfg, Overrides: set})
			if err != nil {
				t.Fatal(err)
			}
			if s.Diverged || s.StepsDone != 3 || s.BestValLoss == nil || !(*s.BestValLoss > 0) {
				t.Fatalf("summary: %+v", s)
			}
			for _, which := range []string{"best", "last", "base"} {
				got := slices.Sorted(maps.Keys(s.Test[which]))
				if !slices.Equal(got, slices.Sorted(slices.Values(tc.want))) {
					t.Errorf("test %s metrics %v, want %v", which, got, tc.want)
				}
				top := 100.0
				if tc.task == "classification" {
					top = 1
				}
				for k, v := range s.Test[which] {
					if !(v >= 0 && v <= top) {
						t.Errorf("test %s %s = %v, want in [0, %g]", which, k, v, top)
					}
				}
			}
			b, err := os.ReadFile(filepath.Join(out, "config.yaml"))
			if err != nil || strings.Contains(string(b), "labels:") != (tc.task == "classification") {
				t.Errorf("config.yaml (%v) records labels: %v, want only a classification's:\n%s", err, strings.Contains(string(b), "labels:"), b)
			}
		})
	}
}

// useChatMLWithSystem gives the model in dir chatMLWithSystem as its chat
// template.
func useChatMLWithSystem(t *testing.T, dir string) {
	t.Helper()
	tc := filepath.Join(dir, "tokenizer_config.json")
	var tokCfg map[string]any
	b, _ := os.ReadFile(tc)
	if err := json.Unmarshal(b, &tokCfg); err != nil {
		t.Fatal(err)
	}
	tokCfg["chat_template"] = chatMLWithSystem
	b, _ = json.Marshal(tokCfg)
	if err := os.WriteFile(tc, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chatMLWithSystem is ChatML with its system turn: the demo's template
// leaves the system turn out, which would hide where an instruction goes.
const chatMLWithSystem = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

// TestClassificationIsSST2: the demo's sentiment data written as a
// classification's JSON Lines, with SST-2's instruction (its system
// prompt), its user turn ("Sentence: " and the sentence) and its answers
// ("Sentiment: terrible", "Sentiment: great") as the labels, trains and
// scores as SST-2 does on the TSV, to the bit: the same split, the same
// renders, the same supervised tokens, the same label spans scored. With the
// bare label words as labels the conversation is not SST-2's (it answers
// "great", not "Sentiment: great", and the text is not prefixed), so its
// numbers differ; this is the rendering that can be made identical.
func TestClassificationIsSST2(t *testing.T) {
	dir, cfg := demoConfig(t, 8)
	useChatMLWithSystem(t, filepath.Join(dir, "model"))
	asSST2 := func(i int, ex data.Example) map[string]any {
		return map[string]any{"id": ex.ID, "text": "Sentence: " + ex.Sentence, "label": ex.Label}
	}
	train, dev := demoRows(t, dir, "train", "sst2", asSST2), demoRows(t, dir, "dev", "sst2", asSST2)
	labels, _ := json.Marshal([]string{data.SST2Target(0), data.SST2Target(1)})
	common := []string{"train.eval_every=4", "train.checkpoint_every=0", "train.batch_size=4", "task.max_train=200", "task.max_validation=8",
		"task.max_test=16", "eval.base=true", "adapter.virtual_tokens=4"}
	for _, kind := range []string{"lora", "prompt"} {
		t.Run(kind, func(t *testing.T) {
			sst2 := filepath.Join(dir, kind+"-sst2")
			set := append(slices.Clone(common), "adapter.kind="+kind)
			s1, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+sst2)})
			if err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(dir, kind+"-classification")
			s2, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+own, "task.name=classification",
				"task.train="+train, "task.test="+dev, "task.labels="+string(labels), "task.instruction="+data.SST2System)})
			if err != nil {
				t.Fatal(err)
			}
			a, c := readLines(t, filepath.Join(sst2, "metrics.jsonl")), readLines(t, filepath.Join(own, "metrics.jsonl"))
			if len(a) != 8+3 || !slices.Equal(a, c) {
				t.Fatalf("metrics.jsonl differ (%d and %d lines):\n sst2: %v\n classification: %v", len(a), len(c), a, c)
			}
			if s1.BestValLoss == nil || s2.BestValLoss == nil || *s1.BestValLoss != *s2.BestValLoss {
				t.Errorf("best validation loss %v, %v", s1.BestValLoss, s2.BestValLoss)
			}
			for _, which := range []string{"base", "best", "last"} {
				acc, ok := s1.Test[which]["accuracy"]
				if !ok || math.IsNaN(acc) || !maps.Equal(s1.Test[which], s2.Test[which]) {
					t.Errorf("test %s: sst2 %v, classification %v", which, s1.Test[which], s2.Test[which])
				}
			}
			t.Logf("%s: accuracy base %.3f, best %.3f, both tasks", kind, s1.Test["base"]["accuracy"], s1.Test["best"]["accuracy"])
		})
	}
}

// TestOwnTaskConfig: task.labels and task.instruction are read by the tasks
// on the user's own data and refused on the paper's; the labels are checked.
func TestOwnTaskConfig(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	cls := []string{"task.name=classification", "task.train=t.jsonl"}
	for _, c := range []struct {
		name string
		set  []string
		want string // "": loads
	}{
		{"labels on sst2", []string{"task.labels=[a, b]"}, "--set task.labels: [a b]: read only by task.name classification; task sst2 has its own labels"},
		{"instruction on sst2", []string{"task.instruction=Be nice."}, `--set task.instruction: "Be nice.": read only by task.name classification and generation`},
		{"labels on pets", []string{"task.name=pets", "adapter.targets=[query, value]", "task.labels=[a, b]"}, "--set task.labels: [a b]: read only by task.name classification"},
		{"no labels", cls, "task.labels []: task classification needs at least 2 labels, got 0"},
		{"one label", append(slices.Clone(cls), "task.labels=[yes]"), "needs at least 2 labels, got 1"},
		{"a label twice", append(slices.Clone(cls), "task.labels=[yes, no, yes]"), `label "yes" is given twice (0 and 2)`},
		{"a number for a label", append(slices.Clone(cls), "task.labels=[1, 2]"), `task.labels: want a list of names, got element 0, 1, read as a number: write a name that reads as one in quotes, e.g. ["1"]`},
		{"a boolean for a label", append(slices.Clone(cls), "task.labels=[yes, false]"), `task.labels: want a list of names, got element 1, false, read as a boolean: write a name that reads as one in quotes, e.g. ["false"]`},
		{"labels for generation", []string{"task.name=generation", "task.labels=[a, b]"}, "--set task.labels: [a b]: task generation has no labels"},
		{"a blank instruction", append(slices.Clone(cls), "task.labels=[a, b]", "task.instruction=  "), "--set task.instruction: \"  \" is blank"},
		{"prompt tuning without a text", append(slices.Clone(cls), "task.labels=[a, b]", "adapter.kind=prompt"), "adapter.init_text is required for prompt tuning on task classification without a task.instruction"},
		{"mezo", append(slices.Clone(cls), "task.labels=[a, b]", "task.format=mezo"), "--set task.format: mezo has only SST-2's template"},
		{"classification", append(slices.Clone(cls), "task.labels=[a, b]"), ""},
		{"prompt tuning with an instruction", append(slices.Clone(cls), "task.labels=['1', '2']", "adapter.kind=prompt", "task.instruction=Rate it."), ""},
		{"generation", []string{"task.name=generation", "task.train=t.jsonl", "task.instruction=Answer."}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(cfg, c.set)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // nil: refused
	}{
		{"[negative, positive]", []string{"negative", "positive"}},
		{`["yes, surely", "no: never", '3']`, []string{"yes, surely", "no: never", "3"}},
		{"negative,positive", nil},
		{"[1, 2]", nil},
		{"[a, [b]]", nil},
		{"[a", nil},
	} {
		got, err := ParseLabels(c.in)
		if !slices.Equal(got, c.want) || (err == nil) != (c.want != nil) {
			t.Errorf("ParseLabels(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestInstructionDroppedWarns: a task.instruction the model's chat template
// leaves out of every prompt (the demo's template has no system turn) is
// trained and scored without, and the run says so in a warning; with a
// template that writes the system turn, or without an instruction, there is
// no warning. meazo-eval's Evaluate says the same of --instruction.
func TestInstructionDroppedWarns(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	row := func(i int, ex data.Example) map[string]any {
		return map[string]any{"text": ex.Sentence, "label": ex.Label}
	}
	train, dev := demoRows(t, dir, "train", "warn", row), demoRows(t, dir, "dev", "warn", row)
	const warning = "warning: task.instruction is left out of every prompt"
	run := func(name, instruction string) string {
		var log bytes.Buffer
		_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"task.name=classification", "task.labels=[terrible, great]",
			"task.train=" + train, "task.test=" + dev, "task.instruction=" + instruction, "train.checkpoint_every=0",
			"task.max_train=16", "task.max_validation=4", "task.max_test=4", "eval.base=false", "output.dir=" + filepath.Join(dir, name)}})
		if err != nil {
			t.Fatal(err)
		}
		return log.String()
	}
	if log := run("dropped", "Say whether the review is great or terrible."); !strings.Contains(log, warning) {
		t.Errorf("the demo's template with an instruction: no warning %q in the log:\n%s", warning, log)
	}
	if log := run("none", ""); strings.Contains(log, warning) {
		t.Errorf("no instruction: the log warns:\n%s", log)
	}
	m, tok := demoModel(t, dir)
	var log bytes.Buffer
	o := EvalOptions{Task: "classification", Data: dev, Labels: []string{"terrible", "great"}, Instruction: "Classify.", MaxExamples: 2, BatchSize: 2, Log: &log}
	if _, err := Evaluate(m, tok, o); err != nil || !strings.Contains(log.String(), "warning: --instruction is left out of every prompt") {
		t.Errorf("Evaluate with --instruction on the demo's template: %v, log:\n%s", err, log.String())
	}

	useChatMLWithSystem(t, filepath.Join(dir, "model"))
	if log := run("kept", "Say whether the review is great or terrible."); strings.Contains(log, warning) {
		t.Errorf("a template with the system turn: the log warns:\n%s", log)
	}
}

// TestLogLabels: a classification's log counts each label of the train and
// the test file; a label without a training example is warned of (one-class
// data trained without a word), and the test's most frequent label gives
// the accuracy of always answering it.
func TestLogLabels(t *testing.T) {
	labels := []string{"negative", "neutral", "positive"}
	exs := func(ls ...int) []data.Example {
		var out []data.Example
		for _, l := range ls {
			out = append(out, data.Example{Task: data.Classification, Label: l})
		}
		return out
	}
	var b bytes.Buffer
	logLabels(&b, "train", "t.jsonl", exs(2, 2, 0, 2), labels)
	want := `train labels in t.jsonl: "negative" 1, "neutral" 0, "positive" 3` + "\n" +
		`warning: task.labels "neutral": no example in the train file t.jsonl, so the model is never trained to answer it` + "\n"
	if b.String() != want {
		t.Errorf("train:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	logLabels(&b, "test", "x.jsonl", exs(0, 1, 1, 2), labels)
	if want := `test labels in x.jsonl: "negative" 1, "neutral" 2, "positive" 1 (always answering "neutral" scores accuracy 0.500)` + "\n"; b.String() != want {
		t.Errorf("test:\n%s\nwant\n%s", b.String(), want)
	}
}

// TestOwnDataOverlap: the checks of a stranger's files, unit by unit. A
// repeated train row, test and validation rows that are training rows, and
// a validation split of a handful are each warned of, naming the rows;
// files without them give no warning.
func TestOwnDataOverlap(t *testing.T) {
	row := func(task data.Task, id, in string) data.Example {
		if task == data.Generation {
			return data.Example{Task: task, ID: id, Prompt: in}
		}
		return data.Example{Task: task, ID: id, Text: in}
	}
	c := data.Classification
	train := []data.Example{row(c, "line 1", "good"), row(c, "line 2", "bad"), row(c, "line 3", " good "), row(c, "line 4", "fine")}
	var b bytes.Buffer
	warnRepeats(&b, "t.jsonl", train)
	if want := "warning: 1 of the 4 examples of the train file t.jsonl repeat an earlier example's text (line 3 repeats line 1)\n"; b.String() != want {
		t.Errorf("repeats:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	warnRepeats(&b, "t.jsonl", train[:2])
	warnOverlap(&b, "test", "x.jsonl", []data.Example{row(c, "line 1", "new")}, train)
	warnSmallValidation(&b, smallValidation, "t.jsonl")
	if b.Len() != 0 {
		t.Errorf("clean files warned:\n%s", b.String())
	}
	g := data.Generation
	gtrain := []data.Example{row(g, "a", "p1"), row(g, "b", "p2"), row(g, "c", "p3"), row(g, "d", "p4")}
	test := []data.Example{row(g, "t1", "p1"), row(g, "t2", "p9"), row(g, "t3", "p2"), row(g, "t4", "p3"), row(g, "t5", "p4")}
	warnOverlap(&b, "test", "x.jsonl", test, gtrain)
	if want := "warning: 4 of the 5 test examples in x.jsonl have the prompt of a training example (t1, t3, t4, …): on them the metric scores what the model was trained on\n"; b.String() != want {
		t.Errorf("test overlap:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	warnOverlap(&b, "validation", "v.jsonl", test[:1], gtrain)
	warnSmallValidation(&b, 4, "t.jsonl")
	want := "warning: 1 of the 1 validation examples in v.jsonl have the prompt of a training example (t1): on them the loss scores what the model was trained on\n" +
		"warning: the validation split holds 4 examples (held out of t.jsonl): the best parameters and early stopping are chosen on their loss; give more data or a task.validation file\n"
	if b.String() != want {
		t.Errorf("validation:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestRepeatedIDs: ids given to more than one row of a file are warned of
// (the predictions file names examples by id), with how often each is
// used; unique ids give no warning.
func TestRepeatedIDs(t *testing.T) {
	exs := func(ids ...string) []data.Example {
		var out []data.Example
		for _, id := range ids {
			out = append(out, data.Example{Task: data.Generation, ID: id, Prompt: "p " + id})
		}
		return out
	}
	var b bytes.Buffer
	warnRepeatedIDs(&b, "test", "x.jsonl", exs("a", "line 2", "b"))
	if b.Len() != 0 {
		t.Errorf("unique ids warned:\n%s", b.String())
	}
	warnRepeatedIDs(&b, "test", "x.jsonl", exs("x", "x", "y", "x", "y", "z"))
	want := `warning: 3 of the 6 test examples in x.jsonl have the id of an earlier example ("x" 3 times, "y" 2 times): ` +
		`the log and the predictions file name examples by id, and theirs cannot be told apart; give each row its own "id" (or none: its line number is its id)` + "\n"
	if b.String() != want {
		t.Errorf("repeated ids:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestOwnDataOverlapRun: a run on files with a repeated row, a test row
// from the train file and a small validation split says so in its log.
func TestOwnDataOverlapRun(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	var rows []map[string]any
	for i := range 40 {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("review number %d", i%39), "label": []string{"terrible", "great"}[i%2]})
	}
	trainPath, testPath := filepath.Join(dir, "own-train.jsonl"), filepath.Join(dir, "own-test.jsonl")
	writeJSONL(t, trainPath, rows)
	writeJSONL(t, testPath, []map[string]any{{"text": "review number 5", "label": "great"}, {"text": "unseen", "label": "great"},
		{"id": "q", "text": "new one", "label": "terrible"}, {"id": "q", "text": "new two", "label": "great", "lable": "terrible"}})
	var log bytes.Buffer
	_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"task.name=classification", "task.labels=[terrible, great]",
		"task.train=" + trainPath, "task.test=" + testPath, "output.dir=" + filepath.Join(dir, "run")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: 1 of the 40 examples of the train file " + trainPath + " repeat an earlier example's text (line 40 repeats line 1)",
		"warning: the validation split holds 2 examples (held out of " + trainPath + ")",
		"warning: 1 of the 4 test examples in " + testPath + " have the text of a training example (line 1)",
		"warning: 1 of the 4 test examples in " + testPath + ` have the id of an earlier example ("q" 2 times)`,
		"warning: " + testPath + `: keys a classification row does not read, left unused: "lable" (line 4, 1 row; did you mean "label"?); a classification row reads "id", "text", "label"`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestDataLargerThanMemory: a training file larger than the memory
// available is refused before it is read (a run holds all of it), naming
// the key, the file and both sizes, with nothing written; one that fits
// trains.
func TestDataLargerThanMemory(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	run := filepath.Join(dir, "run")
	defer func(f func() (uint64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (uint64, bool) { return 100, true }
	_, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + run}, Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "task.train ") ||
		!strings.Contains(err.Error(), ", more than the 100 B of memory this machine has available: every example of it would be held in memory; train on a part of it") {
		t.Fatalf("a training file larger than the memory: %v", err)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("the refused run left %s (%v)", run, err)
	}
	availableMemory = func() (uint64, bool) { return 0, false } // unknown: nothing checked
	if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + run, "eval.skip=true"}, Log: io.Discard}); err != nil {
		t.Errorf("with the memory unknown: %v", err)
	}
}
