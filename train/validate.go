package train

// Validate and the checks it runs, one part of a config each: a value
// the type system lets through but the run cannot take is refused here,
// before anything is read or written, with its key.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/suggest"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/zo"
)

// Validate checks values that the type system does not: the inputs, the
// adapter, the optimizer, then the run's counts, each part's first error.
func (c *Config) Validate() error {
	if c.Task.Name == string(data.Pets) {
		if err := c.validateImageTask(); err != nil {
			return err
		}
	}
	for _, check := range []func() error{c.validateInputs, c.validateOwnTask, c.validateAdapter, c.validateOptimizer, c.validateRun, c.validateObjective} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateInputs checks the model and the task.
func (c *Config) validateInputs() error {
	switch {
	case c.Model.Path == "":
		return fmt.Errorf("model.path is required")
	case !slices.Contains([]string{"sst2", "squad", "xsum", "pets", "classification", "generation"}, c.Task.Name):
		return choiceError("task.name", c.Task.Name, "sst2", "squad", "xsum", "pets", "classification", "generation")
	case c.Task.Train == "":
		return fmt.Errorf("task.train is required")
	case c.Task.Format != string(data.FormatChat) && c.Task.Format != string(data.FormatMeZO):
		return choiceError("task.format", c.Task.Format, "chat", "mezo")
	case c.Task.Format == string(data.FormatMeZO) && c.Task.Name != "sst2":
		return fmt.Errorf("task.format mezo has only SST-2's template (MeZO's), not task.name %s: use task.format chat with a model that has a chat template", c.Task.Name)
	case !slices.Contains([]string{"auto", "cpu", "cuda"}, c.Model.Backend):
		return fmt.Errorf("model.backend %q: want auto, cpu or cuda (cuda: an NVIDIA GPU)", c.Model.Backend) // no "did you mean": gpu is one edit from cpu
	// adapter.kind full first: adding model.bf16_weights, as the other says, would not help it.
	case c.Model.BF16Products && c.Adapter.Kind == "full":
		return fmt.Errorf("model.bf16_products is for frozen weights (adapter.kind lora or prompt), not adapter.kind full: a full-parameter run's perturbed products stay float32, " +
			"so its clean passes (validation, FZOO's) would multiply otherwise than its perturbed ones; leave it off")
	case c.Model.BF16Products && !c.Model.BF16:
		return fmt.Errorf("model.bf16_products multiplies the weights that model.bf16_weights keeps in bfloat16, and it is off: add model.bf16_weights: true (--set model.bf16_weights=true)")
	}
	return nil
}

// choiceError refuses value for key, which takes one of choices, and names
// the closest choice where the value looks like a typo of it (two edits or
// fewer, case aside: "ful", "zo_sgd", "LoRA").
func choiceError(key, value string, choices ...string) error {
	msg := fmt.Sprintf("%s %q: want %s or %s", key, value, strings.Join(choices[:len(choices)-1], ", "), choices[len(choices)-1])
	v := strings.ToLower(value) // every choice is lower-case
	if c := suggest.Closest(v, choices); c != "" && suggest.Distance(v, c) <= 2 {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	return errors.New(msg)
}

// validateAdapter checks what trains: adapter.*.
func (c *Config) validateAdapter() error {
	switch {
	case c.Adapter.Kind != "lora" && c.Adapter.Kind != "prompt" && c.Adapter.Kind != "full":
		return choiceError("adapter.kind", c.Adapter.Kind, "lora", "prompt", "full")
	case c.Adapter.Kind == "full" && c.Adapter.Init != "":
		return fmt.Errorf("adapter.init %s: a full-parameter run starts from model.path (point model.path at a saved model directory, such as a run's best/)", c.Adapter.Init)
	case c.Adapter.Kind != "full" && (len(c.Adapter.Include) > 0 || len(c.Adapter.Exclude) > 0):
		return c.tensorsNotFull()
	case c.Adapter.Kind == "prompt" && c.Adapter.Grouped:
		return fmt.Errorf("adapter.grouped must be false for prompt tuning (it has a single parameter group)")
	case c.Adapter.Kind == "prompt" && c.Adapter.VirtualTokens <= 0:
		return fmt.Errorf("adapter.virtual_tokens must be positive, got %d", c.Adapter.VirtualTokens)
	case c.Adapter.Kind == "lora" && c.Adapter.R < 1:
		return fmt.Errorf("adapter.r must be at least 1, got %d", c.Adapter.R)
	case c.Adapter.Kind == "lora" && !(c.Adapter.Alpha > 0 && !math.IsInf(c.Adapter.Alpha, 0)):
		return fmt.Errorf("adapter.alpha must be positive and finite, got %g", c.Adapter.Alpha)
	case c.Adapter.Kind == "lora" && c.Task.Name != string(data.Pets) && !validTargets(c.Adapter.Targets, lora.SupportedTargets()):
		return fmt.Errorf("adapter.targets %v: want one or more of %v, each once (%s only alone)", c.Adapter.Targets, lora.SupportedTargets(), lora.AllLinear)
	}
	return checkLayers(c.Adapter.Layers)
}

// checkLayers refuses adapter.layers with an index below 0 or one given
// twice, naming that index alone: sorted, in n log n, as a list of
// millions is read (checked against the model's layers when it is loaded).
func checkLayers(layers []int) error {
	ls := slices.Sorted(slices.Values(layers))
	for i, l := range ls {
		switch {
		case l < 0:
			return fmt.Errorf("adapter.layers: layer %d: want layer indices from 0, each once", l)
		case i > 0 && l == ls[i-1]:
			return fmt.Errorf("adapter.layers: layer %d is named twice: want layer indices from 0, each once", l)
		}
	}
	return nil
}

// tensorsNotFull refuses adapter.include or adapter.exclude (the first
// given) on a run that is not full-parameter; the message starts with its
// key, for blame.
func (c *Config) tensorsNotFull() error {
	key, v := "adapter.include", c.Adapter.Include
	if len(v) == 0 {
		key, v = "adapter.exclude", c.Adapter.Exclude
	}
	return fmt.Errorf("%s %v: chooses tensors of a full-parameter run (adapter.kind full), not of adapter.kind %s", key, v, c.Adapter.Kind)
}

// Optimizers are the values of optimizer.name (and of a study's
// optimizers, meazo-bench's -opt).
var Optimizers = []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"}

// OptimizerChoice checks an optimizer's name against Optimizers, for key
// (the setting or flag that gave it): nil for one of them, else the
// choices, with a did-you-mean (zo-adam for adam), and for mezo (one
// letter from meazo) that MeZO's optimizer is zo-sgd.
func OptimizerChoice(key, name string) error {
	switch {
	case slices.Contains(Optimizers, name):
		return nil
	case strings.EqualFold(name, "mezo"):
		return fmt.Errorf("%s %q: want meazo, zo-sgd, zo-adam, radazo or fzoo (MeZO's optimizer is zo-sgd; meazo is MEAZO)", key, name)
	case slices.Contains(Optimizers, "zo-"+strings.ToLower(name)): // adam, SGD: too far from zo-adam for choiceError's spelling
		return fmt.Errorf("%s %q: want meazo, zo-sgd, zo-adam, radazo or fzoo (did you mean %q?)", key, name, "zo-"+strings.ToLower(name))
	}
	return choiceError(key, name, Optimizers...)
}

// validateOptimizer checks optimizer.*: its name, rates and decays.
func (c *Config) validateOptimizer() error {
	if err := OptimizerChoice("optimizer.name", c.Optimizer.Name); err != nil {
		return err
	}
	switch {
	case !(c.Optimizer.LR > 0) || math.IsInf(c.Optimizer.LR, 0):
		return fmt.Errorf("optimizer.lr must be positive and finite, got %g", c.Optimizer.LR)
	case !(c.Optimizer.Eps > 0) || math.IsInf(c.Optimizer.Eps, 0):
		return fmt.Errorf("optimizer.eps must be positive and finite, got %g", c.Optimizer.Eps)
	case !(c.Optimizer.Zeta > 0) || math.IsInf(c.Optimizer.Zeta, 0):
		return fmt.Errorf("optimizer.zeta must be positive and finite, got %g", c.Optimizer.Zeta)
	case !(c.Optimizer.WeightDecay >= 0) || math.IsInf(c.Optimizer.WeightDecay, 0):
		return fmt.Errorf("optimizer.weight_decay must be >= 0 and finite, got %g", c.Optimizer.WeightDecay)
	case !slices.Contains([]string{"", "normal", "sphere", "rademacher", "ternary"}, c.Optimizer.Dist):
		return choiceError("optimizer.dist", c.Optimizer.Dist, "normal", "sphere", "rademacher", "ternary")
	case c.Optimizer.Q < 1:
		return fmt.Errorf("optimizer.q must be at least 1, got %d", c.Optimizer.Q)
	case c.Optimizer.Name == "fzoo" && c.Optimizer.Q < 2:
		return fmt.Errorf("optimizer.q must be at least 2 for fzoo (the std of one loss is 0), got %d", c.Optimizer.Q)
	case c.Optimizer.Schedule == "constant_with_warmup":
		return fmt.Errorf("optimizer.schedule %q: HF's constant_with_warmup is constant here, with optimizer.warmup_steps", c.Optimizer.Schedule)
	case !slices.Contains([]string{"constant", "linear", "cosine"}, c.Optimizer.Schedule):
		return choiceError("optimizer.schedule", c.Optimizer.Schedule, "constant", "linear", "cosine")
	case c.Optimizer.WarmupSteps < 0:
		return fmt.Errorf("optimizer.warmup_steps must be at least 0, got %d", c.Optimizer.WarmupSteps)
	case c.Optimizer.Schedule != "constant" && c.Train.Steps == 0:
		return fmt.Errorf("optimizer.schedule %s runs over train.steps, which is 0", c.Optimizer.Schedule)
	}
	// The optimizers' moving averages need decays in [0, 1).
	for _, d := range []struct {
		key string
		v   float64
	}{{"optimizer.beta1", c.Optimizer.Beta1}, {"optimizer.beta2", c.Optimizer.Beta2}, {"optimizer.beta", c.Optimizer.Beta}, {"optimizer.momentum", c.Optimizer.Momentum}} {
		if !(d.v >= 0 && d.v < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", d.key, d.v)
		}
	}
	return nil
}

// schedule is the learning-rate schedule of optimizer.schedule and
// optimizer.warmup_steps over train.steps (validated: a known name).
func (c *Config) schedule() zo.Schedule {
	kind, _ := zo.ParseSchedule(c.Optimizer.Schedule)
	return zo.Schedule{Kind: kind, Warmup: c.Optimizer.WarmupSteps, Steps: c.Train.Steps}
}

// validateRun checks the run's counts, batch sizes and output.
func (c *Config) validateRun() error {
	switch {
	case c.Train.EvalEvery < 1:
		return fmt.Errorf("train.eval_every must be at least 1, got %d", c.Train.EvalEvery)
	case c.Train.BatchSize < 1:
		return fmt.Errorf("train.batch_size must be at least 1, got %d", c.Train.BatchSize)
	case c.Eval.BatchSize < 1:
		return fmt.Errorf("eval.batch_size must be at least 1, got %d", c.Eval.BatchSize)
	case c.Output.Dir == "":
		return fmt.Errorf("output.dir is required")
	case !slices.Contains([]string{rundir.KeepAll, rundir.KeepBest, rundir.KeepNone}, c.Output.KeepWeights):
		return fmt.Errorf("output.keep_weights must be %s, %s or %s, got %q", rundir.KeepAll, rundir.KeepBest, rundir.KeepNone, c.Output.KeepWeights)
	}
	// Counts and limits where 0 means none (or the default), and no
	// negative value means anything. Each error starts with its key, so
	// that Load blames a --set value on --set.
	for _, n := range []struct {
		key string
		v   int
	}{{"train.steps", c.Train.Steps}, {"train.checkpoint_every", c.Train.CheckpointEvery}, {"train.threads", c.Train.Threads},
		{"train.log_every", c.Train.LogEvery}, {"train.patience", c.Train.Patience}, {"task.max_train", c.Task.MaxTrain}, {"task.max_validation", c.Task.MaxValidation},
		{"task.max_test", c.Task.MaxTest}, {"task.max_length", c.Task.MaxLength}, {"eval.max_new_tokens", c.Eval.MaxNewTokens}} {
		if n.v < 0 {
			return fmt.Errorf("%s must not be negative, got %d", n.key, n.v)
		}
	}
	return nil
}

// The values of train.objective.
const (
	ObjectiveLoss = "loss" // the mini-batch's cross-entropy
	ObjectiveF1   = "f1"   // minus the mean SQuAD F1 of the generated answers (f1Objective)
	// minus the fraction of the mini-batch whose predicted label is right
	// (accuracyObjective; pets: vitObjective's accuracy)
	ObjectiveAccuracy = "accuracy"
)

// scoresExamples says whether the objective scores the mini-batch's
// examples as the test evaluation does (f1, accuracy: a non-differentiable
// objective, each variant evaluated alone) rather than its cross-entropy.
func (t *TrainConfig) scoresExamples() bool {
	return t.Objective == ObjectiveF1 || t.Objective == ObjectiveAccuracy
}

// validateObjective checks train.objective: f1 needs generated answers
// scored by SQuAD's F1 (tasks squad and generation), accuracy predicted
// labels (a text task's label candidates: sst2 and classification; or an
// image task's classes: pets), and both an adapter whose variants the test
// evaluation's forwards can take (LoRA, prompt tuning; pets takes LoRA
// alone, validateImageTask).
func (c *Config) validateObjective() error {
	switch {
	case !slices.Contains([]string{ObjectiveLoss, ObjectiveF1, ObjectiveAccuracy}, c.Train.Objective):
		return choiceError("train.objective", c.Train.Objective, ObjectiveLoss, ObjectiveF1, ObjectiveAccuracy)
	case c.Train.Objective == ObjectiveAccuracy:
		return c.validateAccuracy()
	case c.Train.Objective != ObjectiveF1:
		return nil
	case c.Task.Name != string(data.SQuAD) && c.Task.Name != string(data.Generation):
		alt := "train.objective loss trains on the cross-entropy"
		if slices.Contains([]string{string(data.SST2), string(data.Classification), string(data.Pets)}, c.Task.Name) {
			alt = "train.objective accuracy trains it on its predicted labels, loss on the cross-entropy"
		}
		return fmt.Errorf("train.objective f1 scores generated answers by SQuAD's F1: it takes task.name squad or generation, not %s (%s)", c.Task.Name, alt)
	case c.Adapter.Kind == "full":
		return fmt.Errorf("train.objective f1 is not supported with adapter.kind full: generation with perturbed full weights is not built; use adapter.kind lora or prompt, or train.objective loss")
	}
	return nil
}

// validateAccuracy checks train.objective accuracy: the predicted labels
// of a classification task (sst2, classification, pets), an adapter.
func (c *Config) validateAccuracy() error {
	switch {
	case !slices.Contains([]string{string(data.SST2), string(data.Classification), string(data.Pets)}, c.Task.Name):
		return fmt.Errorf("train.objective accuracy scores predicted labels: it takes task.name sst2, classification or pets, not %s, which generates its answers (train.objective f1 trains squad and generation on their F1, loss on the cross-entropy)", c.Task.Name)
	case c.Adapter.Kind == "full":
		return fmt.Errorf("train.objective accuracy is not supported with adapter.kind full: scoring perturbed full weights one variant at a time is not built; use adapter.kind lora or prompt, or train.objective loss")
	}
	return nil
}

// validateImageTask checks what an image task (pets) can train: LoRA on a
// ViT's encoder linear layers (lora.SupportedViTTargets; of
// adapter.layers' encoder layers, or all of them; and the classifier,
// always).
func (c *Config) validateImageTask() error {
	switch {
	case c.Adapter.Kind != "lora":
		return fmt.Errorf("adapter.kind %s: task %s trains a LoRA adapter of its ViT (adapter.kind lora)", c.Adapter.Kind, c.Task.Name)
	case !validTargets(c.Adapter.Targets, lora.SupportedViTTargets()):
		return fmt.Errorf("adapter.targets %v: a ViT's LoRA targets one or more of %v, each once (%s only alone), as PEFT's target_modules names them (task %s)", c.Adapter.Targets, lora.SupportedViTTargets(), lora.AllLinear, c.Task.Name)
	}
	return nil
}

// layers is adapter.layers for lora.Options: nil for every layer.
func (a *AdapterConfig) layers() []int {
	if len(a.Layers) == 0 {
		return nil
	}
	return a.Layers
}

// validTargets reports whether ts names one or more of the projections
// supported, none twice, and lora.AllLinear only alone.
func validTargets(ts, supported []string) bool {
	for i, t := range ts {
		if !slices.Contains(supported, t) || slices.Contains(ts[:i], t) || t == lora.AllLinear && len(ts) > 1 {
			return false
		}
	}
	return len(ts) > 0
}
