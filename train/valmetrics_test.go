package train

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
)

// valLines reads the validation lines of a run's metrics.jsonl.
func valLines(t *testing.T, dir string) []rundir.ValLine {
	t.Helper()
	var out []rundir.ValLine
	for _, line := range readLines(t, filepath.Join(dir, "metrics.jsonl")) {
		var l rundir.ValLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind == rundir.KindVal {
			out = append(out, l)
		}
	}
	return out
}

// checkValMetricsAreEvaluate checks a finished run with
// eval.validation_metrics: every validation (step 0's included) logged
// its metric, once; summary.json's best_val_metrics are the best step's
// line's and equal, exactly, what evaluate (Evaluate on the validation
// examples) scores best/ at, and last_val_metrics the last line's and
// last/'s; and some validation's metric differs from step 0's, so that
// the comparison sees the parameters of each step.
func checkValMetricsAreEvaluate(t *testing.T, out string, steps []int, evaluate func(adapter string) map[string]float64) {
	t.Helper()
	lines := valLines(t, out)
	var got []int
	for _, l := range lines {
		got = append(got, l.Step)
		if len(l.ValMetrics) == 0 {
			t.Fatalf("validation of step %d: no val_metrics", l.Step)
		}
	}
	if !slices.Equal(got, steps) {
		t.Fatalf("validations of steps %v, want %v, each once", got, steps)
	}
	s := readSummary(t, out)
	best := lines[slices.IndexFunc(lines, func(l rundir.ValLine) bool { return l.Step == s.BestStep })]
	last := lines[len(lines)-1]
	if !maps.Equal(s.BestValMetrics, best.ValMetrics) || !maps.Equal(s.LastValMetrics, last.ValMetrics) {
		t.Errorf("summary: best_val_metrics %v, last_val_metrics %v; the lines of steps %d and %d: %v, %v",
			s.BestValMetrics, s.LastValMetrics, best.Step, last.Step, best.ValMetrics, last.ValMetrics)
	}
	for _, c := range []struct {
		adapter string
		want    map[string]float64
	}{{"best", best.ValMetrics}, {"last", last.ValMetrics}} {
		if res := evaluate(filepath.Join(out, c.adapter)); !maps.Equal(res, c.want) {
			t.Errorf("%s/ scored on the validation examples: %v; the run's validation metric of its step: %v", c.adapter, res, c.want)
		}
	}
	if !slices.ContainsFunc(lines, func(l rundir.ValLine) bool { return !maps.Equal(l.ValMetrics, lines[0].ValMetrics) }) {
		t.Errorf("every validation scored %v: the test cannot tell the steps' parameters apart", lines[0].ValMetrics)
	}
}

// TestValidationMetricsText: with eval.validation_metrics, an SST-2 run
// logs the validation accuracy at every validation, the accuracy
// meazo-eval's Evaluate gives the same parameters saved as an adapter on
// the validation examples; and the run's validation losses, best step and
// adapters are those of the same run without it (the selection stays on
// the loss), whose lines, summary and checkpoint hold no metric field.
func TestValidationMetricsText(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	val := filepath.Join(dir, "data", "dev.tsv")
	set := []string{"task.validation=" + val, "task.max_validation=24", "task.max_train=200", "train.eval_every=2",
		"optimizer.lr=0.05", "eval.batch_size=5", "eval.skip=true"}
	on, off := filepath.Join(dir, "on"), filepath.Join(dir, "off")
	var log strings.Builder
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+on, "eval.validation_metrics=true"), Log: &log}); err != nil {
		t.Fatal(err)
	}
	m, tok := demoModel(t, dir)
	checkValMetricsAreEvaluate(t, on, []int{0, 2, 4, 6}, func(adapter string) map[string]float64 {
		res, err := Evaluate(m, tok, EvalOptions{Adapter: adapter, Task: "sst2", Data: val, MaxExamples: 24, BatchSize: 5, MaxLength: data.DefaultMaxTokens})
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
	for _, want := range []string{"validation of step 0: loss ", "(accuracy "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+off)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"metrics.jsonl", "summary.json", "checkpoint/state.json"} {
		if strings.Contains(readFile(t, filepath.Join(off, f)), "val_metrics") {
			t.Errorf("off by default, yet %s has a val_metrics field", f)
		}
	}
	a, b := valLines(t, on), valLines(t, off)
	for i := range a {
		a[i].ValMetrics, a[i].ValMetricExamples = nil, 0
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the validation losses differ with the metric on:\n%v\n%v", a, b)
	}
	if s, u := readSummary(t, on), readSummary(t, off); s.BestStep != u.BestStep || readFile(t, filepath.Join(on, "best", "adapter_model.safetensors")) != readFile(t, filepath.Join(off, "best", "adapter_model.safetensors")) {
		t.Errorf("best step %d with the metric, %d without, or another best/", s.BestStep, u.BestStep)
	}
}

// TestValidationMetricsGeneration: a generation task's validation metric
// (exact_match, f1 and ROUGE, by greedy generation up to
// eval.max_new_tokens) is what Evaluate scores the validation examples at
// with the same parameters.
func TestValidationMetricsGeneration(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	train, test := f1Data(t, dir)
	out := filepath.Join(dir, "gen")
	set := append(f1RunSet(train, test), "train.objective=loss", "optimizer.lr=0.2", "task.validation="+test, "eval.skip=true",
		"eval.validation_metrics=true", "output.dir="+out)
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
		t.Fatal(err)
	}
	m, tok := demoModel(t, dir)
	checkValMetricsAreEvaluate(t, out, []int{0, 3, 6}, func(adapter string) map[string]float64 {
		res, err := Evaluate(m, tok, EvalOptions{Adapter: adapter, Task: "generation", Data: test, MaxExamples: 8, BatchSize: 5,
			MaxNewTokens: f1MaxNew, MaxLength: data.DefaultMaxTokens})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := res["f1"]; !ok {
			t.Fatalf("no f1: %v", res)
		}
		return res
	})
}

// TestValidationMetricsPets: an image task's validation accuracy (the
// class of the highest logit) is EvaluateImages' on the validation images
// with the same adapter.
func TestValidationMetricsPets(t *testing.T) {
	val, _, _ := halfOwnLabels(t) // half the images labelled with the ViT's own classes: an accuracy that can move
	train, _, _ := halfOwnLabelsOf(t, petsTrain)
	out := filepath.Join(t.TempDir(), "pets")
	if _, err := Run(Options{Overrides: petsSet(out, "task.train="+train, "task.validation="+val, "task.max_validation=10", "optimizer.lr=0.05",
		"eval.skip=true", "eval.validation_metrics=true")}); err != nil {
		t.Fatal(err)
	}
	m, proc := tinyViT(t)
	defer m.Free()
	checkValMetricsAreEvaluate(t, out, []int{0, 3, 6}, func(adapter string) map[string]float64 {
		res, err := EvaluateImages(m, proc, EvalOptions{Adapter: adapter, Task: string(data.Pets), Data: val, MaxExamples: 10, BatchSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
}

// TestValidationMetricsPetsIsFree: an image task's validation accuracy
// is read from the logits of the validation loss's forwards, no pass of
// its own: a run polls for a stop no more often with it (a pass of its
// own would poll between its batches, as the loss's does), and its losses
// are the same.
func TestValidationMetricsPetsIsFree(t *testing.T) {
	var polls [2]int
	var lines [2][]rundir.ValLine
	for i, on := range []string{"true", "false"} {
		out := filepath.Join(t.TempDir(), "pets")
		if _, err := Run(Options{Overrides: petsSet(out, "task.validation="+petsTest, "task.max_validation=10", "eval.skip=true",
			"eval.validation_metrics="+on), Stop: stopAt(0, &polls[i])}); err != nil {
			t.Fatal(err)
		}
		lines[i] = valLines(t, out)
	}
	if polls[0] != polls[1] {
		t.Errorf("%d polls with the metric, %d without: the metric ran a pass of its own", polls[0], polls[1])
	}
	if len(lines[0]) != 3 || len(lines[0][0].ValMetrics) == 0 {
		t.Fatalf("validations with the metric: %v", lines[0])
	}
	for i := range lines[0] {
		lines[0][i].ValMetrics, lines[0][i].ValMetricExamples = nil, 0
	}
	if !reflect.DeepEqual(lines[0], lines[1]) {
		t.Errorf("the validation losses differ with the metric on:\n%v\n%v", lines[0], lines[1])
	}
}

// TestValidationMetricsTextIsFree: an SST-2 run's validation accuracy
// (its label words one token each) is counted in the validation loss's
// forwards (valChoices), no pass of its own: a run polls for a stop no more
// often with it, and its losses are the same. (TestValidationMetricsText
// checks that the accuracy is the test evaluation's.)
func TestValidationMetricsTextIsFree(t *testing.T) {
	_, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=2", "task.max_train=100", "task.max_validation=9", "eval.batch_size=4", "eval.skip=true"}
	var polls [2]int
	var lines [2][]rundir.ValLine
	for i, on := range []string{"true", "false"} {
		out := filepath.Join(t.TempDir(), "free")
		if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+out, "eval.validation_metrics="+on), Stop: stopAt(0, &polls[i])}); err != nil {
			t.Fatal(err)
		}
		lines[i] = valLines(t, out)
	}
	if polls[0] != polls[1] {
		t.Errorf("%d polls with the metric, %d without: the metric ran a pass of its own", polls[0], polls[1])
	}
	if len(lines[0]) != 3 || len(lines[0][0].ValMetrics) == 0 || lines[0][0].ValMetricExamples != 9 {
		t.Fatalf("validations with the metric: %v", lines[0])
	}
	for i := range lines[0] {
		lines[0][i].ValMetrics, lines[0][i].ValMetricExamples = nil, 0
	}
	if !reflect.DeepEqual(lines[0], lines[1]) {
		t.Errorf("the validation losses differ with the metric on:\n%v\n%v", lines[0], lines[1])
	}
}

// TestValidationMetricsStopAnywhere: with eval.validation_metrics, a stop
// at any poll, those between the batches of a validation's metric
// included, is resumed into the uninterrupted run, bit for bit, each
// validation logged once (checkStopAnywhere): an adapter's, whose stop in
// a later validation checkpoints the state before its step, and the
// model's own weights, whose stop leaves the validation pending; SST-2's
// metric counted in the loss's forwards (valChoices), and a classification
// whose labels are several tokens each scored by a pass of its own.
func TestValidationMetricsStopAnywhere(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	own := func(name string) string {
		return demoRows(t, dir, name, "own", func(_ int, ex data.Example) map[string]any {
			return map[string]any{"text": ex.Sentence, "label": accLabels[ex.Label]}
		})
	}
	for _, tc := range []struct {
		name  string
		set   []string
		extra int // polls a validation's metric adds to the loss's
	}{
		{"lora", nil, 0},
		{"full", []string{"adapter.kind=full", "optimizer.lr=1e-3"}, 0},
		// 7 examples, 14 candidates in batches of 3, polled after 6 and 12 (a whole example's end).
		{"classification", []string{"task.name=classification", "task.train=" + own("train"), "task.test=" + own("dev"), "task.labels=[negative, positive]"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append([]string{"train.eval_every=3", "train.checkpoint_every=4", "task.max_train=200", "task.max_validation=7",
				"task.max_test=4", "eval.batch_size=3", "eval.base=false", "eval.validation_metrics=true"}, tc.set...)
			var polls [2]int
			for i, on := range []string{"true", "false"} {
				out := filepath.Join(t.TempDir(), "polls")
				if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "eval.validation_metrics="+on, "output.dir="+out), Stop: stopAt(0, &polls[i])}); err != nil {
					t.Fatal(err)
				}
			}
			if validations := 3; polls[0] != polls[1]+tc.extra*validations {
				t.Fatalf("%d polls with the metric, %d without: want %d more a validation", polls[0], polls[1], tc.extra)
			}
			checkStopAnywhere(t, cfg, set, 0)
		})
	}
}

// TestCheckTimesTheValidationMetric: with eval.validation_metrics, --check
// scores the metric on its validation sample (the metric a run validating
// those examples logs at step 0), times it for the whole split, and counts
// it into every validation of its projection and its report
// (validation_metric_seconds, within validation_seconds): a classification
// whose labels are several tokens each, which a pass of its own scores.
// SST-2's metric, counted in the loss's forwards, takes no time of its
// own: the check says so, and neither its projection nor its report has a
// part for it. Without the metric, the report has no such part either.
func TestCheckTimesTheValidationMetric(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	own := func(name string) string {
		return demoRows(t, dir, name, "own", func(_ int, ex data.Example) map[string]any {
			return map[string]any{"text": ex.Sentence, "label": accLabels[ex.Label]}
		})
	}
	set := []string{"eval.batch_size=2", "task.max_test=8", "model.backend=cpu", "train.eval_every=1"}
	cls := append(slices.Clone(set), "task.name=classification", "task.train="+own("train"), "task.test="+own("dev"), "task.labels=[negative, positive]")
	var log syncBuilder
	rep, err := Check(Options{ConfigPath: cfg, Overrides: append(slices.Clone(cls), "output.dir="+dir+"/c", "eval.validation_metrics=true"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	out := dir + "/r"
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(cls), "output.dir="+out, "task.max_validation=8", "eval.validation_metrics=true")}); err != nil {
		t.Fatal(err)
	}
	got := log.String()
	want := fmt.Sprintf("validation metric at step 0 over the first 8 of its 64 examples (eval.validation_metrics): %s (", FormatMetrics(valLines(t, out)[0].ValMetrics))
	if !strings.Contains(got, want) || strings.Contains(got, "no time of its own") {
		t.Errorf("want %q, timed, in:\n%s", want, got)
	}
	if !(rep.ValidationMetricSeconds > 0) || !(rep.ValidationSeconds > rep.ValidationMetricSeconds) {
		t.Errorf("report: validation_seconds %v, validation_metric_seconds %v", rep.ValidationSeconds, rep.ValidationMetricSeconds)
	}
	// Step 0's validation and the 2 steps': each with its metric.
	if want := fmt.Sprintf("+ validation %s (3 × %s, as step 0's, its metric %s of it) +", FormatDuration(3*rep.ValidationSeconds),
		FormatDuration(rep.ValidationSeconds), FormatDuration(rep.ValidationMetricSeconds)); !strings.Contains(got, want) {
		t.Errorf("want %q in:\n%s", want, got)
	}
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"validation_metric_seconds":`) {
		t.Errorf("the report's JSON: %s (%v)", b, err)
	}

	for _, on := range []bool{true, false} {
		log = syncBuilder{}
		over := append(slices.Clone(set), "output.dir="+dir+"/c")
		if on {
			over = append(over, "eval.validation_metrics=true")
		}
		if rep, err = Check(Options{ConfigPath: cfg, Overrides: over, Log: &log}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		if rep.ValidationMetricSeconds != 0 || strings.Contains(string(b), "validation_metric") || strings.Contains(log.String(), "its metric") {
			t.Errorf("sst2, metric %v: the report %s, or the projection counts a metric:\n%s", on, b, log.String())
		}
		if free := strings.Contains(log.String(), "validation metric at step 0 over the first 8 of its 64 examples (eval.validation_metrics): accuracy ") &&
			strings.Contains(log.String(), "(counted in the validation loss's forwards: no time of its own)"); free != on {
			t.Errorf("sst2, metric %v: the check's line of a metric counted in the loss's forwards: %v, in:\n%s", on, free, log.String())
		}
	}
}

// TestProjectionCountsTheValidationMetric: a validation's metric time is
// projected on top of its loss's at every validation to come.
func TestProjectionCountsTheValidationMetric(t *testing.T) {
	p := projection{stepSecs: 1, stepsLeft: 10, validations: 3, valSecs: 10, valStep: 0}
	_, off, _ := p.parts()
	p.valMetricSecs = 5
	parts, on, _ := p.parts()
	if off != 40 || on != 55 {
		t.Errorf("projected %v s without the metric, %v s with it (%v): want 40 and 55", off, on, parts)
	}
}

// TestProgressShowsTheValidationMetric: with eval.validation_metrics the
// progress line of a validation's step shows its metric after its loss,
// whatever train.log_every; a step between validations is logged only as
// log_every says, and an older validation's metric says its step.
func TestProgressShowsTheValidationMetric(t *testing.T) {
	var b strings.Builder
	p := newProgress(newRunLog(&b), false, 10, 5, nil)
	p.begin(0)
	p.start = time.Now().Add(-3 * time.Second)
	p.valMetrics = map[string]float64{"accuracy": 0.75}
	p.update(3, 1, 0.5, 0.25, 3)
	if want := "step 3/10 loss 1.0000 val 0.2500 (accuracy 0.750), 0.50 s/step"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("the validation's step: %q, want %q", b.String(), want)
	}
	b.Reset()
	p.update(4, 1, 0.5, 0.25, 3)
	if b.String() != "" {
		t.Errorf("a step between validations, not a multiple of log_every: %q", b.String())
	}
	p.update(5, 1, 0.5, 0.25, 3)
	if want := "step 5/10 loss 1.0000 val 0.2500 (accuracy 0.750) (step 3), "; !strings.HasPrefix(b.String(), want) {
		t.Errorf("log_every's step: %q, want %q", b.String(), want)
	}
}

// TestValidationMetricsOnResume: eval.validation_metrics may be turned on
// when a run is resumed (it changes no parameter): the validations from
// then on log the metric, the earlier ones stay as they were.
func TestValidationMetricsOnResume(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	out := filepath.Join(dir, "run")
	set := []string{"train.eval_every=2", "train.checkpoint_every=2", "task.max_train=100", "task.max_validation=8", "eval.skip=true", "output.dir=" + out}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	s, err := Run(Options{Resume: out, Overrides: []string{"eval.validation_metrics=true"}})
	if err != nil {
		t.Fatal(err)
	}
	var with []int
	for _, l := range valLines(t, out) {
		if l.ValMetrics != nil {
			with = append(with, l.Step)
		}
	}
	if !slices.Equal(with, []int{4}) || s.LastValMetrics == nil {
		t.Errorf("validations with a metric: %v (want step 4's), last_val_metrics %v", with, s.LastValMetrics)
	}
}

// TestValidationMetricsNoneScorable: where the test evaluation's rules
// leave none of the validation examples to score (here every generation
// prompt with eval.max_new_tokens exceeds task.max_length), the refusal
// names eval.validation_metrics, the key that asked for it, rather than
// calling the examples the validation loss has just encoded too long.
func TestValidationMetricsNoneScorable(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	train, test := f1Data(t, dir)
	set := append(f1RunSet(train, test), "train.objective=loss", "task.validation="+test, "eval.skip=true",
		"eval.max_new_tokens=5000", "output.dir="+filepath.Join(dir, "run"))
	var log strings.Builder
	_, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "eval.validation_metrics=true"), Log: &log})
	if err == nil || !strings.Contains(err.Error(), "eval.validation_metrics: validation split: no example left to score: every example's evaluation would exceed task.max_length") ||
		!strings.Contains(err.Error(), "turn eval.validation_metrics off") {
		t.Fatalf("error %v, want a refusal naming eval.validation_metrics; log:\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "validation split: 8 examples encoded") {
		t.Errorf("the validation loss's examples fit, yet the log says:\n%s", log.String())
	}
	// Without the metric the same run trains (its validation loss needs no room to generate).
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
		t.Errorf("eval.validation_metrics off: %v", err)
	}
}

// TestValidationMetricExamples: where the length rule leaves some
// validation examples out of the metric (here 2 of 8, whose prompt and
// eval.max_new_tokens exceed task.max_length) though not out of the loss,
// every validation line and summary.json say how many the metric is over
// (val_metric_examples), the log's count; a run without the metric says
// nothing of it.
func TestValidationMetricExamples(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	train, test := f1Data(t, dir)
	out := filepath.Join(dir, "run")
	set := append(f1RunSet(train, test), "train.objective=loss", "task.validation="+test, "eval.skip=true",
		"task.max_length=64", "eval.max_new_tokens=44", "train.eval_every=1")
	var log strings.Builder
	s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+out, "eval.validation_metrics=true"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if want := "validation split: 2 examples skipped as their evaluation would exceed task.max_length 64 tokens"; !strings.Contains(log.String(), want) ||
		!strings.Contains(log.String(), "the metric is over the other 6\n") {
		t.Fatalf("the log does not leave 2 of the 8 out of the metric:\n%s", log.String())
	}
	lines := valLines(t, out)
	for _, l := range lines {
		if l.ValMetricExamples != 6 {
			t.Errorf("validation of step %d: val_metric_examples %d, want 6", l.Step, l.ValMetricExamples)
		}
	}
	if len(lines) != 3 || s.ValMetricExamples != 6 || readSummary(t, out).ValMetricExamples != 6 {
		t.Errorf("%d validations; summary's val_metric_examples %d (summary.json's %d), want 6", len(lines), s.ValMetricExamples, readSummary(t, out).ValMetricExamples)
	}
	off := filepath.Join(dir, "off")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+off)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"metrics.jsonl", "summary.json"} {
		if strings.Contains(readFile(t, filepath.Join(off, f)), "val_metric_examples") {
			t.Errorf("off, yet %s has val_metric_examples", f)
		}
	}
}

// TestProgressBarShowsOneValidationMetric: a terminal's bar, redrawn in
// place, shows the task's own metric of a validation (SQuAD's f1, XSum's
// and generation's rougeL, accuracy), not all of generation's six, whose
// line would wrap on a terminal and leave a line behind at every step;
// the log's lines show them all.
func TestProgressBarShowsOneValidationMetric(t *testing.T) {
	gen := map[string]float64{"exact_match": 12.5, "f1": 47.7, "rouge1": 46.7, "rouge2": 18.8, "rougeL": 46.7, "rougeLsum": 46.7}
	for _, c := range []struct {
		metrics map[string]float64
		want    string
	}{
		{gen, " val 0.2500 (rougeL 46.70)  "},
		{map[string]float64{"exact_match": 58.2, "f1": 70.4}, " val 0.2500 (f1 70.40)  "},
		{map[string]float64{"accuracy": 0.75}, " val 0.2500 (accuracy 0.750)  "},
	} {
		var b strings.Builder
		p := newProgress(newRunLog(&b), true, 10, 5, nil)
		p.begin(0)
		p.valMetrics = c.metrics
		p.update(3, 1, 0.5, 0.25, 3)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("the bar %q, want %q in it", b.String(), c.want)
		}
	}
	var b strings.Builder
	p := newProgress(newRunLog(&b), false, 10, 5, nil)
	p.begin(0)
	p.valMetrics = gen
	p.update(3, 1, 0.5, 0.25, 3)
	if want := " val 0.2500 (" + FormatMetrics(gen) + "), "; !strings.Contains(b.String(), want) {
		t.Errorf("the log's line %q, want %q in it", b.String(), want)
	}
}

// TestValidationMetricsPromptAndFull: the validation accuracy of a
// prompt-tuning run and of full-parameter runs (joint and grouped, whose
// best/ and last/ are model directories) is what Evaluate scores the saved
// parameters at on the validation examples.
func TestValidationMetricsPromptAndFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"prompt", []string{"adapter.kind=prompt", "adapter.virtual_tokens=3", "optimizer.lr=0.05"}},
		{"full", []string{"adapter.kind=full", "optimizer.lr=1e-3"}},
		{"full-grouped", []string{"adapter.kind=full", "adapter.grouped=true", "optimizer.lr=1e-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg := demoConfig(t, 6)
			val, out := filepath.Join(dir, "data", "dev.tsv"), filepath.Join(dir, "run")
			set := append([]string{"task.validation=" + val, "task.max_validation=24", "task.max_train=200", "train.eval_every=2",
				"eval.batch_size=5", "eval.skip=true", "eval.validation_metrics=true", "output.dir=" + out}, tc.set...)
			if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
				t.Fatal(err)
			}
			_, tok := demoModel(t, dir)
			checkValMetricsAreEvaluate(t, out, []int{0, 2, 4, 6}, func(saved string) map[string]float64 {
				from, adapter := filepath.Join(dir, "model"), saved
				if tc.name != "prompt" { // a full-parameter run's best/ and last/ are the model itself
					from, adapter = saved, ""
				}
				m, err := model.Load(from)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Free()
				res, err := Evaluate(m, tok, EvalOptions{Adapter: adapter, Task: "sst2", Data: val, MaxExamples: 24, BatchSize: 5, MaxLength: data.DefaultMaxTokens})
				if err != nil {
					t.Fatal(err)
				}
				return res
			})
		})
	}
}
