package train

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/diskspace"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/zo"
)

// CheckSteps is how many training steps Check runs and times: the first
// pays for warming up (a GPU's kernels, the allocator), so the projection
// takes the last one's time.
const CheckSteps = 2

// checkValidationBatches is how many batches of eval.batch_size examples
// of the validation split Check scores: enough to time the validation and
// to see the starting loss finite (a sample: the split is in its seeded
// order), not the whole split, which a paper run validates for minutes.
const checkValidationBatches = 4

// checkTestBatches is how many batches of eval.batch_size test examples
// Check evaluates, timed, with the parameters as they start: the test
// evaluation's time per example, generating the answers included (SQuAD,
// XSum, generation), which a validation's forward does not tell.
const checkTestBatches = 2

// Check is meazo-train --check: a new run's start up to its first step —
// the config, every input file, the model on its backend, the data read,
// split and encoded, the memory checks, what trains and the engine — then
// step 0's validation (of a sample: checkValidationBatches), the test
// evaluation of a sample (checkTestBatches, with the starting parameters)
// and CheckSteps training steps on real batches, timed, and what the
// whole run would take: its time (the projection a run prints after its
// first step), its peak memory and, for the model's own weights, its
// checkpoints' room on disk. It writes nothing: not output.dir (which must
// be free for the run, as a start needs it), no lock, no log. So a config
// can be tried on the machine, or the Slurm partition, that will run it,
// before hours are queued for it: whatever would stop the run in its first
// minutes stops the check the same way, with the same message.
//
// Check takes a new run's Options (ConfigPath, Overrides, Log, Stop); a
// resume needs no check: it reads and checks everything before it changes
// anything, and a refused resume changes nothing. A stop request
// (Options.Stop: a signal) ends the check at the next point a run would
// stop at — between the start's phases, between evaluation batches, before
// a step, and before the report — with an error that says so (not
// ErrStoppedStarting: there is nothing to start or resume again, only the
// check to run again).
func Check(opts Options) (_ *CheckReport, err error) {
	if opts.Resume != "" {
		return nil, errors.New("--check checks a new run's config (--config); a --resume needs none: it checks everything before it changes anything, and a refused resume changes nothing")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	r := &run{out: newRunLog(opts.Log), opts: opts, ckLine: -1}
	defer r.out.heartbeat(heartbeatEvery)()
	r.out.doing("loading the model and the data") // (the heartbeat's: a big model loads for minutes)
	defer r.closeBackend()
	defer tensor.Recover(&err)
	t0 := time.Now()
	if err := r.newRunConfig(); err != nil {
		return nil, err
	}
	setup := r.setupText
	if isImageTask(r.cfg) {
		setup = r.setupVision
	}
	if err := r.stopStarting("loading the model"); err != nil {
		return nil, r.checkStopped(err, "the run's start")
	}
	if err := setup(); err != nil {
		return nil, r.checkStopped(err, "the run's start")
	}
	startSecs := time.Since(t0).Seconds()
	if err := r.checkValidation(); err != nil {
		return nil, err
	}
	testSecs, testN, err := r.checkTest()
	if err != nil {
		return nil, err
	}
	before := "step 0's validation"
	if testN > 0 {
		before = "its test evaluation of a sample"
	}
	secs, err := r.checkSteps(before)
	if err != nil {
		return nil, err
	}
	return r.checkReport(startSecs, secs, testSecs, testN), nil
}

// checkStopped is err, or, where err is a stop request's (a signal's,
// while the check was in phase), the check's own error for it: nothing was
// written and the run is not checked.
func (r *run) checkStopped(err error, phase string) error {
	reason, stopped := stopReason(err)
	if errors.Is(err, ErrStoppedStarting) {
		reason, stopped = r.stopRequested(), true
	}
	if !stopped {
		return err
	}
	return fmt.Errorf("the check was stopped by %s during %s: nothing was written, and the run is not checked (run the check again)", reason, phase)
}

// checkValidation runs step 0's validation of a sample (the first
// checkValidationBatches batches), timed, as the run would; r.valSecs is
// the whole validation's, from the sample's.
func (r *run) checkValidation() error {
	_, nVal, _ := r.modality.sizes()
	n := min(nVal, checkValidationBatches*r.cfg.Eval.BatchSize)
	what := fmt.Sprintf("%d examples", nVal)
	if n < nVal {
		what = fmt.Sprintf("the first %d of its %d examples", n, nVal)
	}
	r.out.begin("validation of step 0", "validation of step 0: "+what+", timed")
	nMetric := r.modality.metricExamples() // (the whole split's, before the sample)
	restore := r.modality.sampleValidation(n)
	pass := newEvalPass("validation of step 0", n, r.note, r.stopRequested)
	r.tr.attach()
	t0 := time.Now()
	loss, err := r.modality.validationLoss(pass)
	pass.finish() // (the metric's pass, below, is timed on its own)
	secs := time.Since(t0).Seconds()
	var metrics map[string]float64
	var mPass *evalPass
	if err == nil && finite(loss) != nil && r.cfg.Eval.ValidationMetrics {
		mPass = newEvalPass("validation of step 0 (its metric)", r.modality.metricExamples(), r.note, r.stopRequested)
		metrics, err = r.modality.validationMetrics(mPass)
		mPass.finish()
	}
	r.tr.detach()
	restore()
	if _, stopped := stopReason(err); stopped {
		return r.checkStopped(err, "step 0's validation")
	}
	if err != nil {
		return fmt.Errorf("validation at step 0: %w", err)
	}
	if finite(loss) == nil {
		return r.startNotFinite()
	}
	r.valSecs, r.valStep = pass.perExample(n)*float64(nVal), 0 // (its first batch's warming up left out)
	if n < nVal {
		fmt.Fprintf(r.out, "validation loss at step 0 over %s: %.4f (%s; all %d ≈ %s)\n", what, loss, FormatDuration(secs), nVal, FormatDuration(r.valSecs))
	} else {
		fmt.Fprintf(r.out, "validation loss at step 0: %.4f (%s)\n", loss, FormatDuration(secs))
	}
	if mPass != nil {
		r.checkMetricLine(metrics, mPass, nMetric)
	}
	return nil
}

// checkMetricLine times step 0's validation metric (eval.validation_metrics)
// of a sample (pass's) for the whole split's nAll examples into
// r.valMetricSecs, and says so with the sample's metric. A metric the
// whole split's loss forwards count (freeMetric) takes no time of its own.
func (r *run) checkMetricLine(metrics map[string]float64, pass *evalPass, nAll int) {
	over := fmt.Sprintf("its %d examples", nAll)
	if pass.total < nAll {
		over = fmt.Sprintf("the first %d of its %d examples", pass.total, nAll)
	}
	if r.modality.freeMetric() {
		r.valMetricSecs = 0
		fmt.Fprintf(r.out, "validation metric at step 0 over %s (eval.validation_metrics): %s (counted in the validation loss's forwards: no time of its own)\n",
			over, FormatMetrics(metrics))
		return
	}
	r.valMetricSecs = pass.perExample(pass.total) * float64(nAll)
	fmt.Fprintf(r.out, "validation metric at step 0 over %s (eval.validation_metrics): %s (%s; every validation ≈ %s more)\n",
		over, FormatMetrics(metrics), FormatDuration(pass.end.Sub(pass.start).Seconds()), FormatDuration(r.valMetricSecs))
}

// checkTest runs the test evaluation of a sample (the first
// checkTestBatches batches of eval.batch_size test examples) with the
// parameters as they start, timed, and returns its seconds per example,
// generating the answers included, and the sample's size (0, 0: the run
// has no test evaluation).
func (r *run) checkTest() (perExample float64, n int, err error) {
	_, _, nTest := r.modality.sizes()
	if nTest == 0 || r.cfg.Eval.Skip {
		return 0, 0, nil
	}
	n = min(nTest, checkTestBatches*r.cfg.Eval.BatchSize)
	what := fmt.Sprintf("its %d examples", nTest)
	if n < nTest {
		what = fmt.Sprintf("the first %d of its %d examples", n, nTest)
	}
	subject := "the starting " + strings.TrimPrefix(r.testSubject("last"), "the last ")
	r.out.begin("test evaluation of a sample", fmt.Sprintf("test evaluation of %s, with %s, timed", what, subject))
	restore := r.modality.sampleTest(n)
	defer restore()
	pass := newEvalPass("test evaluation of a sample", n, r.note, r.stopRequested)
	for _, e := range r.tr.tests(false) {
		if e.name == "last" { // the parameters as they are, where they are
			err = e.with(func(m *model.Model) error {
				_, err := r.modality.testMetrics(m, "a sample, "+subject, pass, &evalPartial{}, nil)
				return err
			})
		}
	}
	if _, stopped := stopReason(err); stopped {
		return 0, 0, r.checkStopped(err, "its test evaluation of a sample")
	}
	if err != nil {
		return 0, 0, fmt.Errorf("test evaluation of a sample (%s): %w", subject, err)
	}
	return pass.perExample(n), n, nil
}

// checkSteps runs CheckSteps training steps, timed, as the run would
// (nothing logged, nothing checkpointed), and returns the last one's
// seconds; before names what ran before them (for a stop's message).
func (r *run) checkSteps(before string) (float64, error) {
	steps := min(CheckSteps, r.cfg.Train.Steps)
	if steps > 0 {
		r.out.begin("training", fmt.Sprintf("training: %s of batch %d, timed (nothing is saved)%s", counted(steps, "step"), r.cfg.Train.BatchSize, r.objectiveNote()))
	}
	secs := 0.0
	for i := 1; i <= steps+1; i++ {
		if reason := r.stopRequested(); reason != "" {
			return 0, r.checkStopped(&stoppedError{reason}, before)
		}
		if i > steps { // (the poll after the last step)
			break
		}
		r.out.doing(fmt.Sprintf("step %d of %d", i, steps))
		t0 := time.Now()
		if err := r.nextBatch(); err != nil {
			return 0, fmt.Errorf("step %d: %w", i, err)
		}
		st, err := r.engine.Step(r.modality.objective())
		if err != nil && !errors.Is(err, zo.ErrNonFinite) {
			return 0, fmt.Errorf("step %d: %w", i, err)
		}
		if err != nil || !finiteStats(st) {
			return 0, fmt.Errorf("step %d diverged: a loss or a projected gradient is not finite (a smaller optimizer.lr or optimizer.eps?)", i)
		}
		secs = time.Since(t0).Seconds()
		fmt.Fprintf(r.out, "step %d: loss %.4f (%s)\n", i, st.Loss, FormatDuration(secs))
		before = fmt.Sprintf("its step %d", i)
	}
	return secs, nil
}

// startNotFinite is the error of a step 0 whose validation loss is not
// finite: the starting adapter's, or model's.
func (r *run) startNotFinite() error {
	what := "adapter" // (LoRA's starts as the model itself; a prompt's virtual tokens do not)
	if r.cfg.Adapter.Kind == "full" {
		what = "model"
	}
	return fmt.Errorf("the validation loss of the starting %s is not finite: check the model (%s) and the data", what, r.cfg.Model.Path)
}

// checkReport prints what the run would take, from the check's timings
// (the start's and the last step's seconds; the test evaluation's per
// example, over a sample of testN), and that nothing was written, and
// returns it.
func (r *run) checkReport(startSecs, stepSecs, testPerExample float64, testN int) *CheckReport {
	steps := min(CheckSteps, r.cfg.Train.Steps)
	p := r.project(0, stepSecs)
	if testN > 0 {
		p.timeTestFromSample(testPerExample, testN)
	}
	p.validations++ // step 0's
	p.checkpoints++ // and its checkpoint
	p.ckUntimed = "not timed: the check writes none"
	p.startSecs = startSecs
	p.lead = fmt.Sprintf("a step %s (the check's step %d): the run would take", FormatDuration(stepSecs), steps)
	if steps == 0 {
		p.lead = "the run (train.steps 0) would take"
		// Its best is its last, step 0: one test pass, no checkpoint of a new best.
		p.twinPass, p.twinLoad, p.bestCheckpoints = false, false, false
	}
	fmt.Fprintf(r.out, "check: %s\n", p)
	done := []string{"step 0's validation"}
	if testN > 0 {
		done = append(done, counted(testN, "test example"))
	}
	if steps > 0 {
		done = append(done, counted(steps, "step"))
	}
	over := strings.Join(done[:len(done)-1], ", ")
	if len(done) > 1 {
		over += " and "
	}
	over += done[len(done)-1]
	if line := r.checkMemory(over, p.testPasses > 0); line != "" {
		fmt.Fprintln(r.out, "check: "+line)
	}
	passed := "check passed"
	if line, short := r.checkpointRoom(); line != "" {
		fmt.Fprintln(r.out, "check: "+line)
		if short {
			passed = "check passed except for the disk (see above)"
		}
	}
	fmt.Fprintf(r.out, "%s: nothing was written (output.dir %s is free for the run); start it with the same command without --check\n", passed, r.dir)
	return r.newCheckReport(startSecs, p)
}

// checkMemory is the check's line on memory: the process's peak RSS, with
// the machine's memory, and a GPU's peak, over what the check ran (over),
// and, where the run has a test evaluation (withTest), that it may take
// more ("" where none can be read).
func (r *run) checkMemory(over string, withTest bool) string {
	var parts []string
	if rss := peakRSS(); rss > 0 {
		part := "peak RSS " + bytesize.String(rss)
		if total := sysmem.Total(); total > 0 {
			part += fmt.Sprintf(" (the machine has %s)", bytesize.String(int64(min(total, 1<<62))))
		}
		parts = append(parts, part)
	}
	if peak, ok := r.peakDevice(); ok {
		parts = append(parts, "peak GPU memory "+bytesize.String(peak))
	}
	if len(parts) == 0 {
		return ""
	}
	line := strings.Join(parts, ", ") + " over " + over
	if withTest {
		line += "; the test evaluation may need more"
	}
	return line
}

// checkpointRoom is, for the model's own weights (adapter.kind full, whose
// checkpoint is a whole model), the room its checkpoints take against the
// free space of output.dir's file system ("" for an adapter's, which is
// small, or where the free space cannot be read), and whether the disk is
// short of it.
func (r *run) checkpointRoom() (line string, short bool) {
	if r.cfg.Adapter.Kind != "full" || r.m == nil {
		return "", false
	}
	size := r.checkpointBytes()
	free, ok := diskFree(diskspace.Nearest(r.dir))
	if !ok {
		return "", false
	}
	line = fmt.Sprintf("a checkpoint is about %s (the model's weights as it holds them, and the optimizer's state; the tokenizer's files besides); the disk of %s has %s free",
		bytesize.String(size), r.dir, bytesize.String(int64(min(free, 1<<62))))
	if need := CheckpointsOnDisk * size; free < uint64(need) {
		short = true
		line += fmt.Sprintf(", less than the %s of three (the checkpoint, the next one written beside it, and best/'s): the run would stop when one does not fit", bytesize.String(need))
	}
	return line, short
}

// checkpointBytes is about the size of a full-parameter run's checkpoint:
// the model's weights as the run holds them and the optimizer's state
// beside them (0 for an adapter's).
func (r *run) checkpointBytes() int64 {
	if r.cfg.Adapter.Kind != "full" || r.m == nil {
		return 0
	}
	width := int64(4)
	if r.m.HoldsBF16() {
		width = 2
	}
	return r.m.ParamCount()*width + r.tr.stateBytes()
}
