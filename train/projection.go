package train

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/data"
)

// The projection printed after a run's first step: what the rest will
// cost, from what was measured, so that a run that would take days on this
// machine says so in its first minute, not in SWEEPS.md.

// projection is what the rest of a run will take, in seconds: training
// from the step's measured time, the validations from the last one timed
// (step 0's), the checkpoints from the longest one written (step 0's), and
// an estimate of the test evaluation from the validation's time per
// example; for the model's own weights (adapter.kind full), each model the
// test evaluation loads again, as long as loading it at the start took.
//
// The test evaluation scores the best and the last parameters in one pass
// when the best validation loss is the last step's (sameParams), in two
// otherwise, the second of a full-parameter run loading best/: which, the
// last validation decides. The projection counts the passes (and loads)
// the run makes either way, and the one it may make more (twinPass) as a
// lower bound's "at least", as it counts the checkpoint a new best writes.
type projection struct {
	stepSecs                 float64
	stepsLeft                int
	validations              int
	valSecs                  float64 // one validation (0: none timed yet)
	valStep                  int     // the step of the validation timed
	valMetricSecs            float64 // its metric's, on top of valSecs (eval.validation_metrics; 0: off or not timed)
	checkpoints              int     // the ones due (checkpoint_every and the end)
	ckSecs                   float64 // one checkpoint (0: none timed yet)
	ckStep                   int     // the step of the checkpoint timed
	ckScaled                 bool    // ckSecs is that checkpoint's, scaled to the optimizer's moments it did not hold
	bestCheckpoints          bool    // a new best also checkpoints (the model's own weights)
	testSecs                 float64 // the test evaluation's lower bound (0: none, or not known)
	testPasses, testExamples int     // the passes the test makes whatever the best step (testSecs covers them)
	twinPass                 bool    // one pass more unless the best validation loss is the last step's
	twinLoad                 bool    // that pass loads best/ (the model's own weights)
	generates, maxNewTokens  int     // generated tokens per example on top of testSecs (SQuAD, XSum, generation)
	loads                    int     // models the test evaluation loads whatever the best step (the model's own weights: the base)
	loadSecs                 float64 // one load, as the start's
	lead                     string  // what the line starts with ("": the first step's time, "the rest takes")
	startSecs                float64 // a check's start (the model, the data, the engine), the line's first part (0: none)
	ckUntimed                string  // why no checkpoint was timed ("": "not timed yet")
	patience                 int     // train.patience: early stopping may end the run before stepsLeft
	testSample               int     // testSecs is from the test evaluation of a sample of this many (a check's), generation included
	testFromVal              bool    // testSecs is from the validation metric's time per example (eval.validation_metrics), generation included
}

// project is the projection after a step of stepSecs at step (steps done).
func (r *run) project(step int, stepSecs float64) projection {
	cfg := r.cfg
	p := projection{stepSecs: stepSecs, stepsLeft: cfg.Train.Steps - step, valSecs: r.valSecs, valStep: r.valStep, valMetricSecs: r.valMetricSecs,
		ckSecs: r.ckSecs, ckStep: r.ckStep, bestCheckpoints: cfg.Adapter.Kind == "full", patience: cfg.Train.Patience}
	for s := step + 1; s <= cfg.Train.Steps; s++ {
		if s%cfg.Train.EvalEvery == 0 || s == cfg.Train.Steps {
			p.validations++
		}
		if cfg.Train.CheckpointEvery > 0 && s%cfg.Train.CheckpointEvery == 0 || s == cfg.Train.Steps {
			p.checkpoints++
		}
	}
	if r.tr != nil && r.ckStep == 0 && r.tr.stateBytes() > 0 {
		state := r.tr.stateBytes()
		// Step 0's checkpoint held no moments; those to come hold them
		// (ZO-Adam's two beside a model's weights: three times the bytes).
		if all := r.checkpointBytes(); all > state {
			p.ckSecs *= float64(all) / float64(all-state)
			p.ckScaled = true
		}
	}
	r.projectTest(&p)
	return p
}

// projectTest counts the test evaluation into p: its passes and loads and,
// from the validation's time per example, a lower bound of their time.
func (r *run) projectTest(p *projection) {
	cfg := r.cfg
	_, nVal, nTest := r.modality.sizes()
	if nTest == 0 || cfg.Eval.Skip {
		return
	}
	// The best and the last parameters: one pass, or two (testTwins: two
	// always); then the base model.
	p.testPasses, p.testExamples, p.twinPass = 1, nTest, !r.opts.testTwins
	if r.opts.testTwins {
		p.testPasses++
	}
	if cfg.Eval.Base {
		p.testPasses++
	}
	if cfg.Adapter.Kind == "full" { // the last weights are in memory; best/ and the base are loaded
		p.loads, p.loadSecs, p.twinLoad = p.testPasses-1, r.loadSecs, p.twinPass
	}
	if r.valSecs > 0 && nVal > 0 {
		perExample := r.valSecs / float64(nVal) // a forward pass over one example, as validation runs it
		forwards := p.testPasses * p.testExamples
		switch data.Task(cfg.Task.Name) {
		case data.SST2, data.Classification:
			forwards *= r.candidateForwards()
		case data.Pets: // one forward an image, as in validation
		default:
			p.generates, p.maxNewTokens = p.testPasses*p.testExamples, cfg.maxNewTokens()
		}
		p.testSecs = perExample * float64(forwards)
	}
	// eval.validation_metrics scores validation examples by the test
	// evaluation's own code (generating included), so its time per example
	// is the test's, a whole estimate where the loss's gives a bound. (A
	// metric counted from the loss's own forwards, Pets' or a one-token
	// label's, takes no time a test pass would.)
	if n := r.metricExamplesTimed(); n > 0 && !r.modality.freeMetric() {
		p.testSecs, p.generates, p.testFromVal = r.valMetricSecs/float64(n)*float64(p.testPasses*p.testExamples), 0, true
	}
}

// candidateForwards is the forwards that score a test example's label
// candidates (labelCandidates), as the first test example's take: one where
// its labels are one token each (SST-2's), else one a label.
func (r *run) candidateForwards() int {
	t, ok := r.modality.(*textTask)
	if !ok || len(t.data.test) == 0 {
		return 1
	}
	c, err := t.eval.candidateSeqs(t.data.test[:1], "test example")
	if err != nil { // the test evaluation will say so
		return 1
	}
	return len(c.seqs)
}

// metricExamplesTimed is how many validation examples the validation
// metric scored in the time r.valMetricSecs (0: none timed).
func (r *run) metricExamplesTimed() int {
	if r.valMetricSecs <= 0 {
		return 0
	}
	return r.modality.metricExamples()
}

// String is the projection's line.
func (p projection) String() string {
	parts, total, atLeast := p.parts()
	if p.startSecs > 0 {
		parts = append([]string{fmt.Sprintf("start %s (the model, the data, the engine: as the check's)", FormatDuration(p.startSecs))}, parts...)
		total += p.startSecs
	}
	end := "about " + FormatDuration(total)
	if atLeast {
		end = "at least " + FormatDuration(total)
	}
	if p.patience > 0 && p.stepsLeft > 0 {
		end += fmt.Sprintf(" if it runs all %s (train.patience %d may end it sooner)", counted(p.stepsLeft, "step"), p.patience)
	}
	lead := p.lead
	if lead == "" {
		lead = fmt.Sprintf("first step %s: the rest takes", FormatDuration(p.stepSecs))
	}
	return fmt.Sprintf("%s %s: %s", lead, end, strings.Join(parts, " + "))
}

// parts are the projection's parts in words, their total seconds, and
// whether the total is a lower bound (a part not timed, or one that may
// come more often).
func (p projection) parts() (parts []string, total float64, atLeast bool) {
	if p.stepsLeft > 0 { // (none: a check of train.steps 0)
		parts = append(parts, fmt.Sprintf("training %s (%s)", FormatDuration(p.stepSecs*float64(p.stepsLeft)), counted(p.stepsLeft, "step")))
	}
	total = p.stepSecs * float64(p.stepsLeft)
	add := func(secs float64, part string, lowerBound bool) {
		parts, total, atLeast = append(parts, part), total+secs, atLeast || lowerBound
	}
	switch {
	case p.validations == 0:
	case p.valSecs > 0:
		one, metric := p.valSecs+p.valMetricSecs, ""
		if p.valMetricSecs > 0 {
			metric = fmt.Sprintf(", its metric %s of it", FormatDuration(p.valMetricSecs))
		}
		add(one*float64(p.validations), fmt.Sprintf("validation %s (%d × %s, as step %d's%s)",
			FormatDuration(one*float64(p.validations)), p.validations, FormatDuration(one), p.valStep, metric), false)
	default:
		add(0, counted(p.validations, "validation")+" (not timed yet)", true)
	}
	if p.checkpoints > 0 && p.ckSecs > 0 {
		more := ""
		if p.ckScaled {
			more = " with the optimizer's moments"
		}
		if p.bestCheckpoints {
			more += ", and one more with each new best validation loss"
		}
		add(p.ckSecs*float64(p.checkpoints), fmt.Sprintf("checkpoints %s (%d × %s, as step %d's%s)",
			FormatDuration(p.ckSecs*float64(p.checkpoints)), p.checkpoints, FormatDuration(p.ckSecs), p.ckStep, more), p.bestCheckpoints)
	} else if p.checkpoints > 0 {
		why := p.ckUntimed
		if why == "" {
			why = "not timed yet"
		}
		if p.bestCheckpoints {
			why += "; one more with each new best validation loss"
		}
		add(0, counted(p.checkpoints, "checkpoint")+" ("+why+")", true)
	}
	if p.testPasses > 0 {
		add(p.testPart())
	}
	if p.loads > 0 && p.loadSecs > 0 {
		add(p.loadSecs*float64(p.loads), fmt.Sprintf("loading the model %s (%d × %s, as at the start)",
			FormatDuration(p.loadSecs*float64(p.loads)), p.loads, FormatDuration(p.loadSecs)), false)
	}
	return parts, total, atLeast
}

// timeTestFromSample times p's test passes from a test evaluation of a
// sample of n examples (a check's) that took perExample seconds each, its
// generated answers included: nothing comes on top.
func (p *projection) timeTestFromSample(perExample float64, n int) {
	if p.testPasses == 0 {
		return
	}
	p.testSecs, p.generates, p.testSample, p.testFromVal = perExample*float64(p.testPasses*p.testExamples), 0, n, false
}

// testPart is the test evaluation's part of the line: its time (0 where
// not timed yet), its words, and whether the time is a lower bound.
func (p projection) testPart() (float64, string, bool) {
	more := ""
	switch {
	case p.twinLoad:
		more = "; one pass more, of best/ loaded, unless the best validation loss is the last step's"
	case p.twinPass:
		more = "; one pass more unless the best validation loss is the last step's"
	}
	switch {
	case p.testSecs > 0 && p.testSample > 0:
		return p.testSecs, fmt.Sprintf("test evaluation %s (%d × %d examples, as the check's %d took%s)", FormatDuration(p.testSecs), p.testPasses, p.testExamples, p.testSample, more), p.twinPass
	case p.testSecs > 0 && p.testFromVal:
		return p.testSecs, fmt.Sprintf("test evaluation %s (%d × %d examples, as the validation metric's took%s)", FormatDuration(p.testSecs), p.testPasses, p.testExamples, more), p.twinPass
	case p.testSecs > 0 && p.generates == 0:
		return p.testSecs, fmt.Sprintf("test evaluation %s (%d × %d examples%s)", FormatDuration(p.testSecs), p.testPasses, p.testExamples, more), p.twinPass
	case p.testSecs > 0:
		return p.testSecs, fmt.Sprintf("test evaluation ≥ %s (the prompts of %d × %d examples; generating up to %d tokens each comes on top%s)",
			FormatDuration(p.testSecs), p.testPasses, p.testExamples, p.maxNewTokens, more), true
	}
	return 0, fmt.Sprintf("test evaluation (%d × %d examples, not timed yet%s)", p.testPasses, p.testExamples, more), true
}

// counted is n things, in the singular for one.
func counted(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// trainingLine starts the training phase: the steps to run and how often
// the run validates and checkpoints.
func (r *run) trainingLine() string {
	t := r.cfg.Train
	ck := "at the end"
	if t.CheckpointEvery > 0 {
		ck = fmt.Sprintf("every %d steps", t.CheckpointEvery)
	}
	return fmt.Sprintf("training: steps %d to %d, batch %d, %s; validation every %d steps, checkpoint %s",
		min(r.state.Step+1, t.Steps), t.Steps, t.BatchSize, r.optimizerLine(), t.EvalEvery, ck) + r.objectiveNote()
}

// optimizerLine names the optimizer and the settings a run is compared by
// (--set changes them; the log said none of them): "meazo lr 0.05 eps
// 0.001 q 1", the schedule where it is not constant, and the estimation
// where the parameters are grouped.
func (r *run) optimizerLine() string {
	o := r.cfg.Optimizer
	s := fmt.Sprintf("%s lr %g eps %g q %d", o.Name, o.LR, o.Eps, o.Q)
	if o.Schedule != "" && o.Schedule != "constant" || o.WarmupSteps > 0 {
		s += fmt.Sprintf(" (schedule %s, %d warmup steps)", o.Schedule, o.WarmupSteps)
	}
	if r.engine != nil {
		if mode, groups := r.engine.Estimation(); groups > 1 {
			s += fmt.Sprintf(", %s estimation over %d parameter groups", mode, groups)
		}
	}
	return s
}

// objectiveNote is what the training loss is, where it is not the
// cross-entropy (train.objective f1 or accuracy), for the line that starts
// the training ("" for train.objective loss).
func (r *run) objectiveNote() string {
	switch r.cfg.Train.Objective {
	case ObjectiveF1:
		return fmt.Sprintf("; the training loss is minus the mean F1 (0-1) of the answers generated for the batch (train.objective f1, up to %d new tokens), the validation loss the cross-entropy",
			r.cfg.maxNewTokens())
	case ObjectiveAccuracy:
		return "; the training loss is minus the fraction of the batch whose label is predicted right (train.objective accuracy), the validation loss the cross-entropy"
	}
	return ""
}
