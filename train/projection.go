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
// (step 0's), and a lower bound of the test evaluation from the
// validation's time per example.
type projection struct {
	stepSecs                 float64
	stepsLeft                int
	validations              int
	valSecs                  float64 // one validation (0: none timed yet)
	valStep                  int     // the step of the validation timed
	testSecs                 float64 // the test evaluation's lower bound (0: none, or not known)
	testPasses, testExamples int
	generates, maxNewTokens  int // generated tokens per example on top of testSecs (SQuAD, XSum)
}

// project is the projection after a step of stepSecs at step (steps done).
func (r *run) project(step int, stepSecs float64) projection {
	cfg := r.cfg
	p := projection{stepSecs: stepSecs, stepsLeft: cfg.Train.Steps - step, valSecs: r.valSecs, valStep: r.valStep}
	for s := step + 1; s <= cfg.Train.Steps; s++ {
		if s%cfg.Train.EvalEvery == 0 || s == cfg.Train.Steps {
			p.validations++
		}
	}
	if len(r.data.test) == 0 || cfg.Eval.Skip {
		return p
	}
	p.testPasses, p.testExamples = 2, len(r.data.test) // the best and the last adapter
	if cfg.Eval.Base {
		p.testPasses++
	}
	if r.valSecs > 0 && len(r.data.val) > 0 {
		perExample := r.valSecs / float64(len(r.data.val)) // a forward pass over one example, as validation runs it
		forwards := p.testPasses * p.testExamples
		if data.Task(cfg.Task.Name) == data.SST2 {
			forwards *= 2 // both label candidates are scored
		} else {
			p.generates, p.maxNewTokens = p.testPasses*p.testExamples, r.eval.maxNewTokens
		}
		p.testSecs = perExample * float64(forwards)
	}
	return p
}

// String is the projection's line.
func (p projection) String() string {
	parts := []string{fmt.Sprintf("training %s (%d steps)", fmtDuration(p.stepSecs*float64(p.stepsLeft)), p.stepsLeft)}
	total, atLeast := p.stepSecs*float64(p.stepsLeft), false
	switch {
	case p.validations == 0:
	case p.valSecs > 0:
		parts = append(parts, fmt.Sprintf("validation %s (%d × %s, as step %d's)",
			fmtDuration(p.valSecs*float64(p.validations)), p.validations, fmtDuration(p.valSecs), p.valStep))
		total += p.valSecs * float64(p.validations)
	default:
		parts = append(parts, fmt.Sprintf("%d validations (not timed yet)", p.validations))
		atLeast = true
	}
	switch {
	case p.testPasses == 0:
	case p.testSecs > 0 && p.generates == 0:
		parts = append(parts, fmt.Sprintf("test evaluation %s (%d × %d examples)", fmtDuration(p.testSecs), p.testPasses, p.testExamples))
		total += p.testSecs
	case p.testSecs > 0:
		parts = append(parts, fmt.Sprintf("test evaluation ≥ %s (the prompts of %d × %d examples; generating up to %d tokens each comes on top)",
			fmtDuration(p.testSecs), p.testPasses, p.testExamples, p.maxNewTokens))
		total += p.testSecs
		atLeast = true
	default:
		parts = append(parts, fmt.Sprintf("test evaluation (%d × %d examples, not timed yet)", p.testPasses, p.testExamples))
		atLeast = true
	}
	end := "about " + fmtDuration(total)
	if atLeast {
		end = "at least " + fmtDuration(total)
	}
	return fmt.Sprintf("first step %s: the rest takes %s: %s", fmtDuration(p.stepSecs), end, strings.Join(parts, " + "))
}

// trainingLine starts the training phase: the steps to run and how often
// the run validates and checkpoints.
func (r *run) trainingLine() string {
	t := r.cfg.Train
	ck := "at the end"
	if t.CheckpointEvery > 0 {
		ck = fmt.Sprintf("every %d steps", t.CheckpointEvery)
	}
	return fmt.Sprintf("training: steps %d to %d, batch %d; validation every %d steps, checkpoint %s",
		min(r.state.Step+1, t.Steps), t.Steps, t.BatchSize, t.EvalEvery, ck)
}
