package train

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meazo-go/meazo/tensor"
)

// TestRunLogHeartbeat: the heartbeat speaks only when the log has been
// silent for its interval during a phase, names the phase and how long it
// has run, and never writes into the progress bar's open line.
func TestRunLogHeartbeat(t *testing.T) {
	var b strings.Builder
	l := newRunLog(&b)
	start := l.last
	l.beat(start.Add(time.Hour), time.Second)
	if b.Len() != 0 {
		t.Errorf("a heartbeat with no phase: %q", b.String())
	}
	l.begin("validation of step 0", "validation of step 0: 64 examples")
	l.Write([]byte("\r[===   ] 3/10")) // the bar: an open line
	l.beat(time.Now().Add(10*time.Second), 30*time.Second)
	if strings.Contains(b.String(), "…") {
		t.Errorf("a heartbeat 10 s after a write: %q", b.String())
	}
	l.beat(time.Now().Add(90*time.Second), 30*time.Second)
	want := "validation of step 0: 64 examples\n\r[===   ] 3/10\n… validation of step 0: 1m 30s so far\n"
	if got := b.String(); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	l.endLine() // closed already: nothing
	if got := b.String(); got != want {
		t.Errorf("endLine after a heartbeat wrote %q", strings.TrimPrefix(got, want))
	}
}

// slowBackend makes each matrix product wait, so that a tiny run has long
// silences.
type slowBackend struct {
	tensor.Backend
	wait time.Duration
	n    *atomic.Int64
}

func (s slowBackend) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	s.n.Add(1)
	time.Sleep(s.wait)
	s.Backend.MatMul(y, x, rows, w)
}

// slowTrainer is slowBackend for the model's own weights: their perturbed
// products wait too.
type slowTrainer struct {
	slowBackend
	tensor.Trainer
}

func (s slowTrainer) MatMulPerturbed(y, x tensor.Buf, w tensor.Weight, segs []tensor.Segment, add bool) {
	s.n.Add(1)
	time.Sleep(s.wait)
	s.Trainer.MatMulPerturbed(y, x, w, segs, add)
}

// slow wraps a backend so that each product waits.
func slow(b tensor.Backend, n *atomic.Int64) tensor.Backend {
	sb := slowBackend{b, 10 * time.Millisecond, n}
	if tr, ok := b.(tensor.Trainer); ok {
		return slowTrainer{sb, tr}
	}
	return sb
}

// TestPhasesAndHeartbeat: a run prints a line as each phase starts, the
// projection after its first step, and a heartbeat naming what runs when a
// phase is silent for longer than the interval; an adapter's run and a
// full-parameter one (which checkpoints its weights and loads best/ and
// the base model again for the test evaluation) alike.
func TestPhasesAndHeartbeat(t *testing.T) {
	defer func(e time.Duration) { heartbeatEvery = e }(heartbeatEvery)
	heartbeatEvery = 50 * time.Millisecond
	dir, cfg := demoConfig(t, 3)
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"lora", []string{
			"the rest takes about ", "(2 × ", "as step 0's) + checkpoints ", "(1 × ", "as step 0's) + test evaluation ", "(3 × 8 examples)",
			"test evaluation: the best and the last adapter, and the base model, on 8 examples of ",
			"best/ (the adapter of the lowest validation loss)"}},
		{"full", []string{
			"trainable: ", " parameters (100 %): full-parameter, in 1 group(s), held in float32\n", "the rest takes at least ", "(2 × ", "as step 0's) + checkpoints ",
			"(1 × ", "as step 0's, and one more with each new best validation loss) + test evaluation ", "(3 × 8 examples) + loading the model ", "(2 × ",
			"test evaluation: the last and the best weights, and the base model, on 8 examples of ",
			"loading model " + filepath.Join(dir, "r-full", "best") + " for its test evaluation (best)\n",
			"loading model " + filepath.Join(dir, "model") + " for its test evaluation (base)\n",
			"best/ (the model of the lowest validation loss)"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var log syncBuilder
			var n atomic.Int64
			_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + dir + "/r-" + tc.kind, "task.max_validation=8",
				"task.max_test=8", "train.eval_every=2", "eval.batch_size=8", "model.backend=cpu", "adapter.kind=" + tc.kind},
				wrapBackend: func(b tensor.Backend) tensor.Backend { return slow(b, &n) }, testTwins: true})
			if err != nil {
				t.Fatal(err)
			}
			got := log.String()
			for _, want := range append([]string{
				"validation of step 0: 8 examples\n",
				"writing the checkpoint of step 0\n",
				"training: steps 1 to 3, batch 8, meazo lr 0.05 eps 0.001 q 1; validation every 2 steps, checkpoint every 200 steps\n",
				"first step ", "the rest takes ", "training ", "(2 steps) + validation ",
				"… step ", " so far\n",
			}, tc.want...) {
				if !strings.Contains(got, want) {
					t.Errorf("the log does not say %q:\n%s", want, got)
				}
			}
			if n := strings.Count(got, "writing the checkpoint of step 0\n"); n != 1 {
				t.Errorf("the checkpoint of step 0 is announced %d times, want once:\n%s", n, got)
			}
			if i, j := strings.Index(got, "validation of step 0:"), strings.Index(got, "training: steps"); i < 0 || j < i {
				t.Errorf("the phases are out of order:\n%s", got)
			}
		})
	}
}

// syncBuilder is a strings.Builder safe for the heartbeat's goroutine.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFmtDuration: waits as people read them.
func TestFmtDuration(t *testing.T) {
	for secs, want := range map[float64]string{0.04: "40ms", 0.0004: "<1ms", 0.4: "0.4s", 12: "12s", 200: "3m 20s", 4020: "1h 07m", 489600: "5d 16h"} {
		if got := FormatDuration(secs); got != want {
			t.Errorf("FormatDuration(%g) = %q, want %q", secs, got, want)
		}
	}
}

// TestProjectionLine: the projection adds what was timed and says "at
// least" where a part is a lower bound or not timed yet; a full-parameter
// run counts its checkpoints as a lower bound (a new best writes one more)
// and the models its test evaluation loads again.
func TestProjectionLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    projection
		want string
	}{
		{"adapter, all timed", projection{stepSecs: 2, stepsLeft: 100, validations: 2, valSecs: 30, checkpoints: 1, ckSecs: 1,
			testPasses: 3, testExamples: 10, testSecs: 60},
			"first step 2.0s: the rest takes about 5m 21s: training 3m 20s (100 steps) + validation 1m 00s (2 × 30s, as step 0's) + " +
				"checkpoints 1.0s (1 × 1.0s, as step 0's) + test evaluation 1m 00s (3 × 10 examples)"},
		{"nothing timed yet", projection{stepSecs: 1, stepsLeft: 10, validations: 1, checkpoints: 1, testPasses: 2, testExamples: 5},
			"first step 1.0s: the rest takes at least 10s: training 10s (10 steps) + 1 validation (not timed yet) + 1 checkpoint (not timed yet) + " +
				"test evaluation (2 × 5 examples, not timed yet)"},
		{"full", projection{stepSecs: 10, stepsLeft: 9, validations: 1, valSecs: 20, checkpoints: 1, ckSecs: 30, bestCheckpoints: true,
			testPasses: 3, testExamples: 10, testSecs: 40, loads: 2, loadSecs: 45},
			"first step 10s: the rest takes at least 4m 30s: training 1m 30s (9 steps) + validation 20s (1 × 20s, as step 0's) + " +
				"checkpoints 30s (1 × 30s, as step 0's, and one more with each new best validation loss) + test evaluation 40s (3 × 10 examples) + " +
				"loading the model 1m 30s (2 × 45s, as at the start)"},
		{"adapter, a second pass unless the best is the last", projection{stepSecs: 2, stepsLeft: 10, validations: 1, valSecs: 30,
			testPasses: 1, testExamples: 10, testSecs: 60, twinPass: true},
			"first step 2.0s: the rest takes at least 1m 50s: training 20s (10 steps) + validation 30s (1 × 30s, as step 0's) + " +
				"test evaluation 1m 00s (1 × 10 examples; one pass more unless the best validation loss is the last step's)"},
		{"full, best/ loaded unless the best is the last", projection{stepSecs: 10, stepsLeft: 9, validations: 1, valSecs: 20,
			testPasses: 2, testExamples: 10, testSecs: 40, twinPass: true, twinLoad: true, loads: 1, loadSecs: 45},
			"first step 10s: the rest takes at least 3m 15s: training 1m 30s (9 steps) + validation 20s (1 × 20s, as step 0's) + " +
				"test evaluation 40s (2 × 10 examples; one pass more, of best/ loaded, unless the best validation loss is the last step's) + " +
				"loading the model 45s (1 × 45s, as at the start)"},
		// A check's: its checkpoints are not timed, a full run's are more with each new best.
		{"full, checkpoints not timed", projection{stepSecs: 10, stepsLeft: 9, validations: 2, valSecs: 20, checkpoints: 2, bestCheckpoints: true,
			ckUntimed: "not timed: the check writes none", lead: "a step 10s (the check's step 2): the run would take", startSecs: 25},
			"a step 10s (the check's step 2): the run would take at least 2m 35s: start 25s (the model, the data, the engine: as the check's) + " +
				"training 1m 30s (9 steps) + validation 40s (2 × 20s, as step 0's) + " +
				"2 checkpoints (not timed: the check writes none; one more with each new best validation loss)"},
		// A check of train.steps 0: no training at all.
		{"no steps", projection{validations: 1, valSecs: 20, testPasses: 1, testExamples: 10, testSecs: 40, lead: "the run (train.steps 0) would take"},
			"the run (train.steps 0) would take about 1m 00s: validation 20s (1 × 20s, as step 0's) + test evaluation 40s (1 × 10 examples)"},
		// Early stopping may end the run before its last step.
		{"patience", projection{stepSecs: 2, stepsLeft: 100, validations: 2, valSecs: 30, patience: 3},
			"first step 2.0s: the rest takes about 4m 20s if it runs all 100 steps (train.patience 3 may end it sooner): training 3m 20s (100 steps) + " +
				"validation 1m 00s (2 × 30s, as step 0's)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestProjectionCountsTestPasses: the projection counts the test passes
// (and a full-parameter run's loads) the run makes whatever its best step:
// the best and the last parameters in one pass (they are the same numbers
// when the best validation loss is the last step's: sameParams), then the
// base model; the second pass of best or last is counted as one it may
// make more (twinPass; with best/ loaded for the model's own weights), and
// testTwins, which makes it always, as certain. From the validation's time
// per example: a forward a test example (sizedModality has no candidates to
// count: TestCandidateForwards counts them).
func TestProjectionCountsTestPasses(t *testing.T) {
	type want struct {
		passes, loads      int
		twinPass, twinLoad bool
		testSecs           float64
	}
	for _, tc := range []struct {
		name        string
		kind        string
		base, twins bool
		skip        bool
		nTest       int
		want        want
	}{
		{"adapter", "lora", false, false, false, 4, want{1, 0, true, false, 8}},
		{"adapter and base", "lora", true, false, false, 4, want{2, 0, true, false, 16}},
		{"full", "full", false, false, false, 4, want{1, 0, true, true, 8}},
		{"full and base", "full", true, false, false, 4, want{2, 1, true, true, 16}},
		{"full, both always (testTwins)", "full", false, true, false, 4, want{2, 1, false, false, 16}},
		{"full and base, both always", "full", true, true, false, 4, want{3, 2, false, false, 24}},
		{"eval.skip", "full", true, false, true, 4, want{}},
		{"no test split", "lora", true, false, false, 0, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Task.Name, cfg.Adapter.Kind, cfg.Eval.Base, cfg.Eval.Skip = "sst2", tc.kind, tc.base, tc.skip
			cfg.Train.Steps, cfg.Train.EvalEvery = 10, 5
			r := &run{cfg: &cfg, opts: Options{testTwins: tc.twins}, modality: sizedModality{val: 5, test: tc.nTest},
				valSecs: 10, loadSecs: 45} // 2 s a validation example
			p := r.project(1, 3)
			got := want{p.testPasses, p.loads, p.twinPass, p.twinLoad, p.testSecs}
			if got != tc.want {
				t.Errorf("passes, loads, twin pass, twin load, seconds: %+v, want %+v", got, tc.want)
			}
			if tc.want.loads > 0 && p.loadSecs != 45 {
				t.Errorf("a load takes %g s, want the start's 45", p.loadSecs)
			}
		})
	}
}

// TestProjectionFromTestSample: a check's test sample times every pass the
// run makes, per example, generating included (a generation task's bound
// from the validation's forwards, with the generating "on top", gives way
// to it); a run without a test evaluation gets none.
func TestProjectionFromTestSample(t *testing.T) {
	p := projection{stepSecs: 1, stepsLeft: 10, testPasses: 2, testExamples: 24, testSecs: 5, generates: 48, maxNewTokens: 50, twinPass: true}
	p.timeTestFromSample(0.5, 16)
	want := "first step 1.0s: the rest takes at least 34s: training 10s (10 steps) + " +
		"test evaluation 24s (2 × 24 examples, as the check's 16 took; one pass more unless the best validation loss is the last step's)"
	if got := p.String(); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	none := projection{stepSecs: 1, stepsLeft: 10}
	if none.timeTestFromSample(0.5, 16); none.testSecs != 0 || strings.Contains(none.String(), "test") {
		t.Errorf("a run without a test evaluation: %+v, %q", none, none.String())
	}
}

// TestProjectionFromTheValidationMetric: with eval.validation_metrics timed,
// a generation task's test evaluation is projected from the metric's time
// per example (the test's own scoring, generating included), not as a
// bound from the loss's forwards with the generating on top; a metric read
// from the loss's forwards (Pets', freeMetric) times no test pass.
func TestProjectionFromTheValidationMetric(t *testing.T) {
	for _, task := range []string{"squad", "pets"} {
		cfg := Defaults()
		cfg.Task.Name, cfg.Train.Steps, cfg.Train.EvalEvery = task, 10, 5
		r := &run{cfg: &cfg, modality: sizedModality{val: 5, test: 4, metric: 4, metricFree: task == "pets"}, valSecs: 10, valMetricSecs: 20} // 5 s a validation example's metric
		p := r.project(1, 3)
		if task == "pets" {
			if p.testFromVal || p.testSecs != 8 { // 2 s an image's forward, 4 images
				t.Errorf("pets: test %g s (from the metric %v), want 8 s from the loss's forwards", p.testSecs, p.testFromVal)
			}
			continue
		}
		_, part, bound := p.testPart()
		if p.testSecs != 20 || p.generates != 0 || !bound || !strings.Contains(part, "as the validation metric's took") {
			t.Errorf("squad: test %g s, %d generations on top, %q (bound %v); want 20 s from the metric's 5 s an example", p.testSecs, p.generates, part, bound)
		}
	}
}

// sizedModality is a modality of which only sizes (and metricExamples,
// freeMetric) is called.
type sizedModality struct {
	modality
	val, test, metric int
	metricFree        bool
}

func (m sizedModality) sizes() (int, int, int) { return 100, m.val, m.test }
func (m sizedModality) metricExamples() int    { return m.metric }
func (m sizedModality) freeMetric() bool       { return m.metricFree }

// TestTrainingLineNamesTheOptimizer: the line that starts the training
// names the optimizer and what a run is compared by (the log said none of
// them): its rate, ε, q, a schedule, and grouped estimation.
func TestTrainingLineNamesTheOptimizer(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"optimizer.name=zo-adam", "optimizer.q=2"}, "batch 8, zo-adam lr 0.05 eps 0.001 q 2; validation"},
		{[]string{"adapter.grouped=true", "optimizer.schedule=cosine", "optimizer.warmup_steps=1"},
			"meazo lr 0.05 eps 0.001 q 1 (schedule cosine, 1 warmup steps), grouped estimation over 2 parameter groups; validation"},
	} {
		var log syncBuilder
		if _, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: append([]string{"output.dir=" + t.TempDir(), "task.max_validation=8",
			"eval.skip=true"}, tc.set...)}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), tc.want) {
			t.Errorf("%v: the log does not say %q:\n%s", tc.set, tc.want, log.String())
		}
	}
}
