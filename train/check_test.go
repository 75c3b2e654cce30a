package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/internal/diskspace"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
)

// tree lists every file under dir with its size and modification time: what
// Check must leave as it found it.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[p] = fmt.Sprint(info.Size(), info.ModTime().UnixNano(), info.Mode())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// runLosses are the step-0 validation loss and the first two steps' losses
// of the run in dir, from its metrics.jsonl.
func runLosses(t *testing.T, dir string) (val float64, steps []float64) {
	t.Helper()
	for _, line := range readLines(t, filepath.Join(dir, rundir.MetricsFile)) {
		var l struct {
			Kind    string  `json:"kind"`
			Step    int     `json:"step"`
			Loss    float64 `json:"loss"`
			ValLoss float64 `json:"val_loss"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Kind == rundir.KindVal && l.Step == 0:
			val = l.ValLoss
		case l.Kind != rundir.KindVal && l.Step <= CheckSteps:
			steps = append(steps, l.Loss)
		}
	}
	return val, steps
}

// TestCheckIsTheRunsStart: --check runs what the run's start does — step 0's
// validation and its first steps, with the same numbers the run then logs —
// and writes nothing: not output.dir, not a file anywhere in the demo's
// directory. Its report projects the run's time, names its peak memory and,
// for the model's own weights, the room a checkpoint takes, which is the
// size of the checkpoint the run then writes (within 2 %).
func TestCheckIsTheRunsStart(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	for _, kind := range []string{"lora", "full"} {
		t.Run(kind, func(t *testing.T) {
			out := filepath.Join(dir, "run-"+kind)
			set := []string{"output.dir=" + out, "adapter.kind=" + kind, "task.max_validation=8", "task.max_test=8", "model.backend=cpu"}
			before := tree(t, dir)
			var log syncBuilder
			rep, err := Check(Options{ConfigPath: cfg, Overrides: set, Log: &log})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if rep.StartSeconds <= 0 || rep.ValidationSeconds <= 0 || rep.StepSeconds <= 0 || rep.Steps != 4 || rep.PeakRSSBytes <= 0 ||
				rep.RunSeconds < 4*rep.StepSeconds+rep.ValidationSeconds || !rep.RunAtLeast || (rep.CheckpointBytes > 0) != (kind == "full") {
				t.Errorf("report %+v", rep)
			}
			got := log.String()
			if after := tree(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the check changed the demo's directory:\nbefore %v\nafter  %v", before, after)
			}
			for _, want := range []string{"validation loss at step 0: ", "step 2: loss ", "check: a step ", "the run would take ",
				"(4 steps)", "check: peak RSS ", "check passed: nothing was written (output.dir " + out + " is free for the run)"} {
				if !strings.Contains(got, want) {
					t.Errorf("the report lacks %q:\n%s", want, got)
				}
			}
			if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
				t.Fatal(err)
			}
			val, steps := runLosses(t, out)
			if len(steps) != CheckSteps {
				t.Fatalf("the run logged %d of its first %d steps", len(steps), CheckSteps)
			}
			want := []string{regexp.QuoteMeta(fmt.Sprintf("validation loss at step 0: %.4f ", val))}
			for i, l := range steps {
				want = append(want, regexp.QuoteMeta(fmt.Sprintf("step %d: loss %.4f ", i+1, l)))
			}
			if !regexp.MustCompile("(?s)" + strings.Join(want, ".*")).MatchString(got) {
				t.Errorf("the check's losses are not the run's (%q):\n%s", want, got)
			}
			room := regexp.MustCompile(`a checkpoint is about ([0-9.]+) (B|KiB|MiB)`).FindStringSubmatch(got)
			if kind == "lora" {
				if room != nil {
					t.Errorf("an adapter's check names a checkpoint's room:\n%s", got)
				}
				return
			}
			if room == nil {
				t.Fatalf("a full-parameter check does not name a checkpoint's room:\n%s", got)
			}
			estimate, _ := strconv.ParseFloat(room[1], 64)
			estimate *= map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}[room[2]]
			size, err := diskspace.Size(filepath.Join(out, rundir.CheckpointDir))
			if err != nil {
				t.Fatal(err)
			}
			// The estimate is the weights and the optimizer's state; the
			// checkpoint has the tokenizer's and the run's small files besides.
			var besides int64
			for p, info := range tree(t, filepath.Join(dir, "model")) {
				if !strings.HasSuffix(p, ".safetensors") && !strings.HasSuffix(p, "/model") {
					n, _ := strconv.ParseInt(strings.Fields(info)[0], 10, 64)
					besides += n
				}
			}
			if float64(size) < estimate || float64(size) > estimate+float64(besides)+16<<10 {
				t.Errorf("the check's checkpoint is about %.0f B, the run's is %d B (the model's other files: %d B)", estimate, size, besides)
			}
		})
	}
}

// TestCheckSamplesTheValidation: the check scores the first
// checkValidationBatches batches of the validation split, with the loss a
// run validating only those examples logs, and projects the whole split's
// time from theirs.
func TestCheckSamplesTheValidation(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	set := []string{"eval.batch_size=2", "task.max_test=8", "model.backend=cpu"}
	var log syncBuilder
	if _, err := Check(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+dir+"/c"), Log: &log}); err != nil {
		t.Fatal(err)
	}
	out := dir + "/r"
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+out, "task.max_validation=8")}); err != nil {
		t.Fatal(err)
	}
	val, _ := runLosses(t, out)
	got := log.String()
	if want := fmt.Sprintf("validation loss at step 0 over the first 8 of its 64 examples: %.4f (", val); !strings.Contains(got, want) {
		t.Errorf("want %q in:\n%s", want, got)
	}
	if !regexp.MustCompile(`validation [^(]+ \(\d+ × [^,]+, as step 0's\)`).MatchString(got) {
		t.Errorf("no validation time projected:\n%s", got)
	}
}

// TestCheckRefusesWhatTheStartRefuses: a config the start refuses is
// refused by the check with the start's message (an output.dir that holds a
// run; a missing model), a resume has nothing to check, and a full disk is
// named in the report.
func TestCheckRefusesWhatTheStartRefuses(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	out := filepath.Join(dir, "taken")
	quick := []string{"task.max_validation=8", "task.max_test=8", "model.backend=cpu"}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(quick, "output.dir="+out)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"output.dir holds a run", Options{ConfigPath: cfg, Overrides: append(quick, "output.dir="+out)}},
		{"no model", Options{ConfigPath: cfg, Overrides: append(quick, "output.dir="+out+"-2", "model.path="+filepath.Join(dir, "nothing"))}},
	} {
		errStart := func() error { _, err := Run(c.opts); return err }()
		_, errCheck := Check(c.opts)
		if errStart == nil || errCheck == nil || errCheck.Error() != errStart.Error() {
			t.Errorf("%s: the check says %v, the start %v", c.name, errCheck, errStart)
		}
	}
	if _, err := os.Stat(out + "-2"); err == nil {
		t.Errorf("a refused check or start made %s", out+"-2")
	}
	if _, err := Check(Options{Resume: out}); err == nil || !strings.Contains(err.Error(), "a --resume needs none") {
		t.Errorf("a check of a resume: %v", err)
	}
	defer func(f func(string) (uint64, bool)) { diskFree = f }(diskFree)
	diskFree = func(string) (uint64, bool) { return 1000, true }
	var log syncBuilder
	if _, err := Check(Options{ConfigPath: cfg, Log: &log, Overrides: append(quick, "output.dir="+out+"-3", "adapter.kind=full")}); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); !strings.Contains(got, "has 1000 B free, less than the ") || !strings.Contains(got, "\ncheck passed except for the disk (see above): nothing was written") {
		t.Errorf("a full disk is not named, or the check passes as if it were not:\n%s", got)
	}
}

// TestCheckStopsCleanly: a stop request (a signal) at each point the check
// polls for one — between the start's phases, between the validation's
// batches, before each step and before the report — ends it with the
// check's own error (not ErrStoppedStarting, whose "start it again" and
// exit status 3 are a run's), naming what it was doing, with nothing
// written; once every poll has passed, the check passes.
func TestCheckStopsCleanly(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	set := []string{"output.dir=" + filepath.Join(dir, "run"), "task.max_validation=8", "eval.batch_size=2", "task.max_test=8", "model.backend=cpu"}
	before := tree(t, dir)
	phases := map[string]bool{}
	for k := 1; ; k++ {
		if k > 200 {
			t.Fatal("the check still stops after 200 polls")
		}
		polls := 0
		stop := func() string {
			if polls++; polls >= k {
				return "SIGTERM"
			}
			return ""
		}
		_, err := Check(Options{ConfigPath: cfg, Overrides: set, Stop: stop})
		if err == nil {
			break
		}
		m := regexp.MustCompile(`^the check was stopped by SIGTERM during (.+): nothing was written, and the run is not checked \(run the check again\)$`).FindStringSubmatch(err.Error())
		if m == nil || errors.Is(err, ErrStoppedStarting) {
			t.Fatalf("a stop at poll %d: %v", k, err)
		}
		phases[m[1]] = true
		if after := tree(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a check stopped at poll %d changed the demo's directory:\nbefore %v\nafter  %v", k, before, after)
		}
	}
	for _, want := range []string{"the run's start", "step 0's validation", "its step 1", "its step 2"} {
		if !phases[want] {
			t.Errorf("no stop during %q (got %v)", want, phases)
		}
	}
}

// TestCheckSaysTheObjective: a train.objective accuracy check says, as the
// run does, that its step losses are minus accuracies (its "loss -0.2500"
// is otherwise a puzzle), and its losses are the run's.
func TestCheckSaysTheObjective(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	set := []string{"train.objective=accuracy", "task.max_validation=8", "task.max_test=8", "model.backend=cpu"}
	var log syncBuilder
	if _, err := Check(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+dir+"/c"), Log: &log}); err != nil {
		t.Fatal(err)
	}
	out := dir + "/r"
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+out)}); err != nil {
		t.Fatal(err)
	}
	got := log.String()
	if want := "training: 2 steps of batch 8, timed (nothing is saved); the training loss is minus the fraction of the batch whose label is predicted right (train.objective accuracy)"; !strings.Contains(got, want) {
		t.Errorf("want %q in:\n%s", want, got)
	}
	_, steps := runLosses(t, out)
	for i, l := range steps {
		if want := fmt.Sprintf("step %d: loss %.4f ", i+1, l); !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// TestCheckReportSaysOnlyWhatHappens: a check of train.steps 0 projects no
// training and no second test pass (its best is its last, step 0); one of
// eval.skip names no test evaluation that may need more memory.
func TestCheckReportSaysOnlyWhatHappens(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	quick := []string{"output.dir=" + filepath.Join(dir, "run"), "task.max_validation=8", "task.max_test=8", "model.backend=cpu"}
	for _, c := range []struct {
		set       string
		want, not []string
	}{
		{"train.steps=0", []string{"check: the run (train.steps 0) would take at least ", "the engine: as the check's) + validation ", "test evaluation ", "; the test evaluation may need more"},
			[]string{"training ", "(0 steps)", "one pass more"}},
		{"train.steps=0,adapter.kind=full", []string{"check: the run (train.steps 0) would take at least ", "1 checkpoint (not timed: the check writes none)"},
			[]string{"(0 steps)", "one pass more", "one more with each new best"}},
		{"eval.skip=true", []string{"check: a step ", " over step 0's validation and 2 steps\n"}, []string{"test evaluation", "may need more"}},
	} {
		var log syncBuilder
		if _, err := Check(Options{ConfigPath: cfg, Overrides: append(quick, strings.Split(c.set, ",")...), Log: &log}); err != nil {
			t.Fatal(err)
		}
		report := log.String()[strings.Index(log.String(), "check: "):]
		for _, want := range c.want {
			if !strings.Contains(report, want) {
				t.Errorf("%s: the report lacks %q:\n%s", c.set, want, report)
			}
		}
		for _, not := range c.not {
			if strings.Contains(report, not) {
				t.Errorf("%s: the report says %q:\n%s", c.set, not, report)
			}
		}
	}
}

// deviceBackend is a backend whose device memory peaked at 3 GiB.
type deviceBackend struct{ tensor.Backend }

func (deviceBackend) DeviceMemory() (held, peak uint64) { return 1 << 30, 3 << 30 }

// TestCheckMemoryLine: the machine's memory is said beside the peak RSS it
// bounds, not after a GPU's peak, which is named as such.
func TestCheckMemoryLine(t *testing.T) {
	if peakRSS() == 0 || sysmem.Total() == 0 {
		t.Skip("no peak RSS or machine memory to read here")
	}
	r := &run{backend: deviceBackend{}}
	got := r.checkMemory("step 0's validation", false)
	if !regexp.MustCompile(`^peak RSS [0-9.]+ [KMG]iB \(the machine has [0-9.]+ [KMGT]iB\), peak GPU memory 3.0 GiB over step 0's validation$`).MatchString(got) {
		t.Errorf("memory line %q", got)
	}
}

// TestCheckHeartbeat: while the check loads the model, as while a run
// does, a silent phase gets the heartbeat's line naming it (a big model
// loads for minutes).
func TestCheckHeartbeat(t *testing.T) {
	defer func(e time.Duration) { heartbeatEvery = e }(heartbeatEvery)
	heartbeatEvery = 50 * time.Millisecond
	dir, cfg := demoConfig(t, 2)
	slowOpen := func(name string, o tensor.Options, log io.Writer) (tensor.Backend, error) {
		time.Sleep(1200 * time.Millisecond) // the heartbeat ticks once a second at most
		return backends.OpenWith(name, o, log)
	}
	var log syncBuilder
	_, err := Check(Options{ConfigPath: cfg, Log: &log, openBackend: slowOpen,
		Overrides: []string{"output.dir=" + dir + "/run", "task.max_validation=8", "task.max_test=8", "model.backend=cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := log.String(); !strings.Contains(got, "… loading the model and the data: ") {
		t.Errorf("no heartbeat while loading:\n%s", got)
	}
}

// TestCheckTimesATestSample: the check scores a sample of the test set
// with the starting parameters — the metric a run's test of step 0's
// adapter gets on those examples — and projects the test evaluation from
// its time, generation included: a generation task's projection is no
// longer a bound from the validation's forwards with the generating "on top".
func TestCheckTimesATestSample(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	quick := []string{"task.max_validation=8", "task.max_test=8", "eval.batch_size=4", "model.backend=cpu"}
	var log syncBuilder
	if _, err := Check(Options{ConfigPath: cfg, Overrides: append(quick, "output.dir="+dir+"/c"), Log: &log}); err != nil {
		t.Fatal(err)
	}
	var runLog syncBuilder
	s, err := Run(Options{ConfigPath: cfg, Overrides: append(quick, "output.dir="+dir+"/r", "train.steps=0"), Log: &runLog})
	if err != nil {
		t.Fatal(err)
	}
	if line := "train.steps is 0: nothing is trained; the starting weights are validated and tested\n"; !strings.Contains(runLog.String(), line) {
		t.Errorf("a run of train.steps 0 does not say %q:\n%s", line, runLog.String())
	}
	got := log.String()
	want := `test evaluation of its 8 examples, with the starting adapter, timed\n` +
		`test \(a sample, the starting adapter, 8 examples, \d+s\): ` + regexp.QuoteMeta(FormatMetrics(s.Test["best"])) + `\n(?s).*` +
		`\+ test evaluation [^(]+ \(2 × 8 examples, as the check's 8 took; one pass more unless the best validation loss is the last step's\)`
	if !regexp.MustCompile(want).MatchString(got) {
		t.Errorf("want %q in:\n%s", want, got)
	}

	var rows []map[string]any
	for i := range 24 {
		rows = append(rows, map[string]any{"id": i, "prompt": fmt.Sprintf("Review %d: a fine film", i), "completion": "great"})
	}
	gen := filepath.Join(dir, "gen.jsonl")
	writeJSONL(t, gen, rows)
	log = syncBuilder{}
	_, err = Check(Options{ConfigPath: cfg, Log: &log, Overrides: append(quick, "output.dir="+dir+"/g", "task.name=generation",
		"task.train="+gen, "task.test="+gen, "eval.max_new_tokens=4")})
	if err != nil {
		t.Fatal(err)
	}
	got = log.String()
	if !strings.Contains(got, "(2 × 8 examples, as the check's 8 took") || strings.Contains(got, "generating up to") {
		t.Errorf("a generation task's test evaluation is not projected from its timed sample:\n%s", got)
	}
}

// TestCheckCountsTheRunsShape: the check's projection counts what the run
// does — step 0's validation and checkpoint, one every eval_every and
// checkpoint_every steps (none with checkpoint_every 0) and at the last
// step, which is no multiple of either, and the test passes (best and
// last, then the base model) — and scales the timed validation sample to
// the whole split: the sample's time, the whole one's, and each part of
// the line, are the report's numbers.
func TestCheckCountsTheRunsShape(t *testing.T) {
	dir, cfg := demoConfig(t, 7)
	for _, c := range []struct {
		set                      string
		validations, checkpoints int
	}{
		{"train.eval_every=3,train.checkpoint_every=2", 4, 5}, // validations 0 3 6 7, checkpoints 0 2 4 6 7
		{"train.eval_every=5,train.checkpoint_every=0", 3, 2}, // 0 5 7; 0 7
	} {
		var log syncBuilder
		set := append([]string{"output.dir=" + filepath.Join(dir, "run"), "eval.batch_size=8", "task.max_test=24", "eval.base=true", "model.backend=cpu"},
			strings.Split(c.set, ",")...)
		rep, err := Check(Options{ConfigPath: cfg, Overrides: set, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		got := log.String()
		val := rep.ValidationSeconds // of all 64, from the first 32's (perExample: after their first batch)
		for _, want := range []string{
			"validation loss at step 0 over the first 32 of its 64 examples: ",
			fmt.Sprintf("; all 64 ≈ %s)\n", FormatDuration(val)),
			"test evaluation of the first 16 of its 24 examples, with the starting adapter, timed\n",
			fmt.Sprintf(": the run would take at least %s: start %s (the model, the data, the engine: as the check's) + training %s (7 steps) + validation %s (%d × %s, as step 0's) + %d checkpoints (not timed: the check writes none) + test evaluation ",
				FormatDuration(rep.StartSeconds+rep.RunSeconds), FormatDuration(rep.StartSeconds), FormatDuration(7*rep.StepSeconds), FormatDuration(float64(c.validations)*val), c.validations, FormatDuration(val), c.checkpoints),
			" (2 × 24 examples, as the check's 16 took; one pass more unless the best validation loss is the last step's)\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: want %q in:\n%s", c.set, want, got)
			}
		}
	}
}

// TestCheckPets: a check of the image task scores a sample of the
// validation images (the first 4 batches of eval.batch_size: 8 of the 12)
// and of the test images (2 batches: 4 of 12), with the loss a run
// validating those 8 images logs and the steps the run then takes, and
// writes nothing.
func TestCheckPets(t *testing.T) {
	root := t.TempDir()
	set := petsSet("", "task.validation="+petsTest, "eval.batch_size=2")
	var log syncBuilder
	if _, err := Check(Options{Overrides: append(slices.Clone(set), "output.dir="+filepath.Join(root, "c")), Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("the check wrote %v", entries)
	}
	out := filepath.Join(root, "r")
	if _, err := Run(Options{Overrides: append(slices.Clone(set), "output.dir="+out, "task.max_validation=8")}); err != nil {
		t.Fatal(err)
	}
	val, steps := runLosses(t, out)
	got := log.String()
	want := []string{fmt.Sprintf("validation loss at step 0 over the first 8 of its 12 examples: %.4f (", val),
		"test evaluation of the first 4 of its 12 examples, with the starting adapter, timed\ntest (a sample, the starting adapter, 4 examples, "}
	for i, l := range steps {
		want = append(want, fmt.Sprintf("step %d: loss %.4f ", i+1, l))
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("want %q in:\n%s", w, got)
		}
	}
}

// TestPerExampleLeavesTheFirstBatchOut: a pass's time per example is
// taken after its first batch (whose warming up would be multiplied by the
// whole split's size over the sample's), and over the whole pass where the
// first batch was all of it or no batch has ended.
func TestPerExampleLeavesTheFirstBatchOut(t *testing.T) {
	p := newEvalPass("x", 8, nil, nil)
	p.start = p.start.Add(-10 * time.Second) // a first batch of 10 s
	if got := p.perExample(8); got < 1.2 || got > 1.4 {
		t.Errorf("no batch ended: %v s an example, want the whole pass's 10 s / 8", got)
	}
	if err := p.after(4, true); err != nil {
		t.Fatal(err)
	}
	if got := p.perExample(8); got > 0.5 {
		t.Errorf("after a first batch of 4 that took 10 s: %v s an example, want the later batches' (about 0)", got)
	}
	if got := p.perExample(4); got < 2.4 || got > 2.6 {
		t.Errorf("a pass of one batch: %v s an example, want 10 s / 4", got)
	}
	// Once finished, what comes after (a check's validation metric follows
	// its loss) is not this pass's time.
	p.finish()
	was := p.perExample(4)
	time.Sleep(20 * time.Millisecond)
	if got := p.perExample(4); got != was {
		t.Errorf("a finished pass: %v s an example some time later, want %v as at its end", got, was)
	}
}
