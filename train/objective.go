package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/zo"
)

// objective is the bridge between the ZO engine and the model: the loss of
// every perturbed variant of a step on the current mini-batch. A text
// task's (decoderObjective) evaluates them on the decoder in one batched
// forward; an image task's (vitObjective) on the ViT, one forward each.
type objective interface {
	zo.Objective
	// layerEvals is the layer evaluations of the last step (one unit = one
	// layer over the mini-batch).
	layerEvals() int
}

// decoderObjective is a decoder's objective: it evaluates every variant in
// one batched forward, starting a variant that perturbs only layer b's
// adapter at layer b (prefix caching).
type decoderObjective struct {
	m      *model.Model
	view   viewer // the trained parameters: an adapter's, or the model's own weights
	batch  model.Input
	labels []int
	// noPrefixCache runs every variant from the first layer (for measuring
	// what prefix caching saves; results are identical).
	noPrefixCache bool

	evals int // decoder-layer evaluations of the last step (one unit = one layer over B sequences)
}

// Evaluate implements zo.Objective.
func (o *decoderObjective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		from := 0
		switch {
		case v.Group == zo.Clean:
			from = o.m.NumLayers // identical to the base: reuse its pass
		case v.Group >= 0:
			from = o.view.groupLayer(v.Group)
		}
		if o.noPrefixCache && v.Group != zo.Clean {
			from = 0
		}
		mv[i] = o.view.variant(v, from)
	}
	losses, stats, err := o.m.Losses(o.batch, o.labels, o.view.baseOf(base), mv)
	if err != nil {
		return nil, err
	}
	o.evals = stats.LayerEvals
	return losses, nil
}

func (o *decoderObjective) layerEvals() int { return o.evals }

// f1Objective is train.objective f1 (MeZO's non-differentiable objective,
// its zo_forward_nondiff): a variant's loss is minus the mean over the
// mini-batch of the SQuAD F1 (0-1; the best over the example's references,
// as the official script scores) of the answers generated greedily with
// the variant's parameters attached, exactly as the test evaluation
// generates them (evaluator.answers: the same prompts, eval.batch_size
// examples a generation, eval.max_new_tokens, stop ids and answer
// extraction). One variant at a time; FZOO's clean variant is θ0.
type f1Objective struct {
	m     *model.Model
	a     trainable  // attaches a variant's parameters for the generation
	eval  *evaluator // the test evaluation's generation
	batch []data.Example

	evals int // decoder-layer evaluations of the last step: layers × generation forwards
}

// Evaluate implements zo.Objective.
func (o *f1Objective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	o.evals = 0
	return minusMetric(base, vs, o.meanF1, func(err error) bool { return errors.Is(err, model.ErrNonFiniteLogits) })
}

// minusMetric is a non-differentiable objective's Evaluate: each variant's
// loss is minus metric of its parameters, one variant after the other
// (every variant of an engine over host slices has its parameters; θ0 is
// the safe reading of none). A variant whose metric fails with overflow
// (its parameters make the model's arithmetic overflow: an ε or a step too
// large, the run diverging) has a loss that is not finite, as its
// cross-entropy would, and the engine ends the run as diverged, not failed
// with a resume that would fail at the same variant again; the variants
// after it are not evaluated.
func minusMetric(base [][]float32, vs []zo.Variant, metric func([][]float32) (float64, error), overflow func(error) bool) ([]float64, error) {
	out := make([]float64, len(vs))
	for i, v := range vs {
		params := v.Params
		if params == nil {
			params = base
		}
		m, err := metric(params)
		if err != nil && overflow(err) {
			for j := i; j < len(out); j++ {
				out[j] = math.NaN()
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out[i] = 0 - m // (not -m: a metric of 0 is a loss of 0, not -0, in metrics.jsonl)
	}
	return out, nil
}

// meanF1 is the mean SQuAD F1 (0-1) of the answers generated for the
// mini-batch with params attached.
func (o *f1Objective) meanF1(params [][]float32) (float64, error) {
	if len(o.batch) == 0 {
		return 0, fmt.Errorf("train.objective f1: an empty mini-batch")
	}
	var sum float64
	err := withAdapter(o.m, o.a, params, false, func(m *model.Model) error {
		e := o.eval
		for lo := 0; lo < len(o.batch); lo += e.batchSize {
			chunk := o.batch[lo:min(lo+e.batchSize, len(o.batch))]
			preds, steps, err := e.answers(m, chunk)
			if err != nil {
				return err
			}
			o.evals += steps * m.NumLayers
			for i, ex := range chunk {
				_, f1 := eval.SquadScore(preds[i], references(e.task, ex))
				sum += f1
			}
		}
		return nil
	})
	return sum / float64(len(o.batch)), err
}

func (o *f1Objective) layerEvals() int { return o.evals }

// exampleObjective is a non-differentiable objective (train.objective f1,
// accuracy): it scores the mini-batch's examples as the test evaluation
// does, not their encoded training sequences.
type exampleObjective interface {
	objective
	setExamples(exs []data.Example)
}

func (o *f1Objective) setExamples(exs []data.Example) { o.batch = exs }

// accuracyObjective is train.objective accuracy (MeZO's non-differentiable
// objective for classification, its zo_forward_nondiff on a classification
// task): a variant's loss is minus the fraction of the mini-batch whose
// label, predicted with the variant's parameters attached exactly as the
// test evaluation predicts it (evaluator.classify: every label candidate
// scored by its label tokens' mean log-probability, labelCandidates'
// sequences eval.batch_size a forward, eval.PredictLabel's rule and
// tie-break), is the gold label. One variant at a time; FZOO's clean
// variant is θ0.
type accuracyObjective struct {
	m     *model.Model
	a     trainable  // attaches a variant's parameters for the scoring
	eval  *evaluator // the test evaluation's scoring
	batch []data.Example

	evals int // decoder-layer evaluations of the last step: layers × forwards
}

func (o *accuracyObjective) setExamples(exs []data.Example) { o.batch = exs }

// Evaluate implements zo.Objective.
func (o *accuracyObjective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	o.evals = 0
	if len(o.batch) == 0 {
		return nil, fmt.Errorf("train.objective accuracy: an empty mini-batch")
	}
	c, err := o.eval.candidateSeqs(o.batch, "training example")
	if err != nil {
		return nil, err
	}
	accuracy := func(params [][]float32) (float64, error) { return o.accuracy(params, c) }
	var nf *nonFiniteScore
	return minusMetric(base, vs, accuracy, func(err error) bool { return errors.As(err, &nf) })
}

// accuracy is the fraction of the mini-batch (c: its label candidates)
// whose predicted label is the gold one, with params attached.
func (o *accuracyObjective) accuracy(params [][]float32, c labelCandidates) (float64, error) {
	k := len(c.labels)
	scores := make([]float64, k*len(o.batch))
	err := withAdapter(o.m, o.a, params, false, func(m *model.Model) error {
		for lo := 0; lo < len(c.seqs); lo += o.eval.batchSize {
			if err := o.eval.scoreCandidates(m, c, lo, min(lo+o.eval.batchSize, len(c.seqs)), scores); err != nil {
				return err
			}
			o.evals += m.NumLayers
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	correct := 0
	for i, ex := range o.batch {
		if eval.PredictLabel(scores[k*i:k*i+k]) == ex.Label {
			correct++
		}
	}
	return float64(correct) / float64(len(o.batch)), nil
}

func (o *accuracyObjective) layerEvals() int { return o.evals }

// vitObjective is an image task's objective: the mini-batch's mean
// cross-entropy over the classes under each variant's parameters (base for
// the clean one), one forward each, all on one upload of the images. With
// accuracy (train.objective accuracy: MeZO's --optimize_acc) a variant's
// loss is instead minus the fraction of the mini-batch whose class, as the
// test evaluation predicts it (predictClasses: the highest logit, the
// first of equal ones), is its label: the same forward of the mini-batch,
// its logits not its cross-entropy.
type vitObjective struct {
	vit     *model.ViT
	adapter *lora.ViTAdapter
	// The mini-batch: pixel_values and classes.
	pixels   []float32
	labels   []int
	accuracy bool

	evals int // encoder-layer evaluations of the last step
}

// Evaluate implements zo.Objective.
func (o *vitObjective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	defer func() { o.vit.Adapter = nil }()
	o.evals = o.vit.Config.NumLayers * len(vs)
	// The images cut into patches and uploaded once for every variant: per
	// variant that was 19 MB from pageable memory for 32 images at 224×224,
	// with the GPU idle, twice a step.
	if len(vs) == 0 {
		return []float64{}, nil
	}
	im, err := o.vit.Images(o.pixels, len(o.labels))
	if err != nil {
		return nil, err
	}
	defer im.Free()
	if o.accuracy {
		accuracy := func(params [][]float32) (float64, error) { return o.accuracyOf(im, params) }
		var nf *nonFiniteLogit
		return minusMetric(base, vs, accuracy, func(err error) bool { return errors.As(err, &nf) })
	}
	out := make([]float64, len(vs))
	for i, zv := range vs {
		params := zv.Params
		if params == nil {
			params = base
		}
		o.vit.Adapter = o.adapter.View(params)
		loss, _, err := o.vit.LossOf(im, o.labels)
		if err != nil {
			return nil, err
		}
		out[i] = loss
	}
	return out, nil
}

// accuracyOf is the fraction of the mini-batch (im) whose class the ViT
// with params attached predicts right (predictClasses; a logit that is not
// finite is its *nonFiniteLogit).
func (o *vitObjective) accuracyOf(im *model.ViTImages, params [][]float32) (float64, error) {
	o.vit.Adapter = o.adapter.View(params)
	logits, err := o.vit.LogitsOf(im)
	if err != nil {
		return 0, err
	}
	preds, err := predictClasses(logits, o.vit.Config.NumLabels)
	if err != nil {
		return 0, err
	}
	correct := 0
	for i, p := range preds {
		if p == o.labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(o.labels)), nil
}

func (o *vitObjective) layerEvals() int { return o.evals }

// Objective is the exported form of the trainer's ZO objective, for
// benchmarks and tools: LoRA (a != nil) or prompt tuning.
type Objective struct{ o objective }

// NewObjective returns the objective for a LoRA adapter on m; with a nil
// adapter the parameters are prompt-tuning embeddings.
func NewObjective(m *model.Model, a *lora.Adapter, prefixCache bool) *Objective {
	var t trainable = &promptAdapter{m: m}
	if a != nil {
		t = &loraAdapter{a: a, m: m}
	}
	return &Objective{&decoderObjective{m: m, view: adapterView{t}, noPrefixCache: !prefixCache}}
}

// NewViTObjective returns an image task's objective for a LoRA adapter on
// a ViT: the mean cross-entropy of the mini-batch SetImages sets, one
// forward per variant, as a training run evaluates it.
func NewViTObjective(m *model.ViT, a *lora.ViTAdapter) *Objective {
	return &Objective{&vitObjective{vit: m, adapter: a}}
}

// SetImages sets the mini-batch the next step of a NewViTObjective
// evaluates: n images' pixel_values ([n][channels][side][side]) and their
// classes. On a decoder's objective it is an error.
func (x *Objective) SetImages(pixels []float32, labels []int) error {
	o, ok := x.o.(*vitObjective)
	if !ok {
		return fmt.Errorf("train: SetImages on a decoder's objective (SetBatch sets its tokens)")
	}
	o.pixels, o.labels = pixels, labels
	return nil
}

// SetBatch sets the mini-batch the next step of a decoder's objective
// evaluates (a ViT's takes SetImages: there it does nothing).
func (x *Objective) SetBatch(in model.Input, labels []int) {
	if o, ok := x.o.(*decoderObjective); ok {
		o.batch, o.labels = in, labels
	}
}

// LayerEvals returns the layer evaluations of the last step.
func (x *Objective) LayerEvals() int { return x.o.layerEvals() }

// Evaluate implements zo.Objective.
func (x *Objective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	return x.o.Evaluate(base, vs)
}
