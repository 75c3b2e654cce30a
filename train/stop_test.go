package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/rundir"
)

// stopAt is an Options.Stop that asks to stop from its n-th poll on, as a
// signal does in meazo-train (once it has come, every poll answers it);
// polls counts the polls.
func stopAt(n int, polls *int) func() string {
	return func() string {
		*polls++
		if n > 0 && *polls >= n {
			return "SIGUSR1"
		}
		return ""
	}
}

// setupPolls is how often a run polls for a stop before its first step in
// these tests: before it loads the model, and as it starts encoding the
// train and the validation splits (then every 512 examples; the tests' splits
// are shorter).
const setupPolls = 3

// checkStopAnywhere stops a run at each point where it polls for a stop
// request (while it starts, between steps, between the batches of a
// validation, step 0's included, and between those of the test
// evaluations; with last > 0, only at the last polls), then stops the
// resumed run again at its second poll after its start, resumes it to the
// end, and compares metrics.jsonl, the summary's test metrics and best
// validation loss, and best/ with an uninterrupted run's. A run stopped while
// it starts has nothing to resume: it is started again.
func checkStopAnywhere(t *testing.T, cfg string, set []string, last int) {
	t.Helper()
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	polls := 0
	want, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Stop: stopAt(0, &polls)})
	if err != nil {
		t.Fatal(err)
	}
	scored := 0.0
	for _, v := range want.Test["last"] {
		scored += v
	}
	if want.Status != "done" || scored == 0 { // all 0: the comparisons below could not see the running sums
		t.Fatalf("the uninterrupted run: status %q, test %v", want.Status, want.Test)
	}
	wantMetrics, _ := os.ReadFile(filepath.Join(whole, "metrics.jsonl"))
	wantAnswers := checkRunAnswers(t, whole, want)
	bestFile := filepath.Join("best", "adapter_model.safetensors")
	if slices.Contains(set, "adapter.kind=full") {
		bestFile = filepath.Join("best", "model.safetensors")
	}
	wantBest, _ := os.ReadFile(filepath.Join(whole, bestFile))
	steps := want.Steps
	if polls <= steps+4 {
		t.Fatalf("%d polls in a run of %d steps: the evaluations are not polled", polls, steps)
	}
	first := 1
	if last > 0 {
		first = polls - last + 1
	}
	for at := first; at <= polls; at++ {
		cut := filepath.Join(root, "cut", string(rune('a'+at/26))+string(rune('a'+at%26)))
		n := 0
		s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), Stop: stopAt(at, &n)})
		if at <= setupPolls {
			if !errors.Is(err, ErrStoppedStarting) || !strings.HasSuffix(err.Error(), "before its first step; nothing had run yet: start it again") {
				t.Fatalf("stop at poll %d, while the run starts: %v", at, err)
			}
			if _, err := os.Stat(filepath.Join(cut, "checkpoint")); !os.IsNotExist(err) {
				t.Fatalf("stop at poll %d, while the run starts: a checkpoint (%v)", at, err)
			}
			// Started again, the directory is taken, and the run is the same.
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut)}); err != nil {
				t.Fatalf("stop at poll %d, while the run starts, then a new start: %v", at, err)
			}
			if got := readFile(t, filepath.Join(cut, "metrics.jsonl")); got != string(wantMetrics) {
				t.Fatalf("stop at poll %d, then a new start: metrics.jsonl differs from the uninterrupted run's", at)
			}
			continue
		}
		if err != nil {
			t.Fatalf("stop at poll %d: %v", at, err)
		}
		st := readState(t, cut)
		got := readSummary(t, cut)
		if !s.Interrupted() || got.Status != "interrupted" || got.Signal != "SIGUSR1" || got.StepsDone != st.Step {
			t.Fatalf("stop at poll %d: status %q signal %q steps_done %d, checkpoint at step %d", at, got.Status, got.Signal, got.StepsDone, st.Step)
		}
		if last > 0 && (st.Test == nil || st.Test.Partial.Done == 0) {
			t.Fatalf("stop at poll %d: not in a test evaluation (checkpoint %+v)", at, st)
		}
		if st.Test != nil && st.Test.Current != "" { // the answers so far, for the resumed evaluation to go on with
			kept, err := os.ReadFile(filepath.Join(cut, "checkpoint", rundir.PartialPredictionsFile))
			if n := strings.Count(string(kept), "\n"); err != nil || n != st.Test.Partial.Done {
				t.Fatalf("stop at poll %d, at example %d of the test evaluation: %d answers kept (%v)", at, st.Test.Partial.Done, n, err)
			}
		}
		if trainLines := strings.Count(readFile(t, filepath.Join(cut, "metrics.jsonl")), `"kind":"train"`); trainLines != st.Step {
			t.Fatalf("stop at poll %d: metrics.jsonl has %d steps, the checkpoint %d", at, trainLines, st.Step)
		}
		// Again at the resumed run's second poll after its start, then to the end.
		n = 0
		end, err := Run(Options{Resume: cut, Stop: stopAt(setupPolls+2, &n)})
		if err != nil {
			t.Fatalf("stop at poll %d, then at the resumed run's second: %v", at, err)
		}
		if at == setupPolls+1 { // and once while the resume starts: its checkpoint stays as it was
			before := readFile(t, filepath.Join(cut, "checkpoint", "state.json"))
			n = 0
			_, err := Run(Options{Resume: cut, Stop: stopAt(setupPolls, &n)})
			if !errors.Is(err, ErrStoppedStarting) || !strings.Contains(err.Error(), "SIGUSR1 while encoding the validation split, before its first step; its checkpoint is unchanged: continue with --resume "+cut) {
				t.Fatalf("stop at poll %d, then while the resume starts: %v", at, err)
			}
			if readFile(t, filepath.Join(cut, "checkpoint", "state.json")) != before {
				t.Fatalf("stop at poll %d, then while the resume starts: the checkpoint changed", at)
			}
		}
		if end.Interrupted() {
			if end, err = Run(Options{Resume: cut}); err != nil {
				t.Fatalf("stop at poll %d, resumed: %v", at, err)
			}
		}
		// Done, it is not resumed again (its test evaluation would run again).
		if _, err := Run(Options{Resume: cut}); err == nil || !strings.Contains(err.Error(), "is finished") {
			t.Fatalf("stop at poll %d, resumed once it was done: %v, want a refusal", at, err)
		}
		if end.Status != "done" || !reflect.DeepEqual(end.Test, want.Test) || *end.BestValLoss != *want.BestValLoss || end.BestStep != want.BestStep ||
			!reflect.DeepEqual(end.BestValMetrics, want.BestValMetrics) || !reflect.DeepEqual(end.LastValMetrics, want.LastValMetrics) {
			t.Fatalf("stop at poll %d, resumed: status %q test %v best %v at %d (validation metrics %v, last %v); uninterrupted: test %v best %v at %d (%v, %v)",
				at, end.Status, end.Test, *end.BestValLoss, end.BestStep, end.BestValMetrics, end.LastValMetrics,
				want.Test, *want.BestValLoss, want.BestStep, want.BestValMetrics, want.LastValMetrics)
		}
		if got := readFile(t, filepath.Join(cut, "metrics.jsonl")); got != string(wantMetrics) {
			t.Fatalf("stop at poll %d: metrics.jsonl of the resumed run differs from the uninterrupted run's", at)
		}
		if got, _ := os.ReadFile(filepath.Join(cut, bestFile)); len(got) == 0 || !bytes.Equal(got, wantBest) {
			t.Fatalf("stop at poll %d: best/ differs from the uninterrupted run's", at)
		}
		for name, answers := range wantAnswers {
			if got, _ := os.ReadFile(filepath.Join(cut, rundir.PredictionsFile(name))); !bytes.Equal(got, answers) {
				t.Fatalf("stop at poll %d: %s differs from the uninterrupted run's", at, rundir.PredictionsFile(name))
			}
		}
		if st := readState(t, cut); st.Test != nil || st.Step != steps {
			t.Fatalf("stop at poll %d, resumed: the finished run's checkpoint is at step %d with a test evaluation under way: %+v", at, st.Step, st.Test)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readState(t *testing.T, dir string) checkpointState {
	t.Helper()
	var st checkpointState
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "checkpoint", "state.json"))), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStopAnywhereIsResumedBitIdentically: the demo's sentiment task (scored
// by label log-probabilities, two candidates per example: an odd
// eval.batch_size splits examples between batches, where a stop must wait)
// at every poll, and the generative tasks (SQuAD, XSum) in their test
// evaluation (the best adapter, which is the last one (sameParams), 5
// examples in batches of 2: the last 2 polls), on data made of the demo's words, which the demo model generates
// often enough for scores above 0; and an image task's.
func TestStopAnywhereIsResumedBitIdentically(t *testing.T) {
	t.Run("sst2", func(t *testing.T) {
		_, cfg := demoConfig(t, 5)
		checkStopAnywhere(t, cfg, []string{"train.eval_every=3", "train.checkpoint_every=4", "task.max_train=200",
			"task.max_validation=7", "task.max_test=6", "eval.batch_size=3", "eval.base=true"}, 0)
	})
	// Full-parameter: a stop in a validation checkpoints the state after
	// its step, the validation pending; the test evaluation replaces the
	// model by best/ and the base model.
	t.Run("sst2-full", func(t *testing.T) {
		_, cfg := demoConfig(t, 5)
		checkStopAnywhere(t, cfg, []string{"adapter.kind=full", "optimizer.lr=1e-3", "train.eval_every=3", "train.checkpoint_every=4",
			"task.max_train=200", "task.max_validation=7", "task.max_test=6", "eval.batch_size=3", "eval.base=true"}, 0)
	})
	// An image task's test evaluations (12 images in batches of 5: the
	// last 4 polls), half of them labelled as the base model predicts, so
	// that the accuracies are not all 0.
	t.Run("pets", func(t *testing.T) {
		test, _, _ := halfOwnLabels(t)
		checkStopAnywhere(t, "", petsSet("", "task.test="+test, "eval.base=true"), 4)
	})
	for _, task := range []string{"squad", "xsum"} {
		t.Run(task, func(t *testing.T) {
			dir, _ := demoConfig(t, 2)
			file := writeDemoWordsData(t, dir, task, 5)
			checkStopAnywhere(t, "", []string{"model.path=" + filepath.Join(dir, "model"), "task.name=" + task,
				"task.train=" + file, "task.validation=" + file, "task.test=" + file, "adapter.r=8",
				"optimizer.lr=0.05", "optimizer.eps=1e-3", "train.steps=2", "train.batch_size=2", "train.eval_every=1",
				"eval.batch_size=2", "eval.max_new_tokens=8"}, 2)
		})
	}
}

// writeDemoWordsData writes n SQuAD (official JSON) or XSum (JSON Lines)
// examples made of the demo's words, every word an answer of each question
// and in each summary, and returns the file's path.
func writeDemoWordsData(t *testing.T, dir, task string, n int) string {
	t.Helper()
	words := slices.Concat(demoPositive, demoNegative, demoNouns)
	var b []byte
	var err error
	path := filepath.Join(dir, task+".json")
	if task == "xsum" {
		path += "l"
		for i := range n {
			line, _ := json.Marshal(map[string]string{"id": strconv.Itoa(i), "document": strings.Join(words[i:i+8], " "), "summary": strings.Join(words, " ")})
			b = append(append(b, line...), '\n')
		}
	} else {
		type answer struct {
			Text  string `json:"text"`
			Start int    `json:"answer_start"`
		}
		type qa struct {
			ID       string   `json:"id"`
			Question string   `json:"question"`
			Answers  []answer `json:"answers"`
		}
		type paragraph struct {
			Context string `json:"context"`
			QAs     []qa   `json:"qas"`
		}
		var ps []paragraph
		for i := range n {
			context := strings.Join(words[i:i+8], " ")
			q := qa{ID: strconv.Itoa(i), Question: "which word is " + words[i] + "?"}
			for _, w := range words {
				q.Answers = append(q.Answers, answer{w, max(strings.Index(context, w), 0)})
			}
			ps = append(ps, paragraph{context, []qa{q}})
		}
		b, err = json.Marshal(map[string]any{"version": "1.1", "data": []any{map[string]any{"title": "demo", "paragraphs": ps}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStopReport checks what a stop during an evaluation says, and what
// its checkpoint records.
func TestStopReport(t *testing.T) {
	_, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=2", "task.max_train=200", "task.max_validation=16", "task.max_test=8", "eval.batch_size=4"}
	for _, tc := range []struct {
		name    string
		more    []string // settings
		at      int      // the poll to stop at
		message string
		check   func(checkpointState) bool
	}{
		// Polls: 1-3 while the run starts (setupPolls); 4 before step 0's validation, 5-7 between its 4
		// batches; 8 before step 1; 9 before step 2; 10-12 in step 2's validation.
		{"step 0's validation", nil, 6, "interrupted by SIGUSR1 after step 0 of 4 (during the validation of step 0, which runs again first)",
			func(st checkpointState) bool { return st.ValidationPending && st.Step == 0 }},
		{"between steps", nil, 9, "interrupted by SIGUSR1 after step 1 of 4;",
			func(st checkpointState) bool { return !st.ValidationPending && st.Step == 1 }},
		{"a later validation", nil, 11, "interrupted by SIGUSR1 after step 1 of 4 (during the validation of step 2, which runs again with its step)",
			func(st checkpointState) bool { return !st.ValidationPending && st.Step == 1 }},
		// 13-14 before steps 3 and 4, 15 after step 4 (the last), 16-18 in its validation; 19 in the
		// best adapter's test (8 examples whose one-token labels are scored from one sequence each: 2
		// batches, a poll after example 4).
		{"the test evaluation", nil, 19, "interrupted by SIGUSR1 after step 4 of 4 (during the test evaluation, at example 4 of 8 of the best adapter's; resume goes on from there)",
			func(st checkpointState) bool {
				return st.Test != nil && st.Test.Current == "best" && st.Test.Partial.Done == 4 && len(st.Test.Partial.Sums) == 1 && st.Step == 4
			}},
		// Batches of 3: after the start's 3 polls, 5 in each validation (4 before step 0's, 5-9; 10-11
		// before steps 1-2, 12-16; 17-18 before steps 3-4, 19 after step 4, 20-24); the best adapter's
		// test: 8 sequences, one per example, end batches at 3, 6 and 8, and polls 25 and 26 come after
		// examples 3 and 6.
		{"a test evaluation in odd batches", []string{"eval.batch_size=3"}, 25,
			"interrupted by SIGUSR1 after step 4 of 4 (during the test evaluation, at example 3 of 8 of the best adapter's;",
			func(st checkpointState) bool { return st.Test != nil && st.Test.Partial.Done == 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			n := 0
			if _, err := Run(Options{ConfigPath: cfg, Overrides: slices.Concat(set, tc.more, []string{"output.dir=" + dir}), Stop: stopAt(tc.at, &n)}); err != nil {
				t.Fatal(err)
			}
			if s := readSummary(t, dir); !strings.HasPrefix(s.Message, tc.message) {
				t.Errorf("message %q, want it to begin %q", s.Message, tc.message)
			}
			if st := readState(t, dir); !tc.check(st) {
				t.Errorf("checkpoint state: %+v (test %+v)", st, st.Test)
			}
		})
	}
}

// TestEvalProgressLines: a long evaluation says how far it got.
func TestEvalProgressLines(t *testing.T) {
	var lines []string
	p := newEvalPass("test (best)", 10, func(s string) { lines = append(lines, s) }, nil)
	p.every = 0
	for done := 2; done <= 10; done += 2 {
		if err := p.after(done, done < 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "test (best): 2/10 examples (") || !strings.Contains(lines[3], "8/10 examples") {
		t.Errorf("progress lines %q", lines)
	}
	// Resumed at 6 of 10, 2 done in 2 minutes: 2 left take 2 more.
	lines = nil
	p = newEvalPass("test (best)", 10, func(s string) { lines = append(lines, s) }, nil)
	p.every, p.from, p.start = 0, 6, time.Now().Add(-2*time.Minute)
	if p.after(8, true); len(lines) != 1 || !strings.HasSuffix(lines[0], "8/10 examples (2m0s, ETA 2m0s)") {
		t.Errorf("resumed: progress lines %q", lines)
	}
}

// TestCheckTestProgress: a checkpoint's record of a stopped test
// evaluation is checked against the test set before resume uses it.
func TestCheckTestProgress(t *testing.T) {
	bad := func(format string, args ...any) error { return &stoppedError{reason: format} }
	for _, tc := range []struct {
		name string
		tp   testProgress
		ok   bool
	}{
		{"fresh", testProgress{}, true},
		{"under way", testProgress{Finished: map[string]map[string]float64{"best": {"f1": 3}}, Current: "last", Partial: evalPartial{Done: 4, Sums: []float64{1, 2.5}}}, true},
		{"unknown finished", testProgress{Finished: map[string]map[string]float64{"worst": {}}}, false},
		{"unknown current", testProgress{Current: "middle"}, false},
		{"past the test set", testProgress{Current: "best", Partial: evalPartial{Done: 11, Sums: []float64{0, 0}}}, false},
		{"negative done", testProgress{Current: "best", Partial: evalPartial{Done: -1}}, false},
		{"sums of another task", testProgress{Current: "best", Partial: evalPartial{Done: 4, Sums: []float64{1}}}, false},
		{"a sum too large", testProgress{Current: "best", Partial: evalPartial{Done: 4, Sums: []float64{5, 1}}}, false},
	} {
		if err := checkTestProgress(&tc.tp, 10, 2, bad); (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestStopInDivergingValidation: a stop in the validation that would find θ
// diverged leaves the checkpoint from before that step, as the run without
// a stop does, so that a resume with a smaller learning rate goes on.
func TestStopInDivergingValidation(t *testing.T) {
	_, cfg := demoConfig(t, 4)
	set := []string{"train.eval_every=1", "optimizer.lr=1e20", "task.max_train=200", "task.max_validation=16", "eval.batch_size=4", "eval.skip=true"}
	root := t.TempDir()
	whole, cut := filepath.Join(root, "whole"), filepath.Join(root, "cut")
	want, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)})
	if err != nil || want.Status != "diverged" || *want.DivergedAt != 1 {
		t.Fatalf("the run without a stop: %+v, %v; want it diverged at step 1's validation", want, err)
	}
	// Polls: 1 before step 0's validation, 2-4 in it, 5 before step 1, 6-8 in its validation.
	n := 0
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), Stop: stopAt(6, &n)}); err != nil {
		t.Fatal(err)
	}
	got, err := Run(Options{Resume: cut})
	if err != nil || got.Status != "diverged" || got.Message != strings.ReplaceAll(want.Message, whole, cut) || readState(t, cut).Step != 0 {
		t.Fatalf("stopped in step 1's validation, resumed: %q, %v, checkpoint at step %d; without a stop: %q", got.Message, err, readState(t, cut).Step, want.Message)
	}
	for _, dir := range []string{whole, cut} {
		if s, err := Run(Options{Resume: dir, Overrides: []string{"optimizer.lr=0.005"}}); err != nil || s.Status != "done" {
			t.Errorf("%s, resumed with a smaller rate: %+v, %v", dir, s, err)
		}
	}
	if a, b := readFile(t, filepath.Join(whole, "metrics.jsonl")), readFile(t, filepath.Join(cut, "metrics.jsonl")); a != b {
		t.Errorf("metrics.jsonl differ after the rescue")
	}
}

// TestProgressRate: s/step is the run's mean step time given, not the
// wall-clock rate (which includes validations and checkpoints: a resumed
// run's one step said 20 s/step for 7), while the ETA counts every step of
// this invocation, the first included (a one-step run said 0.00 s/step); a
// validation loss older than the step says its step.
func TestProgressRate(t *testing.T) {
	var b strings.Builder
	p := newProgress(newRunLog(&b), false, 10, 1, func() string { return "peak RSS 1.5 GiB" })
	p.begin(4)
	p.start = time.Now().Add(-3 * time.Second)
	p.update(5, 1, 0.5, math.NaN(), -1)
	if got := b.String(); !strings.HasPrefix(got, "step 5/10 loss 1.0000, 0.50 s/step, ETA 15s, peak RSS 1.5 GiB\n") {
		t.Errorf("progress line %q", got)
	}
	for _, tc := range []struct {
		valStep int
		want    string
	}{{6, "step 6/10 loss 1.0000 val 0.2500, 0.50 s/step"}, {3, "step 6/10 loss 1.0000 val 0.2500 (step 3), 0.50 s/step"}, {-1, "step 6/10 loss 1.0000 val 0.2500, 0.50 s/step"}} {
		b.Reset()
		p.update(6, 1, 0.5, 0.25, tc.valStep)
		if got := b.String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("validation at step %d: progress line %q, want %q", tc.valStep, got, tc.want)
		}
	}
}

// TestLastValidation: a resumed run's progress lines name the step of the
// validation loss it restored, read back from metrics.jsonl (the last at or
// before the checkpoint's step), or none where the file cannot say.
func TestLastValidation(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for _, v := range []rundir.ValLine{{Kind: rundir.KindVal, Step: 0, ValLoss: 2}, {Kind: rundir.KindVal, Step: 3, ValLoss: 1.5}, {Kind: rundir.KindVal, Step: 6, ValLoss: 1}} {
		b, _ := json.Marshal(v)
		lines = append(lines, string(b))
	}
	os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	for step, want := range map[int]int{0: 0, 2: 0, 5: 3, 6: 6, 9: 6} {
		if got := lastValidation(dir, step); got != want {
			t.Errorf("step %d: %d, want %d", step, got, want)
		}
	}
	if got := lastValidation(filepath.Join(dir, "none"), 5); got != -1 {
		t.Errorf("no metrics.jsonl: %d, want -1", got)
	}
}
