package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

// An image task (task.name pets) trains a ViT image classifier
// (ViTForImageClassification) with a LoRA adapter on linear layers of its
// encoder (query and value as the paper; adapter.targets) and
// the classifier as a whole trainable copy (PEFT's modules_to_save). The
// run is the text tasks' run (run.go: the same loop, engine, checkpoints,
// resume and summary); what differs is here: the model, the images, the
// objective (mean cross-entropy over the classes, or with train.objective
// accuracy minus the fraction of the mini-batch predicted right) and the
// metric (accuracy).

// isImageTask says whether the config's task classifies images.
func isImageTask(cfg *Config) bool { return data.Task(cfg.Task.Name) == data.Pets }

// vision is an image task's modality: its model, its data and its
// objective, which evaluates the mini-batch setBatch sets.
type vision struct {
	vit       *model.ViT
	proc      imageproc.Config // the checkpoint's preprocessor_config.json
	adapter   *lora.ViTAdapter
	data      *imageSplits
	obj       *vitObjective
	batchSize int       // eval.batch_size: a validation's and a test evaluation's batches
	log       io.Writer // where a test evaluation writes its metrics
	// valMetrics (eval.validation_metrics) has validationLoss also count
	// the images its logits predict right, into valAcc (nil until a whole
	// pass has ended), which validationMetrics then reads: the accuracy
	// comes free with the loss's forwards.
	valMetrics bool
	valAcc     *valAccuracy
}

// valAccuracy is what a whole validation loss pass found of the accuracy:
// how many of its n images the class of the highest logit got right, or
// the error predict would have returned (a logit that is not finite in an
// image whose loss is: of any other class than its label's, -Inf).
type valAccuracy struct {
	right, n int
	err      error
}

// takeAccuracy hands over, once, the accuracy *a holds if it is a whole
// pass's over n examples (ok false: none, or a pass over others: the
// metric then runs its own pass).
func takeAccuracy(a **valAccuracy, n int) (metrics map[string]float64, ok bool, err error) {
	acc := *a
	if acc == nil || acc.n != n {
		return nil, false, nil
	}
	*a = nil
	if acc.err != nil {
		return nil, true, acc.err
	}
	return map[string]float64{"accuracy": float64(acc.right) / float64(acc.n)}, true, nil
}

// setupVision is an image task's part of setup: the backend and the ViT
// (with a fresh classifier of the task's classes on a checkpoint without
// one), the images, the adapter, the engine and the evaluation.
func (r *run) setupVision() error {
	cfg := r.cfg
	proc, err := imageproc.LoadConfig(filepath.Join(cfg.Model.Path, "preprocessor_config.json"))
	if err != nil {
		return err
	}
	if err := r.openBackend(); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "loading model %s\n", cfg.Model.Path)
	t0 := time.Now()
	v := &vision{proc: proc, batchSize: cfg.Eval.BatchSize, log: r.out, valMetrics: cfg.Eval.ValidationMetrics}
	if v.vit, err = model.LoadViTWith(cfg.Model.Path, model.ViTLoadOptions{Backend: r.backend, NumLabels: data.PetsClasses, HeadSeed: cfg.Train.Seed}); err != nil {
		return err
	}
	r.modality = v
	r.loadSecs = time.Since(t0).Seconds()
	if v.vit.Config.Headless {
		fmt.Fprintf(r.out, "%s has no classifier (a ViTModel): a fresh one of %d classes, drawn from train.seed %d\n", cfg.Model.Path, data.PetsClasses, cfg.Train.Seed)
	}
	side := v.vit.Config.ImageSize
	if err := proc.CheckSide(side); err != nil {
		return fmt.Errorf("model %s: preprocessor_config.json: %w", cfg.Model.Path, err)
	}
	if v.data, err = loadImageSplits(cfg, proc, side, data.PetsClasses, cfg.Train.Threads, r.out, r.stopStarting); err != nil {
		return err
	}
	if err := r.checkStepMemory(v.stepFloor(cfg.Train.BatchSize)); err != nil {
		return err
	}
	if v.adapter, err = newViTAdapter(cfg, r.initDir(), v.vit); err != nil {
		return err
	}
	v.obj = &vitObjective{vit: v.vit, adapter: v.adapter, accuracy: cfg.Train.Objective == ObjectiveAccuracy}
	r.tr = newVisionState(v, cfg.Adapter.Grouped, cfg.Eval.Merge)
	fmt.Fprintln(r.out, adapterLine(r.tr.count(), int64(v.vit.Config.ParamCount()), adapterWhat(cfg, nil)))
	if err := r.setupEngine(); err != nil {
		return err
	}
	r.state = r.initialState()
	return nil
}

// newViTAdapter makes the adapter the config describes on m: read from
// init (adapter.init, or on resume the checkpoint: initDir; its rank,
// alpha, targets and layers must be the config's; its classifier replaces
// the model's), or fresh.
func newViTAdapter(cfg *Config, init string, m *model.ViT) (*lora.ViTAdapter, error) {
	var a *lora.ViTAdapter
	var err error
	if init != "" {
		if a, err = lora.LoadViT(init, m, cfg.Adapter.Grouped); err != nil {
			return nil, fmt.Errorf("adapter.init: %w", err)
		}
		want, err := lora.LayersOf(m.Config.NumLayers, cfg.Adapter.layers())
		if err != nil {
			return nil, loraKeyError(err)
		}
		c := cfg.Adapter // adapter.targets as the adapter saves them (all-linear, "dense": the layers' own names)
		if c.Targets, err = lora.ViTTargetNames(&m.Config, cfg.Adapter.Targets, cfg.Adapter.layers()); err != nil {
			return nil, fmt.Errorf("adapter.targets: %w", err)
		}
		if err := matchLoRA(&c, a); err != nil {
			if !slices.Equal(c.Targets, cfg.Adapter.Targets) {
				return nil, fmt.Errorf("%w (adapter.targets %v as written)", err, cfg.Adapter.Targets)
			}
			return nil, err
		}
		if got := a.Layers(); !slices.Equal(got, want) {
			return nil, fmt.Errorf("adapter.init %s adapts layers %v (layers_to_transform), but adapter.layers is %v: set it to match the adapter", cfg.Adapter.Init, got, cfg.Adapter.Layers)
		}
	} else if a, err = lora.NewViT(m, lora.Options{R: cfg.Adapter.R, Alpha: cfg.Adapter.Alpha, Targets: cfg.Adapter.Targets, RSLoRA: cfg.Adapter.RSLoRA,
		Layers: cfg.Adapter.layers(), Seed: cfg.Train.Seed, GroupByLayer: cfg.Adapter.Grouped}); err != nil {
		return nil, loraKeyError(err)
	}
	a.SetBaseModel(cfg.ModelName())
	return a, nil
}

func (v *vision) sizes() (train, val, test int) {
	return len(v.data.train), len(v.data.val), len(v.data.test)
}

func (v *vision) sampleValidation(n int) func() { return keepFirst(&v.data.val, n) }

func (v *vision) sampleTest(n int) func() { return keepFirst(&v.data.test, n) }

func (v *vision) objective() objective { return v.obj }

func (v *vision) free() { v.vit.Free() }

// setBatch makes the training images idx the objective's mini-batch, as
// pixel_values.
func (v *vision) setBatch(idx []int) error {
	imgs := make([]labeledImage, len(idx))
	for i, j := range idx {
		imgs[i] = v.data.train[j]
	}
	var err error
	v.obj.pixels, v.obj.labels, err = pixels(v.proc, imgs)
	return err
}

// stepFloor is imageFloor's for the ViT.
func (v *vision) stepFloor(batchSize int) stepFloor {
	c := v.vit.Config
	return imageFloor(batchSize, c.ImageSize, c.PatchSize, c.HiddenSize, c.IntermediateSize)
}

// validationLoss is the mean cross-entropy over the validation images with
// the adapter attached, accumulated in float64. With eval.validation_metrics
// it also counts, from the same logits, the images the test evaluation's
// rule (predictClasses, as predict) gets right, into v.valAcc once the pass
// is whole: the batches are accuracy's (eval.batch_size from the first
// image), and a batch's logits are the same forward's either way (encode
// and classify; the loss only reads them).
func (v *vision) validationLoss(pass *evalPass) (float64, error) {
	batchSize := v.batchSize
	var sum float64
	n := len(v.data.val)
	v.valAcc = nil
	var acc valAccuracy
	for lo := 0; lo < n; lo += batchSize {
		hi := min(lo+batchSize, n)
		px, labels, err := pixels(v.proc, v.data.val[lo:hi])
		if err != nil {
			return 0, err
		}
		loss, logits, err := v.vit.Loss(px, hi-lo, labels)
		if err != nil {
			return 0, err
		}
		if v.valMetrics && acc.err == nil {
			acc.err = acc.count(logits, v.vit.Config.NumLabels, labels, lo)
		}
		sum += loss * float64(hi-lo)
		if err := pass.after(hi, hi < n); err != nil {
			return 0, err
		}
	}
	if v.valMetrics {
		acc.n = n
		v.valAcc = &acc
	}
	return sum / float64(n), nil
}

// count adds the images of a batch (logits: [images][k]; the first is
// validation image number first) whose class, by predictClasses, is their
// label; an error is predict's, which the metric's own pass would have
// stopped at.
func (a *valAccuracy) count(logits []float32, k int, labels []int, first int) error {
	preds, err := predictClasses(logits, k)
	if err != nil {
		return predictError(err, "validation", first)
	}
	for i, p := range preds {
		if p == labels[i] {
			a.right++
		}
	}
	return nil
}

// testMetrics is the test split's {"accuracy"} with whatever adapter the
// ViT has attached (m is nil), each image's answer handed to record (if
// not nil).
func (v *vision) testMetrics(_ *model.Model, what string, pass *evalPass, part *evalPartial, record func(Prediction)) (map[string]float64, error) {
	return scoreTest(v.log, data.Pets, what, len(v.data.test), pass, part, func() (map[string]float64, error) {
		return v.accuracy(v.data.test, "test", pass, part, record)
	})
}

// validationMetrics is the validation split's {"accuracy"}
// (eval.validation_metrics) with the adapter attached: that the validation
// loss's pass just counted (validationLoss), which it hands over once, else
// accuracy's own pass, the test evaluation's rule, from the start.
func (v *vision) validationMetrics(pass *evalPass) (map[string]float64, error) {
	if metrics, ok, err := takeAccuracy(&v.valAcc, len(v.data.val)); ok {
		return metrics, err
	}
	return v.accuracy(v.data.val, "validation", pass, &evalPartial{Sums: make([]float64, sumsLen(data.Pets))}, nil)
}

func (v *vision) metricExamples() int { return len(v.data.val) }

// freeMetric: the accuracy is counted from the validation loss's logits.
func (v *vision) freeMetric() bool { return v.valMetrics }

// accuracy is the accuracy on the images of split (named so in errors:
// "test", "validation"): the class of the highest logit (the first of
// equal ones) against the label, continued from part.
func (v *vision) accuracy(images []labeledImage, split string, pass *evalPass, part *evalPartial, record func(Prediction)) (map[string]float64, error) {
	n, batchSize := len(images), v.batchSize
	for lo := part.Done; lo < n; lo += batchSize {
		hi := min(lo+batchSize, n)
		batch := images[lo:hi]
		px, labels, err := pixels(v.proc, batch)
		if err != nil {
			return nil, err
		}
		preds, err := v.predict(px, len(labels), split, lo)
		if err != nil {
			return nil, err
		}
		for i, im := range batch {
			if preds[i] == im.label {
				part.Sums[0]++
			}
			if record != nil {
				record(labelledPrediction(im.id, Input{Image: &im.row}, preds[i], im.label, nil))
			}
		}
		part.Done = hi
		if err := pass.after(hi, hi < n); err != nil {
			return nil, err
		}
	}
	return map[string]float64{"accuracy": part.Sums[0] / float64(n)}, nil
}

// predict runs the ViT on a batch of n images (pixel_values px; the first
// is image number first of split, "test" or "validation", for errors) and
// returns each one's class (predictClasses).
func (v *vision) predict(px []float32, n int, split string, first int) ([]int, error) {
	logits, err := v.vit.Logits(px, n)
	if err != nil {
		return nil, err
	}
	preds, err := predictClasses(logits, v.vit.Config.NumLabels)
	if err != nil {
		return nil, predictError(err, split, first)
	}
	return preds, nil
}

// predictError is predictClasses' error err of a batch whose first image
// is image number first of split, named so.
func predictError(err error, split string, first int) error {
	if nf := (*nonFiniteLogit)(nil); errors.As(err, &nf) {
		return fmt.Errorf("%s image %d: its logit of class %d is not finite (%v): the weights or the adapter hold values that make the arithmetic meaningless", split, first+nf.image, nf.class, nf.value)
	}
	return err
}

// predictClasses is an image task's prediction rule, the test
// evaluation's (predict) and train.objective accuracy's (vitObjective):
// the class of each image's highest logit (logits: [images][k]), the first
// of equal ones (eval.PredictLabel, as torch.argmax). A logit that is not
// finite is a *nonFiniteLogit.
func predictClasses(logits []float32, k int) ([]int, error) {
	preds := make([]int, len(logits)/k)
	scores := make([]float64, k)
	for i := range preds {
		for c := range scores {
			if scores[c] = float64(logits[i*k+c]); math.IsNaN(scores[c]) || math.IsInf(scores[c], 0) {
				return nil, &nonFiniteLogit{image: i, class: c, value: scores[c]}
			}
		}
		preds[i] = eval.PredictLabel(scores)
	}
	return preds, nil
}

// nonFiniteLogit is predictClasses' error for image number image (of the
// batch) whose logit of class is not finite.
type nonFiniteLogit struct {
	image, class int
	value        float64
}

func (e *nonFiniteLogit) Error() string {
	return fmt.Sprintf("image %d: its logit of class %d is not finite (%v)", e.image, e.class, e.value)
}
