package train

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestRestoreTestAnswers: a resume goes on with the answers a stop's
// checkpoint kept when they are as many as the examples done; starts the
// evaluation over, saying so, when the checkpoint kept none; and refuses a
// file that disagrees with state.json.
func TestRestoreTestAnswers(t *testing.T) {
	kept := "{\"id\":\"0\"}\n{\"id\":\"1\"}\n"
	for _, c := range []struct {
		name, file string // file "": none in the checkpoint
		done       int
		wantN      int // answers taken back (−1: none, the evaluation starts over)
		wantErr    string
		wantLog    string
	}{
		{"goes on", kept, 2, 2, "", ""},
		{"none kept", "", 2, -1, "", "the test evaluation of best starts again from its first example"},
		{"none kept, none done", "", 0, -1, "", ""},
		{"too few", kept, 3, 0, "holds 2 answers, state.json says the test evaluation had done 3", ""},
		{"cut line", kept + `{"id":"2"`, 2, 0, "holds 2 answers", ""},
	} {
		dir := t.TempDir()
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, rundir.PartialPredictionsFile), []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var log bytes.Buffer
		r := &run{cfg: &Config{Eval: EvalConfig{Predictions: true}}, out: newRunLog(&log)}
		r.state.Test = &testProgress{Current: "best", Partial: evalPartial{Done: c.done, Sums: []float64{1}}}
		err := r.restoreTestAnswers(dir)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.wantErr)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.wantN < 0 {
			if r.answers != nil || r.state.Test.Partial.Done != 0 {
				t.Errorf("%s: answers %v, %d examples done; want the evaluation started over", c.name, r.answers, r.state.Test.Partial.Done)
			}
		} else if r.answers == nil || r.answers.n != c.wantN || r.answers.buf.String() != kept || r.state.Test.Partial.Done != c.done {
			t.Errorf("%s: answers %+v, %d done; want the %d kept", c.name, r.answers, r.state.Test.Partial.Done, c.wantN)
		}
		if !strings.Contains(log.String(), c.wantLog) || (c.wantLog == "" && log.Len() > 0) {
			t.Errorf("%s: log %q, want %q", c.name, log.String(), c.wantLog)
		}
	}
}

// TestTestAnswersFollowTheTest: a finished run resumed to test again keeps
// only the answers of that test: none of an evaluation it no longer runs
// (eval.base off), none at all with eval.predictions off, and each file
// again when it is back on.
func TestTestAnswersFollowTheTest(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	out := filepath.Join(dir, "run")
	have := func() (names []string) {
		for _, e := range rundir.TestEvaluations {
			if _, err := os.Stat(filepath.Join(out, rundir.PredictionsFile(e))); err == nil {
				names = append(names, e)
			}
		}
		return names
	}
	s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+out, "eval.skip=false", "task.max_test=6", "eval.base=true")})
	if err != nil {
		t.Fatal(err)
	}
	if got := have(); !slices.Equal(got, []string{"best", "last", "base"}) {
		t.Fatalf("a new run with eval.base: answers of %v", got)
	}
	checkRunAnswers(t, out, s)
	for _, c := range []struct {
		set  string
		want []string
	}{
		{"eval.base=false", []string{"best", "last"}},
		{"eval.predictions=false", nil},
		{"eval.predictions=true", []string{"best", "last"}},
	} {
		s, err := Run(Options{Resume: out, Overrides: []string{c.set}})
		if err != nil {
			t.Fatalf("--set %s: %v", c.set, err)
		}
		if got := have(); !slices.Equal(got, c.want) {
			t.Fatalf("--set %s: answers of %v, want %v", c.set, got, c.want)
		}
		if c.want != nil {
			checkRunAnswers(t, out, s)
		}
	}
}

// TestTestAnswersAfterResume: a finished run resumed to train on removes
// its answers at once (a stop before the new test leaves none that the
// summary does not report); a stop in the test keeps the finished
// evaluations' files, and one missing (a checkpoint of a version that kept
// none) makes that evaluation run again, to the same answers.
func TestTestAnswersAfterResume(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	set := append(slices.Clone(trustSet), "eval.skip=false", "task.max_test=6", "eval.batch_size=2", "eval.base=false")
	whole := filepath.Join(dir, "whole")
	polls := 0
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Stop: stopAt(0, &polls), testTwins: true}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if s, err := Run(Options{Resume: whole, Overrides: []string{"train.steps=4"}, Stop: stopAt(setupPolls+2, &n)}); err != nil || !s.Interrupted() {
		t.Fatalf("resumed to train on, stopped: %v, %+v", err, s)
	}
	for _, e := range rundir.TestEvaluations {
		if _, err := os.Stat(filepath.Join(whole, rundir.PredictionsFile(e))); err == nil {
			t.Errorf("a run resumed to train on, stopped before its test, keeps %s", rundir.PredictionsFile(e))
		}
	}

	fresh := filepath.Join(dir, "fresh")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+fresh), testTwins: true}); err != nil {
		t.Fatal(err)
	}
	want := readFile(t, filepath.Join(fresh, rundir.PredictionsFile("best")))
	// The last poll in a test evaluation is in the last adapter's.
	var cut string
	for at := polls; cut == "" && at > polls-6; at-- {
		out := filepath.Join(dir, fmt.Sprint("cut", at))
		n = 0
		if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+out), Stop: stopAt(at, &n), testTwins: true}); err != nil {
			t.Fatal(err)
		}
		if st := readState(t, out); st.Test != nil && st.Test.Current == "last" && st.Test.Finished["best"] != nil {
			cut = out
		}
	}
	if cut == "" {
		t.Fatalf("no stop at the last 6 of %d polls is in the last adapter's test evaluation", polls)
	}
	os.Remove(filepath.Join(cut, rundir.PredictionsFile("best")))
	var log bytes.Buffer
	if _, err := Run(Options{Resume: cut, Log: &log, testTwins: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "the test evaluation of best runs again") {
		t.Errorf("log %q does not say that the best adapter's test runs again", log.String())
	}
	if got := readFile(t, filepath.Join(cut, rundir.PredictionsFile("best"))); got != want {
		t.Errorf("the best adapter's answers, evaluated again, differ from an uninterrupted run's")
	}
}

// TestTwinTestRunsOnce: when the best validation loss is the last step's,
// the best and the last adapter (weights) are the same numbers, and the
// test evaluation scores them once: the other's results and answers are
// those an evaluation of its own gives (testTwins: both run). The
// projection after the first step counted that one pass, and one more as
// possible.
func TestTwinTestRunsOnce(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	for _, kind := range []string{"lora", "full"} {
		set := []string{"adapter.kind=" + kind, "optimizer.lr=0.005", "train.eval_every=2", "task.max_train=64", "task.max_validation=8", "task.max_test=6", "eval.base=false"}
		once, both := filepath.Join(dir, kind+"-once"), filepath.Join(dir, kind+"-both")
		var log bytes.Buffer
		s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+once), Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if s.BestStep != s.StepsDone {
			t.Fatalf("%s: the best validation loss is step %d's, not the last step's (%d): the test does not apply", kind, s.BestStep, s.StepsDone)
		}
		reused := map[string]string{"lora": "test (last): the same parameters as best's", "full": "test (best): the same parameters as last's"}[kind]
		if !strings.Contains(log.String(), reused) || strings.Count(log.String(), "test (") != 2 {
			t.Errorf("%s: the log does not say %q, or scores more than one evaluation:\n%s", kind, reused, log.String())
		}
		// The projection after the first step counted the one pass made,
		// and the second as one the run might have made.
		if !strings.Contains(log.String(), "(1 × 6 examples; one pass more") {
			t.Errorf("%s: the projection does not count the one test pass made:\n%s", kind, log.String())
		}
		w, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+both), testTwins: true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Test, w.Test) {
			t.Errorf("%s: test metrics %v, evaluated each: %v", kind, s.Test, w.Test)
		}
		for _, e := range []string{"best", "last"} {
			if a, b := readFile(t, filepath.Join(once, rundir.PredictionsFile(e))), readFile(t, filepath.Join(both, rundir.PredictionsFile(e))); a != b {
				t.Errorf("%s: %s differs from the one an evaluation of its own writes", kind, rundir.PredictionsFile(e))
			}
		}
	}
}
