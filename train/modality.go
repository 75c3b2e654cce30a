package train

import (
	"fmt"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
)

// modality is what a run does differently for a text task (textTask: a
// decoder, its tokenizer and encoded examples) and an image task (vision,
// vision.go: a ViT and decoded images): the data, the objective of a step,
// the validation loss and the test metric. The loop, the checkpoints and
// the summary reach the model and the data only through it and paramState.
type modality interface {
	// sizes are the number of training, validation and test examples.
	sizes() (train, val, test int)
	// setBatch makes the training examples idx the objective's mini-batch.
	setBatch(idx []int) error
	// objective is what the engine evaluates each step.
	objective() objective
	// validationLoss is the mean cross-entropy over the validation set with
	// the trained parameters attached (paramState.attach). A stop request
	// ends it between batches (a *stoppedError).
	validationLoss(pass *evalPass) (float64, error)
	// validationMetrics is the task's metric on the validation split
	// (eval.validation_metrics) with the trained parameters attached, by
	// the test evaluation's rules (evaluator.score; vision.accuracy), over
	// its metricExamples examples. A stop request ends it between batches
	// (a *stoppedError): the validation is then run again whole.
	validationMetrics(pass *evalPass) (map[string]float64, error)
	metricExamples() int
	// freeMetric reports whether validationMetrics reads the metric off
	// the validation loss's forwards (an image task's accuracy; a
	// classification's with one-token labels, valChoices) rather than
	// running a pass of its own, whose time would tell a test evaluation's.
	freeMetric() bool
	// sampleValidation keeps the first n validation examples (Check times
	// a sample of them); restore puts the others back.
	sampleValidation(n int) (restore func())
	// sampleTest keeps the first n test examples (Check times a sample of
	// the test evaluation); restore puts the others back.
	sampleTest(n int) (restore func())
	// testMetrics scores the test set with m, the model with the parameters
	// of a test evaluation (testEval.with; nil for an image task, whose ViT
	// has them attached), going on from part (scoreTest), and hands record
	// (if not nil) each example's answer as it is scored.
	testMetrics(m *model.Model, what string, pass *evalPass, part *evalPartial, record func(Prediction)) (map[string]float64, error)
	// free releases the model an image task holds. (A text task's decoder is
	// the run's r.m, which a full-parameter test evaluation replaces:
	// closeBackend frees it.)
	free()
}

// textTask is a text task's modality.
type textTask struct {
	// m is the decoder as loaded, which the objective and the validations
	// run; a full-parameter test evaluation loads others in its place and
	// hands testMetrics the one it scores.
	m    *model.Model
	data *textSplits
	obj  *decoderObjective
	// gen, with train.objective f1 or accuracy, is what the engine
	// evaluates instead of obj: the generated answers' F1, or the predicted
	// labels' accuracy (obj still computes nothing then).
	gen  exampleObjective
	eval *evaluator // the test metric; its batch size and pad id are the validation's too
	// valMetrics (eval.validation_metrics): where plan (valChoices) can
	// score the metric examples' label candidates in the validation loss's
	// forwards, validationLoss counts the accuracy into valAcc (nil until a
	// whole pass has ended), which validationMetrics then reads.
	valMetrics bool
	plan       *textPlan // made on first need, again for other data.val or data.valEx
	valAcc     *valAccuracy
}

// textPlan is the valChoices made for a validation split's sequences and
// metric examples (nil: there is none for them).
type textPlan struct {
	val []data.Sequence
	exs []data.Example
	c   *valChoices
}

// isFor reports whether p was made for val and exs: sampleValidation swaps
// in their first few, and then puts them back.
func (p *textPlan) isFor(val []data.Sequence, exs []data.Example) bool {
	return len(p.val) == len(val) && len(p.exs) == len(exs) &&
		(len(val) == 0 || &p.val[0] == &val[0]) && (len(exs) == 0 || &p.exs[0] == &exs[0])
}

// newTextTask makes a text task's modality over its data: the objective
// (the model and what trains, for the engine) and the evaluator.
func (r *run) newTextTask(splits *textSplits, enc *data.Encoder) (*textTask, error) {
	cfg := r.cfg
	obj := &decoderObjective{m: r.m, view: r.tr.(viewer)} // a decoder's trained parameters are their own view (adapterState, fullState)
	eval := &evaluator{task: data.Task(cfg.Task.Name), tok: r.tok, enc: enc, batchSize: cfg.Eval.BatchSize,
		maxNewTokens: cfg.maxNewTokens(), stopIDs: StopIDs(r.tok, r.m), padID: r.tok.PadID(), rougeStem: cfg.Eval.RougeStem, log: r.out}
	t := &textTask{m: r.m, data: splits, obj: obj, eval: eval, valMetrics: cfg.Eval.ValidationMetrics}
	if cfg.Train.scoresExamples() {
		// An adapter's (Validate refuses both for adapter.kind full); the
		// objective scores with its own evaluator, the test evaluation's
		// settings without its prediction records.
		as, ok := r.tr.(*adapterState)
		if !ok {
			return nil, fmt.Errorf("train.objective %s is not supported with adapter.kind %s: perturbed full weights are not built for it", cfg.Train.Objective, cfg.Adapter.Kind)
		}
		ge := *eval
		t.gen = &f1Objective{m: r.m, a: as.a, eval: &ge}
		if cfg.Train.Objective == ObjectiveAccuracy {
			t.gen = &accuracyObjective{m: r.m, a: as.a, eval: &ge}
		}
	}
	return t, nil
}

func (t *textTask) sizes() (train, val, test int) {
	return len(t.data.train), len(t.data.val), len(t.data.test)
}

func (t *textTask) objective() objective {
	if t.gen != nil {
		return t.gen
	}
	return t.obj
}

func (t *textTask) free() {}

// setBatch pads the examples into the objective's ids, mask and labels
// (train.objective f1 or accuracy: hands it the examples, whose answers it
// generates or whose labels it predicts).
func (t *textTask) setBatch(idx []int) error {
	if t.gen != nil {
		exs := make([]data.Example, len(idx))
		for i, j := range idx {
			exs[i] = t.data.trainEx[j]
		}
		t.gen.setExamples(exs)
		return nil
	}
	exs := make([]data.Sequence, len(idx))
	for i, j := range idx {
		exs[i] = t.data.train[j]
	}
	b := data.TrainBatch(exs, t.eval.padID)
	t.obj.batch = model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}
	t.obj.labels = b.Labels
	return nil
}

// validationLoss is the validation loss; with eval.validation_metrics and
// a plan (valChoices), its forwards also score the metric examples' label
// candidates, the accuracy into t.valAcc once the pass is whole.
func (t *textTask) validationLoss(pass *evalPass) (float64, error) {
	t.valAcc = nil
	c := t.choices()
	if c != nil {
		c.acc = valAccuracy{n: len(c.valEx)}
	}
	loss, err := validationLoss(t.m, t.data.val, t.eval.batchSize, t.eval.padID, pass, c)
	if err == nil && c != nil {
		acc := c.acc
		t.valAcc = &acc
	}
	return loss, err
}

// choices is the plan of the current validation split (made on first
// need), or nil: eval.validation_metrics off, or no plan for its examples.
func (t *textTask) choices() *valChoices {
	if !t.valMetrics {
		return nil
	}
	if t.plan == nil || !t.plan.isFor(t.data.val, t.data.valEx) {
		t.plan = &textPlan{t.data.val, t.data.valEx, newValChoices(t.eval, t.data.val, t.data.valEx)}
	}
	return t.plan.c
}

// validationMetrics is the validation split's metric (eval.validation_metrics):
// the accuracy the validation loss's pass just counted (validationLoss),
// which it hands over once, else the metric's own pass, the test
// evaluation's rules, from the start.
func (t *textTask) validationMetrics(pass *evalPass) (map[string]float64, error) {
	if metrics, ok, err := takeAccuracy(&t.valAcc, len(t.data.valEx)); ok {
		return metrics, err
	}
	return t.eval.validationMetrics(t.m, t.data.valEx, pass)
}

// freeMetric: the plan's metric needs no pass of its own.
func (t *textTask) freeMetric() bool { return t.choices() != nil }

func (t *textTask) metricExamples() int { return len(t.data.valEx) }

// sampleValidation keeps the first n validation examples, and of those
// eval.validation_metrics scores the first n.
func (t *textTask) sampleValidation(n int) func() {
	restoreVal, restoreEx := keepFirst(&t.data.val, n), keepFirst(&t.data.valEx, n)
	return func() { restoreVal(); restoreEx() }
}

func (t *textTask) sampleTest(n int) func() { return keepFirst(&t.data.test, n) }

// keepFirst keeps the first n elements of the slice *s (a split, sampled)
// and returns the function that puts the others back.
func keepFirst[T any](s *[]T, n int) (restore func()) {
	all := *s
	*s = all[:min(n, len(all))]
	return func() { *s = all }
}

func (t *textTask) testMetrics(m *model.Model, what string, pass *evalPass, part *evalPartial, record func(Prediction)) (map[string]float64, error) {
	t.eval.record = record
	defer func() { t.eval.record = nil }()
	return t.eval.testMetrics(m, t.data.test, what, pass, part)
}

// textStepFloor is textFloor's for the longest training example, with a
// prompt-tuning run's virtual tokens; with train.objective f1 or accuracy,
// whose variants are evaluated one at a time, that of one variant's
// generation batch or forward of label candidates.
func textStepFloor(cfg *Config, train []data.Sequence, c *model.Config) stepFloor {
	longest := 0
	for _, e := range train {
		longest = max(longest, len(e.IDs))
	}
	virtual := 0
	if cfg.Adapter.Kind == "prompt" {
		virtual = cfg.Adapter.VirtualTokens
	}
	f := textFloor(cfg.Train.BatchSize, longest, virtual, cfg.Optimizer.Q, cfg.Optimizer.Name == "fzoo", c.HiddenSize, c.IntermediateSize)
	if cfg.Train.scoresExamples() {
		// f1Objective generates for one variant at a time, eval.batch_size
		// examples a generation (its key/value cache: checkF1Generation);
		// accuracyObjective scores one variant's label candidates at a
		// time, eval.batch_size sequences a forward: one an example where
		// its labels are one token each (labelCandidates), else one a
		// candidate, so at least as many as the floor's.
		f.rows, f.variants, f.q = min(cfg.Eval.BatchSize, cfg.Train.BatchSize), 1, 0
	}
	return f
}
