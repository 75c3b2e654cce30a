package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/train"
)

// TestTaskOnDemo evaluates the demo's tiny model on its SST-2-style test file,
// without a saved LoRA adapter, with it, and with it merged (--merge).
func TestTaskOnDemo(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "task.max_train=32", "task.max_validation=8"}}); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(dir, "run", "best")
	accs := map[string]float64{}
	for _, c := range []struct {
		name string
		args []string
	}{{"base", nil}, {"adapter", []string{"--adapter", best}}, {"merged", []string{"--adapter", best, "--merge"}}} {
		adapter := c.name
		var out bytes.Buffer
		args := append([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "20"}, c.args...)
		if err := runTask(args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var res map[string]float64
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		if acc, ok := res["accuracy"]; !ok || acc < 0 || acc > 1 {
			t.Errorf("adapter %q: result %v", adapter, res)
		}
		accs[c.name] = res["accuracy"]
	}
	// Merging LoRA into the weights rounds differently but scores the same labels.
	if accs["merged"] != accs["adapter"] {
		t.Errorf("accuracy with the adapter merged %v, attached %v", accs["merged"], accs["adapter"])
	}
	// A missing path is named by its flag, before any backend opens (the log stays empty).
	for _, miss := range []string{"--data", "--adapter", "--model"} {
		args := []string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv")}
		if miss == "--adapter" {
			args = append(args, "--adapter", "")
		}
		args[slices.Index(args, miss)+1] = filepath.Join(dir, "nope")
		var log strings.Builder
		err := runTask(args, io.Discard, &log)
		if err == nil || !strings.Contains(err.Error(), miss+" "+filepath.Join(dir, "nope")+": no such file or directory") || log.Len() > 0 {
			t.Errorf("missing %s: %v (log %q)", miss, err, log.String())
		}
	}
	// A directory as the data (a dataset's download directory) is named as
	// one, before any backend opens.
	var dlog strings.Builder
	err = runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data")}, io.Discard, &dlog)
	if want := "--data " + filepath.Join(dir, "data") + ": a directory, not a file (name the data file in it"; err == nil || !strings.Contains(err.Error(), want) || dlog.Len() > 0 {
		t.Errorf("a directory as --data: %v (log %q), want an error saying %q", err, dlog.String(), want)
	}
	// The run directory given as the model is named as one, before any backend opens.
	runDir := filepath.Join(dir, "run")
	var log strings.Builder
	err = runTask([]string{"--model", runDir, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv")}, io.Discard, &log)
	if want := "--model " + runDir + " is a run directory: score the adapter it saved, --adapter " + best; err == nil ||
		!strings.Contains(err.Error(), want) || log.Len() > 0 {
		t.Errorf("the run directory as --model: %v (log %q), want an error saying %q", err, log.String(), want)
	}
}

// TestTaskCommandLine: what the flags cannot mean is a usage error, before
// any model loads.
func TestTaskCommandLine(t *testing.T) {
	base := []string{"--model", "m", "--task", "sst2", "--data", "d.tsv"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(base, "extra"), `unexpected argument "extra"`},
		{append(base, "--max-examples", "-5"), "--max-examples must be at least 0, got -5"},
		{append(base, "--max-test", "-5"), "--max-examples must be at least 0, got -5"}, // task.max_test's spelling
		{append(base, "--threads", "-1"), "--threads must be at least 0, got -1"},
		{append(base, "--max-new-tokens", "-1"), "--max-new-tokens must be at least 0, got -1"},
		{append(base, "--format", "opt"), `--format: unknown format "opt" (want chat or mezo)`},
		{append(base, "--backend", "gpu"), `--backend: unknown backend "gpu" (have auto, cuda, cpu)`},
		{append(base, "--stem", "--backend", "gpu"), `--backend: unknown backend "gpu"`}, // score's spelling of --rouge-stem
		{append(base, "--batch-size", "0"), "--batch-size must be at least 1"},
		{[]string{"--task", "sst2"}, "--model and --data are required"},
		{[]string{"--task", "sst2", "--model", "m"}, "--data is required"},
		{append(base, "--labels", "[a, b]"), "--labels and --instruction are for tasks classification and generation"},
		{append(base, "--instruction", "Classify."), "--labels and --instruction are for tasks classification and generation"},
		{[]string{"--model", "m", "--task", "classification", "--data", "d.jsonl"}, "--labels: task classification needs at least 2 labels, got 0"},
		{[]string{"--model", "m", "--task", "classification", "--data", "d.jsonl", "--labels", "a,b"}, "want a list, e.g. --labels '[negative, positive]'"},
		{[]string{"--model", "m", "--task", "generation", "--data", "d.jsonl", "--labels", "[a, b]"}, "task generation has no labels"},
		{[]string{"--model", "m", "--task", "summaries", "--data", "d.jsonl"}, `--task: unknown task "summaries" (want sst2, squad, xsum, pets, classification or generation)`},
		{[]string{"--model", "m", "--task", "sst-2", "--data", "d.tsv"}, `--task: unknown task "sst-2" (want sst2, squad, xsum, pets, classification or generation; did you mean "sst2"?)`},
	} {
		err := runTask(c.args, io.Discard, io.Discard)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestTaskOwnData evaluates the demo's tiny model on a classification and a
// generation test file of the user's own kind (JSON Lines), with their
// labels and instruction, as meazo-train's test evaluation scores them.
func TestTaskOwnData(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	cls, gen := filepath.Join(dir, "cls.jsonl"), filepath.Join(dir, "gen.jsonl")
	os.WriteFile(cls, []byte(`{"text":"what a dull film","label":"terrible"}`+"\n"+`{"text":"a superb cast","label":1}`+"\n"), 0o644)
	os.WriteFile(gen, []byte(`{"prompt":"the film is dull","completion":"terrible","references":["bad"]}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--task", "classification", "--data", cls, "--labels", "[terrible, great]", "--instruction", "Rate the review."}, []string{"accuracy"}},
		{[]string{"--task", "generation", "--data", gen, "--max-new-tokens", "3"}, []string{"exact_match", "f1", "rouge1", "rouge2", "rougeL", "rougeLsum"}},
	} {
		var out bytes.Buffer
		if err := runTask(append([]string{"--model", filepath.Join(dir, "model")}, c.args...), &out, io.Discard); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		var res map[string]float64
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		if got := slices.Sorted(maps.Keys(res)); !slices.Equal(got, c.want) {
			t.Errorf("%q: metrics %v, want %v", c.args, res, c.want)
		}
	}
}

// TestTaskNoUsableRows: a data file none of whose rows fits the task (a
// classification file given as generation, a header alone) is refused with
// why, not as a bare "no examples".
func TestTaskNoUsableRows(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	cls, empty := filepath.Join(dir, "cls.jsonl"), filepath.Join(dir, "empty.jsonl")
	os.WriteFile(cls, []byte(`{"text":"what a dull film","label":"terrible"}`+"\n"+`{"text":"a superb cast","label":1}`+"\n"), 0o644)
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--task", "generation", "--data", cls}, "--data " + cls + ": no usable example: every row is malformed (2; the warnings above say why)"},
		{[]string{"--task", "classification", "--labels", "[terrible, great]", "--data", empty}, "--data " + empty + ": no examples in the file"},
	} {
		var log bytes.Buffer
		err := runTask(append([]string{"--model", filepath.Join(dir, "model")}, c.args...), io.Discard, &log)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v, want %q", c.args, err, c.want)
		}
		if c.args[1] == "generation" && strings.Count(log.String(), "warning: skipped malformed row") != 2 {
			t.Errorf("%q: want a warning per row, log:\n%s", c.args, log.String())
		}
	}
}

// TestTaskRefusesNonFiniteModel: a model whose weights hold NaN is refused,
// by label scoring (SST-2) and by generation (SQuAD), not scored.
func TestTaskRefusesNonFiniteModel(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	fixture.PoisonWeights(t, filepath.Join(dir, "model", "model.safetensors"), "model.norm.weight")
	err := runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "4"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `test example "0": the loss of its answer "terrible" is not finite (NaN)`) {
		t.Errorf("sst2: %v, want the loss refused", err)
	}
	squad := filepath.Join(dir, "squad.jsonl")
	row := `{"id":"q1","title":"T","context":"Paris is in France.","question":"Where is Paris?","answers":{"text":["France"],"answer_start":[12]}}`
	if err := os.WriteFile(squad, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "squad", "--data", squad, "--max-new-tokens", "3"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the logits of sequence 0 are not finite") {
		t.Errorf("squad: %v, want the logits refused", err)
	}
}

// TestTaskLengthRule: --max-length skips the examples whose evaluation
// would take more tokens, naming how many and which on stderr, and scores
// the others; 0 skips none.
func TestTaskLengthRule(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "test.tsv")
	long := strings.Repeat("the film is great ", 60)
	if err := os.WriteFile(data, []byte("sentence\tlabel\n"+strings.Repeat("x", 10<<20)+"\t1\na fine film\t1\n"+long+"\t0\ndull\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", data}
	var stderr strings.Builder
	var out bytes.Buffer
	if err := runTask(append(args, "--max-length", "200"), &out, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := `2 examples skipped as their evaluation would exceed --max-length 200 tokens (2: ids "0", "2"); the metric is over the other 2`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if err := runTask(append(args, "--max-length", "-1"), io.Discard, io.Discard); err == nil {
		t.Error("--max-length -1 was accepted")
	}
}

// TestTaskPets: meazo-eval scores a ViT on a Pets test file as
// meazo-train scored it at the end of its run: the saved best adapter's
// accuracy and the base model's are the run summary's, bit for bit, in
// batches of any size, and the base model's is 0.5 on a file labelled
// with its own predictions on half the images; the text tasks' flags are
// refused.
func TestTaskPets(t *testing.T) {
	const (
		vit      = "../../model/testdata/vit/vit-tiny"
		trainSet = "../../train/testdata/pets/train.parquet"
		testSet  = "../../train/testdata/pets/test.parquet"
	)
	test := halfRightLabels(t, vit, testSet)
	dir := filepath.Join(t.TempDir(), "run")
	s, err := train.Run(train.Options{Overrides: []string{"model.path=" + vit, "task.name=pets", "task.train=" + trainSet, "task.test=" + test,
		"adapter.targets=[query,value]", "adapter.r=4", "adapter.alpha=8", "optimizer.lr=1e-2", "optimizer.eps=1e-3",
		"train.steps=4", "train.batch_size=4", "train.eval_every=2", "eval.batch_size=5", "eval.base=true", "output.dir=" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		which string
		args  []string
	}{
		{"base", []string{"--batch-size", "3"}},
		{"best", []string{"--adapter", filepath.Join(dir, "best")}},
		{"best", []string{"--adapter", filepath.Join(dir, "best"), "--batch-size", "1", "--threads", "1"}},
	} {
		var out, log bytes.Buffer
		args := append([]string{"--model", vit, "--task", "pets", "--data", test}, c.args...)
		if err := runTask(args, &out, &log); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !strings.Contains(log.String(), "test (evaluation, 12 examples, ") {
			t.Errorf("%v: no test line on stderr:\n%s", c.args, log.String())
		}
		var res map[string]float64
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		t.Logf("%s %v: %v", c.which, c.args, res)
		if c.which == "base" && res["accuracy"] != 0.5 {
			t.Errorf("%v: the base model's accuracy is %v; its own predictions on half the images give 0.5", c.args, res["accuracy"])
		}
		if want := s.Test[c.which]["accuracy"]; res["accuracy"] != want || len(res) != 1 {
			t.Errorf("%v: %v, want the run's %s accuracy %v", c.args, res, c.which, want)
		}
	}
	var out bytes.Buffer
	// The run's adapter alone: the model, task and test file from the run
	// (none of the text tasks' settings, which pets refuses).
	if err := runTask([]string{"--adapter", filepath.Join(dir, "best")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if res := map[string]float64{}; json.Unmarshal(out.Bytes(), &res) != nil || res["accuracy"] != s.Test["best"]["accuracy"] {
		t.Errorf("--adapter RUN/best alone: %s, want the run's best accuracy %v", out.String(), s.Test["best"]["accuracy"])
	}
	out.Reset()
	if err := runTask([]string{"--model", vit, "--task", "pets", "--data", test, "--max-examples", "5"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var res map[string]float64
	if json.Unmarshal(out.Bytes(), &res); res["accuracy"]*5 != math.Round(res["accuracy"]*5) {
		t.Errorf("--max-examples 5: accuracy %v is not a count of 5", res["accuracy"])
	}
	// The published checkpoint is a ViTModel: no classifier but the
	// adapter's, which gives the same accuracy; without an adapter, no
	// classifier at all.
	headless := t.TempDir()
	fixture.WriteViTModel(t, vit, headless)
	out.Reset()
	if err := runTask([]string{"--model", headless, "--task", "pets", "--data", test, "--adapter", filepath.Join(dir, "best")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(out.Bytes(), &res); res["accuracy"] != s.Test["best"]["accuracy"] {
		t.Errorf("a ViTModel with the run's adapter: accuracy %v, want the run's %v", res["accuracy"], s.Test["best"]["accuracy"])
	}
	err = runTask([]string{"--model", headless, "--task", "pets", "--data", test}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is a ViTModel, without a classifier") {
		t.Errorf("a ViTModel without an adapter: got %v", err)
	}
	// --merge scores the adapter merged into a copy of the weights: the run's accuracy (eval.merge's).
	out.Reset()
	if err := runTask([]string{"--model", vit, "--task", "pets", "--data", test, "--adapter", filepath.Join(dir, "best"), "--merge"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if json.Unmarshal(out.Bytes(), &res); res["accuracy"] != s.Test["best"]["accuracy"] {
		t.Errorf("--merge: accuracy %v, want the run's %v", res["accuracy"], s.Test["best"]["accuracy"])
	}
	err = runTask([]string{"--model", vit, "--task", "pets", "--data", test, "--max-new-tokens", "5", "--format", "mezo"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--format, --max-new-tokens: not for an image task") {
		t.Errorf("text-only flags: got %v", err)
	}
	err = runTask([]string{"--model", vit, "--task", "pets", "--data", test, "--bf16-products"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--bf16-products: not for an image task") {
		t.Errorf("--bf16-products on pets: got %v", err)
	}
	err = runTask([]string{"--model", vit, "--task", "pets", "--data", filepath.Join(vit, "config.json")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("a data file that is not Parquet: got %v", err)
	}
}

// halfRightLabels writes a copy of the Parquet file src whose labels are
// the ViT's own predictions on the first half of the images and another
// class on the rest, and returns its path.
func halfRightLabels(t *testing.T, vit, src string) string {
	t.Helper()
	rows, err := parquet.ReadFile[data.HubImageRow](src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.LoadViT(vit, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	proc, err := imageproc.LoadConfig(filepath.Join(vit, "preprocessor_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		px, err := proc.File(rows[i].Image.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Logits(px, 1)
		if err != nil {
			t.Fatal(err)
		}
		pred := 0
		for c, l := range logits {
			if l > logits[pred] {
				pred = c
			}
		}
		if rows[i].Label = int64(pred); i >= len(rows)/2 {
			rows[i].Label = int64((pred + 1) % data.PetsClasses)
		}
	}
	out := filepath.Join(t.TempDir(), "test.parquet")
	if err := parquet.WriteFile(out, rows); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTaskNoChatTemplate: a model without a chat template (OPT's) is
// refused by its --model path with meazo-eval's fix, --format mezo (the
// message said "model the model" and named meazo-train's task.format), and
// --format mezo evaluates it.
func TestTaskNoChatTemplate(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	mdir := filepath.Join(dir, "model")
	tcPath := filepath.Join(mdir, "tokenizer_config.json")
	var tc map[string]any
	b, err := os.ReadFile(tcPath)
	if err == nil {
		err = json.Unmarshal(b, &tc)
	}
	if err != nil {
		t.Fatal(err)
	}
	delete(tc, "chat_template")
	b, _ = json.Marshal(tc)
	if err := os.WriteFile(tcPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(mdir, "chat_template.jinja"))
	args := []string{"--model", mdir, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "4"}
	for _, c := range []struct {
		format string
		want   []string // in the error; nil: it evaluates
	}{
		{"chat", []string{"--model " + mdir + ": the model directory has no chat template", "takes --format mezo"}},
		{"mezo", nil},
	} {
		err := runTask(append(slices.Clone(args), "--format", c.format), io.Discard, io.Discard)
		switch {
		case c.want == nil && err != nil:
			t.Errorf("--format %s: %v", c.format, err)
		case c.want != nil && (err == nil || !strings.Contains(err.Error(), c.want[0]) || !strings.Contains(err.Error(), c.want[1])):
			t.Errorf("--format %s: %v, want %q", c.format, err, c.want)
		}
	}
	// SQuAD has no MeZO template: the missing chat template does not send
	// the user to --format mezo, and --format mezo is refused up front, not
	// at the first example (named as if it were at fault).
	squad := filepath.Join(dir, "squad.json")
	if err := os.WriteFile(squad, []byte(`{"data": [{"title": "T", "paragraphs": [{"context": "Paris is in France.", "qas": [{"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sq := []string{"--model", mdir, "--task", "squad", "--data", squad}
	if err := runTask(sq, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "task squad is rendered with it") || strings.Contains(err.Error(), "takes --format mezo") {
		t.Errorf("squad without a chat template: %v, want that the task needs one", err)
	}
	err = runTask(append(slices.Clone(sq), "--format", "mezo"), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--format mezo has only SST-2's template (MeZO's), not task squad") {
		t.Errorf("squad with --format mezo: %v", err)
	}
}

func first(a, _ string) string { return a }

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// TestTaskFromRun: an adapter a run saved is scored as the run scored it,
// with the flags left out taken from the run's config.yaml (the base model,
// the task, its test file, the labels and the instruction of a run on the
// user's own data): the same metrics as with every flag written out, the
// log naming what was taken. A flag given with another value than the
// run's is used, with a note; an adapter outside a run directory takes
// nothing; a run's config.yaml that cannot be read is named.
func TestTaskFromRun(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	own, test := filepath.Join(dir, "own.jsonl"), filepath.Join(dir, "own_test.jsonl")
	var rows strings.Builder
	for i := range 40 {
		fmt.Fprintf(&rows, `{"text":"review %d: a %s film","label":%d}`+"\n", i, []string{"dull", "superb"}[i%2], i%2)
	}
	for _, f := range []string{own, test} {
		if err := os.WriteFile(f, []byte(rows.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(dir, "ownrun")
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "task.name=classification",
		"task.train=" + own, "task.test=" + test, "task.labels=[terrible, great]", "task.instruction=Rate the review.",
		"task.max_validation=4", "task.max_test=30", "output.dir=" + run}}); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(run, "best")
	score := func(args ...string) (string, string) {
		t.Helper()
		var out, log strings.Builder
		if err := runTask(args, &out, &log); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return out.String(), log.String()
	}
	explicit, _ := score("--model", filepath.Join(dir, "model"), "--adapter", best, "--task", "classification", "--data", test,
		"--labels", "[terrible, great]", "--instruction", "Rate the review.", "--max-examples", "30")
	fromRun, log := score("--adapter", best)
	if fromRun != explicit {
		t.Errorf("from the run %s, every flag written out %s", fromRun, explicit)
	}
	if want := `--task classification --data ` + test + ` --max-examples 30 --labels '["terrible","great"]' --instruction 'Rate the review.'`; !strings.Contains(log, "scoring as the run "+run+" did (its config.yaml): --model ") || !strings.Contains(log, want) {
		t.Errorf("log %q: want it to name what was taken, %q", log, want)
	}
	// Another instruction: the flag's, with a note; as if no run were read.
	otherInstr, log := score("--adapter", best, "--instruction", "Say great or terrible.")
	plain, _ := score("--model", filepath.Join(dir, "model"), "--adapter", best, "--task", "classification", "--data", test,
		"--labels", "[terrible, great]", "--instruction", "Say great or terrible.")
	if otherInstr != plain || !strings.Contains(log, `note: --instruction differs from the run's task.instruction ("Rate the review." in `+run+`); scoring with --instruction`) {
		t.Errorf("--instruction given: %s (written out: %s), log %q", otherInstr, plain, log)
	}
	// Another task: only what applies to any task (here the base model);
	// other data: not the run's count of its test examples.
	sst2, log := score("--adapter", best, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"))
	if want, _ := score("--model", filepath.Join(dir, "model"), "--adapter", best, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv")); sst2 != want ||
		strings.Contains(log, "--labels") || strings.Contains(log, "--max-examples") {
		t.Errorf("another task: %s (written out: %s), log %q", sst2, want, log)
	}
	// Another task without --data: the run's test file is not taken, and
	// the log says why, before the usage error names --data alone.
	var noData strings.Builder
	if err := runTask([]string{"--adapter", best, "--task", "sst2"}, io.Discard, &noData); err == nil ||
		!strings.HasPrefix(err.Error(), "--data is required") ||
		!strings.Contains(noData.String(), "note: the run's test file (task.test) is for its task classification, not --task sst2: give --data") {
		t.Errorf("another task without --data: %v, log %q", err, noData.String())
	}
	other := filepath.Join(dir, "other.jsonl")
	os.WriteFile(other, []byte(rows.String()), 0o644)
	if _, log := score("--adapter", best, "--data", other); strings.Contains(log, "--max-examples") || !strings.Contains(log, "--labels") ||
		!strings.Contains(log, "note: the run scored the first 30 examples of its own test file") {
		t.Errorf("other data: log %q; want the labels taken, not the count of the run's test examples, and a note", log)
	}
	// The run's test file written another way is the run's test file.
	rel, err := filepath.Rel(must(os.Getwd()), test)
	if err != nil {
		t.Fatal(err)
	}
	if got, log := score("--adapter", best, "--data", rel); got != explicit || !strings.Contains(log, "--max-examples 30") {
		t.Errorf("the run's test file as %s: %s (log %q), want the run's own score %s", rel, got, log, explicit)
	}
	// Another base model: scored on it, with a note.
	model2 := filepath.Join(dir, "model2")
	if err := os.CopyFS(model2, os.DirFS(filepath.Join(dir, "model"))); err != nil {
		t.Fatal(err)
	}
	if _, log := score("--adapter", best, "--model", model2); !strings.Contains(log, "note: --model differs from the run's model.path") {
		t.Errorf("another base model: log %q, want a note", log)
	}
	// The same labels written another way: no note.
	if _, log := score("--adapter", best, "--labels", "[terrible, great]"); strings.Contains(log, "note:") {
		t.Errorf("the run's own labels noted as different: %q", log)
	}
	// A full-parameter run's model, as --model: the rest from its run.
	full := filepath.Join(dir, "fullrun")
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "adapter.kind=full", "optimizer.lr=1e-3",
		"task.max_train=32", "task.max_validation=4", "output.dir=" + full}}); err != nil {
		t.Fatal(err)
	}
	fullBest := filepath.Join(full, "best")
	if got, want := first(score("--model", fullBest)), first(score("--model", fullBest, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"))); got != want {
		t.Errorf("a full-parameter run's model from its run: %s, written out %s", got, want)
	}
	// The run's own data files are inputs too: --predictions does not
	// replace them (here its training file, which this command never reads).
	before, _ := os.ReadFile(own)
	if err := runTask([]string{"--adapter", best, "--predictions", own}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--predictions "+own) {
		t.Errorf("--predictions at the run's training file: %v, want it refused", err)
	}
	if after, _ := os.ReadFile(own); !bytes.Equal(before, after) {
		t.Error("the run's training file changed")
	}
	// The run directory given for what it saved: the error names it.
	for _, c := range []struct{ flag, dir, want string }{
		{"--adapter", run, "--adapter " + run + " is a run directory: score the adapter it saved, --adapter " + best},
		{"--model", run, "--model " + run + " is a run directory: score the adapter it saved, --adapter " + best},
		{"--model", full, "--model " + full + " is a run directory: score the model it saved, --model " + fullBest},
		// A LoRA run's best/ given as the model (a full-parameter run's is one).
		{"--model", best, "--model " + best + ": a saved adapter (adapter_config.json, no config.json), not a model: the model is its base model"},
	} {
		if err := runTask([]string{c.flag, c.dir}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.flag, c.dir, err, c.want)
		}
	}
	// The checkpoint's adapter is an adapter, though its directory holds a
	// config.yaml and a best/ as a run's does, scored as the run scores
	// (its step's adapter: here the last step's, last/).
	atCheckpoint, log := score("--adapter", filepath.Join(run, "checkpoint"))
	if atLast, _ := score("--adapter", filepath.Join(run, "last")); atCheckpoint != atLast || !strings.Contains(log, "scoring as the run "+run+" did") {
		t.Errorf("--adapter RUN/checkpoint: %s (log %q), want last/'s scores %s, taken from the run", atCheckpoint, log, atLast)
	}
	// An adapter copied out of its run takes nothing from it.
	copied := filepath.Join(dir, "copied")
	if err := os.CopyFS(copied, os.DirFS(best)); err != nil {
		t.Fatal(err)
	}
	if err := runTask([]string{"--adapter", copied}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--model, --task and --data are required") {
		t.Errorf("an adapter outside a run: %v, want the required flags named", err)
	}
	// A config.yaml that is not YAML is named.
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), []byte("task: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runTask([]string{"--adapter", best}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), filepath.Join(run, "config.yaml")+" (the configuration of the run that saved "+best+")") {
		t.Errorf("a broken config.yaml: %v", err)
	}
}

// TestTaskOnUnfinishedRun: a run's last/ asked for before the run has saved
// it (still training, or stopped before its end) is explained, with what
// the run is doing and its best/ to score meanwhile, not "no such file";
// the run directory given whole does not offer the last/ it lacks.
func TestTaskOnUnfinishedRun(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: []string{"eval.skip=true", "task.max_train=32", "task.max_validation=8",
		"train.checkpoint_every=1"}, StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	last, best := filepath.Join(run, "last"), filepath.Join(run, "best")
	stopped := "is not training and has not finished (stopped, or crashed): continue it with meazo-train --resume " + run
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--adapter", last}, "--adapter " + last + ": the run " + run + " has no last/: it is saved when the run ends, and the run " + stopped + "; score its best/ meanwhile, --adapter " + best + ", or its latest checkpoint's, --adapter " + filepath.Join(run, "checkpoint")},
		{[]string{"--adapter", run}, "--adapter " + run + " is a run directory: score the adapter it saved, --adapter " + best + " (its last/ is saved when the run ends, and the run " + stopped + ")"},
	} {
		if err := runTask(c.args, io.Discard, io.Discard); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	lock, err := train.LockDir(run) // as a meazo-train training there holds it
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := runTask([]string{"--adapter", last}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "has no last/: it is saved when the run ends, and the run is still training (pid ") {
		t.Errorf("last/ of a run in training: %v", err)
	}
}

// demoRun trains the demo for a few steps (eval.skip, 32 training, 4
// validation and 8 test examples) with the extra overrides, its checkpoint
// first stored in bfloat16 with bf16 (and model.bf16_weights set), and
// returns the run's directory (WriteDemo's folder's run/).
func demoRun(t *testing.T, bf16 bool, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	overrides := []string{"eval.skip=true", "task.max_train=32", "task.max_validation=4", "task.max_test=8", "output.dir=" + run}
	if bf16 {
		toBF16(t, filepath.Join(dir, "model", "model.safetensors"))
		overrides = append(overrides, "model.bf16_weights=true")
	}
	if _, err := train.Run(train.Options{ConfigPath: cfg, Overrides: append(overrides, extra...), Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestTaskFromRunBF16: a run that held its bfloat16 checkpoint in bfloat16
// (model.bf16_weights) is scored so again (--bf16-weights taken, written
// as a bool flag is typed): the same scores as in float32, in half the
// weights' memory, where meazo-eval widened them to float32, twice what
// the run needed (Ministral-3 14B: 50 GiB instead of 25).
func TestTaskFromRunBF16(t *testing.T) {
	run := demoRun(t, true)
	var out, log strings.Builder
	if err := runTask([]string{"--adapter", filepath.Join(run, "best")}, &out, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "--max-examples 8 --bf16-weights=true") || strings.Contains(log.String(), "no effect") {
		t.Errorf("log %q: want --bf16-weights=true taken from the run", log.String())
	}
	var f32 strings.Builder
	if err := runTask([]string{"--adapter", filepath.Join(run, "best"), "--bf16-weights=false"}, &f32, io.Discard); err != nil {
		t.Fatal(err)
	}
	if out.String() != f32.String() {
		t.Errorf("bfloat16 storage scored %s, float32 %s: want the same", out.String(), f32.String())
	}
}

// TestTaskBF16Products: --bf16-products opens the backend with bfloat16
// products, and needs --bf16-weights; a run with model.bf16_products is
// scored so again (taken from its config.yaml, with its bf16_weights), a
// command line that says otherwise gets a note, and one that drops its
// --bf16-weights alone is refused, naming both. On the CPU it has no
// effect: the scores are float32's, and the log says so once.
func TestTaskBF16Products(t *testing.T) {
	run := demoRun(t, true, "model.bf16_products=true")
	best := filepath.Join(run, "best")
	const note = "--bf16-products: the cpu backend has no bfloat16 products, so it has no effect"
	var out, log strings.Builder
	if err := runTask([]string{"--adapter", best, "--backend", "cpu"}, &out, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "--bf16-weights=true --bf16-products=true") || strings.Count(log.String(), note) != 1 {
		t.Errorf("log %q: want --bf16-weights=true --bf16-products=true taken from the run, and once %q", log.String(), note)
	}
	var f32, f32log strings.Builder
	if err := runTask([]string{"--adapter", best, "--backend", "cpu", "--bf16-products=false"}, &f32, &f32log); err != nil {
		t.Fatal(err)
	}
	if out.String() != f32.String() {
		t.Errorf("on the CPU, bfloat16 products scored %s, float32's %s: want the same", out.String(), f32.String())
	}
	if !strings.Contains(f32log.String(), "note: --bf16-products differs from the run's model.bf16_products") || strings.Contains(f32log.String(), note) {
		t.Errorf("--bf16-products=false on a run with them: log %q; want a note that it differs, and no note that it has no effect", f32log.String())
	}
	err := runTask([]string{"--adapter", best, "--bf16-weights=false"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--bf16-weights=false, but the run's model.bf16_products (taken as --bf16-products)") {
		t.Errorf("--bf16-weights=false on a run with bf16_products: %v", err)
	}
	dir := filepath.Dir(run) // WriteDemo's folder: the model and the data
	err = runTask([]string{"--model", filepath.Join(dir, "model"), "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--bf16-products"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--bf16-products multiplies the weights that --bf16-weights keeps in bfloat16: add --bf16-weights") {
		t.Errorf("--bf16-products without --bf16-weights: %v", err)
	}
}

// toBF16 rewrites the safetensors file at path with every tensor rounded
// to and stored as bfloat16, as published checkpoints are.
func toBF16(t *testing.T, path string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, info := range f.Tensors() {
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.BF16Tensor(info.Name, info.Shape, v))
	}
	f.Close()
	if err := safetensors.WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

// TestTaskFromRunAlias: a flag given by its other spelling (--max-test for
// --max-examples) counts as given: the run's value does not replace it.
func TestTaskFromRunAlias(t *testing.T) {
	run := demoRun(t, false)
	score := func(args ...string) (string, string) {
		t.Helper()
		var out, log strings.Builder
		if err := runTask(args, &out, &log); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return out.String(), log.String()
	}
	best := filepath.Join(run, "best")
	want, _ := score("--adapter", best, "--max-examples", "3")
	got, log := score("--adapter", best, "--max-test", "3")
	if strings.Contains(log, "--max-examples 8") || got != want {
		t.Errorf("--max-test 3 scored %s (log %q), --max-examples 3 %s", got, log, want)
	}
}

// TestImageTaskRefusesStem: --stem, --rouge-stem's other spelling, is
// refused on an image task as --rouge-stem is.
func TestImageTaskRefusesStem(t *testing.T) {
	err := runTask([]string{"--model", "../../model/testdata/vit/vit-tiny", "--task", "pets", "--data", "../../train/testdata/pets/test.parquet", "--stem"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--stem: not for an image task") {
		t.Errorf("--stem on pets: %v", err)
	}
}

// TestTaskOnPrunedRun: a finished run that kept only best/ or no weights
// (output.keep_weights) says so when its last/, best/ or directory is
// given, rather than that the run has not ended.
func TestTaskOnPrunedRun(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	type evalCase struct {
		args []string
		want string
	}
	for _, keep := range []string{"best", "none"} {
		run := filepath.Join(dir, keep)
		if _, err := train.Run(train.Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"output.dir=" + run, "task.max_train=32",
			"task.max_validation=8", "task.max_test=8", "output.keep_weights=" + keep}}); err != nil {
			t.Fatal(err)
		}
		kept := map[string]string{"best": "only its best/", "none": "none of its weights"}[keep]
		pruned := "is done and kept " + kept + " (output.keep_weights: " + keep + "); its test results are in " + filepath.Join(run, "summary.json")
		last, best := filepath.Join(run, "last"), filepath.Join(run, "best")
		cases := []evalCase{{[]string{"--adapter", last}, "--adapter " + last + ": the run " + run + " " + pruned}}
		if keep == "best" {
			cases = append(cases, evalCase{[]string{"--adapter", run}, "--adapter " + run + " is a run directory: score the adapter it saved, --adapter " + best + " (the run " + pruned + ")"})
		} else {
			cases = append(cases, evalCase{[]string{"--adapter", best}, "--adapter " + best + ": the run " + run + " " + pruned},
				evalCase{[]string{"--adapter", run}, "--adapter " + run + " is a run directory: the run " + pruned})
		}
		for _, c := range cases {
			if err := runTask(c.args, io.Discard, io.Discard); err == nil || err.Error() != c.want {
				t.Errorf("%q:\n got %v\nwant %s", c.args, err, c.want)
			}
		}
		// What a crash during the removal leaves of last/ (its description
		// goes first) is named as pruned too.
		if err := os.MkdirAll(last, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(last, "adapter_model.safetensors"), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runTask(cases[0].args, io.Discard, io.Discard); err == nil || err.Error() != cases[0].want {
			t.Errorf("a partial last/ of a pruned run: %v, want %s", err, cases[0].want)
		}
	}
	// A diverged run has no test results to point to.
	run := filepath.Join(dir, "diverged")
	if _, err := train.Run(train.Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"output.dir=" + run, "task.max_train=32",
		"task.max_validation=8", "task.max_test=8", "optimizer.name=zo-sgd", "optimizer.lr=1e30", "output.keep_weights=none"}}); err != nil {
		t.Fatal(err)
	}
	want := "--adapter " + run + " is a run directory: the run is diverged and kept none of its weights (output.keep_weights: none); " +
		"it has no test results; its validation losses are in " + filepath.Join(run, "summary.json")
	if err := runTask([]string{"--adapter", run}, io.Discard, io.Discard); err == nil || err.Error() != want {
		t.Errorf("a diverged run:\n got %v\nwant %s", err, want)
	}
}

// TestTaskFromRunRelativePaths: a run started with relative paths (as the
// shipped configs have them), scored from another directory, reads its
// model and test file where the run did (the directory its output.dir says
// it was started from), with a note; it failed with "no such file".
func TestTaskFromRunRelativePaths(t *testing.T) {
	dir := t.TempDir()
	cfg, err := train.WriteDemo(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, err := train.Run(train.Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"eval.skip=true", "model.path=model",
		"task.train=data/train.tsv", "task.test=data/dev.tsv", "task.max_validation=4", "task.max_test=6", "output.dir=runs/r"}}); err != nil {
		t.Fatal(err)
	}
	best := filepath.Join(dir, "runs", "r", "best")
	var here strings.Builder
	if err := runTask([]string{"--adapter", best}, io.Discard, &here); err != nil || strings.Contains(here.String(), "note: the run's model.path") {
		t.Fatalf("from where the run started: %v, log %q", err, here.String())
	}
	t.Chdir(t.TempDir())
	var log strings.Builder
	if err := runTask([]string{"--adapter", best}, io.Discard, &log); err != nil {
		t.Fatalf("from elsewhere: %v\n%s", err, log.String())
	}
	if want := "note: the run's model.path model is relative to where the run was started, " + dir + ": reading " + filepath.Join(dir, "model"); !strings.Contains(log.String(), want) {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}
