package train

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

// A step's memory, checked before a run writes anything. A mini-batch of
// train.batch_size examples is padded to its longest (with a prompt-tuning
// run's virtual tokens in front); one forward over it holds at least its
// hidden states and its MLP's two intermediate products (float32, one
// value per token and width) for each of the step's perturbed points
// that a decoder evaluates at once, and the host builds the batch's token
// ids, labels and mask (or an image batch's pixels). A batch size, a q or
// a prompt that cannot fit (a typo: 1e9) is refused with the figures,
// where it would otherwise kill the process out of memory after step 0's
// checkpoint (leaving a run that --resume cannot finish), or as the
// adapter is made.

// stepFloor is a lower bound, in bytes, of what one training step of rows
// sequences of tokens each allocates: host bytes per token (the batch's
// arrays) and, where the model computes in host memory, the forward's, for
// each of the variants a decoder evaluates at once (model.Losses runs every
// perturbed point of a step in one batched forward).
type stepFloor struct {
	rows, tokens int
	variants     int // evaluated at once: 2q (central differences), q+1 (FZOO); an image task's one at a time
	q            int // optimizer.q, named where it counts (0: not named)
	virtual      int // of tokens, a prompt-tuning run's virtual tokens (each row's, in front)
	hostPerToken int // the batch's arrays
	actPerToken  int // the forward's activations, float32
}

// bytes is the floor's total, in float64 (it may exceed any int).
func (f stepFloor) bytes(onHost bool) float64 {
	per := float64(f.hostPerToken)
	if onHost {
		per += float64(max(1, f.variants)) * float64(f.actPerToken)
	}
	return float64(f.rows) * float64(f.tokens) * per
}

// textFloor is a text task's floor: B sequences of the longest training
// example's length and a prompt-tuning run's virtual tokens, with hidden
// states and the MLP's gate and up products, for each of a step's
// variants (q directions: 2q of them, or q+1 when oneSided, FZOO's).
func textFloor(batch, longest, virtual, q int, oneSided bool, hidden, intermediate int) stepFloor {
	variants := 2 * q
	if oneSided {
		variants = q + 1
	}
	return stepFloor{rows: batch, tokens: longest + virtual, variants: variants, q: q, virtual: virtual,
		hostPerToken: 3 * 8, actPerToken: 4 * (hidden + 2*intermediate)}
}

// imageFloor is an image task's: B images of side², each 3 float32 a pixel
// on the host, and the encoder's tokens (patches and CLS) with hidden
// states and the MLP's product (its variants run one at a time).
func imageFloor(batch, side, patch, hidden, intermediate int) stepFloor {
	tokens := (side/patch)*(side/patch) + 1
	return stepFloor{rows: batch, tokens: tokens, variants: 1, hostPerToken: 3 * 4 * side * side / tokens, actPerToken: 4 * (hidden + intermediate)}
}

// checkBatchMemory refuses a batch size (with the directions and virtual
// tokens that multiply it) whose step needs more than the machine's memory
// (total: 0 when unknown, then nothing is checked).
func checkBatchMemory(batch int, f stepFloor, onHost bool, total uint64) error {
	need := f.bytes(onHost)
	if total == 0 || need <= float64(total) {
		return nil
	}
	keys, fixes := []string{fmt.Sprintf("train.batch_size %d", batch)}, []string{"a smaller batch"}
	what := fmt.Sprintf("%d examples of up to %d tokens each", f.rows, f.tokens)
	if f.q > 1 {
		keys, fixes = append(keys, fmt.Sprintf("optimizer.q %d", f.q)), append(fixes, "fewer directions")
		what = fmt.Sprintf("%d variants at once of %s", f.variants, what)
	}
	if f.virtual > 0 {
		keys, fixes = append(keys, fmt.Sprintf("adapter.virtual_tokens %d", f.virtual)), append(fixes, "fewer virtual tokens")
		what += fmt.Sprintf(", %d of them virtual", f.virtual)
	}
	return fmt.Errorf("%s: one step needs at least %s (%s), more than this machine's %s of memory; use %s",
		strings.Join(keys, ", "), size(need), what, size(float64(total)), strings.Join(fixes, " or "))
}

// checkStepMemory refuses the run's batch size (and a prompt-tuning run's
// virtual tokens) when a step's floor f exceeds the machine's memory.
func (r *run) checkStepMemory(f stepFloor) error {
	return checkBatchMemory(r.cfg.Train.BatchSize, f, r.backend.Name() == "cpu", sysmem.Total())
}

// checkAdapterMemory refuses, before the adapter is made, a LoRA adapter
// (adapter.r, adapter.targets) whose parameters cannot fit the machine's
// memory in the copies a step holds at least: the parameters, each of the
// 2q perturbed points the engine forms, and the best ones kept for
// evaluation. A rank of the hidden size on every projection of an 8B model
// is tens of GB: refused with the figures, not killed mid-allocation. An
// adapter.init is checked too, by the config's figures: it loads only if
// its rank and targets are adapter.r and adapter.targets (matchLoRA), and
// its copies are the same size (a run from one of 131,072 parameters at q
// 30,000 died out of memory in its first step).
func (r *run) checkAdapterMemory() error {
	a := r.cfg.Adapter
	if a.Kind != "lora" {
		return nil
	}
	return adapterMemory(&r.m.Config, a, r.cfg.Optimizer.Q, sysmem.Total())
}

// adapterMemory is checkAdapterMemory's test on a model of config c, with
// q directions, on a machine of total bytes (0: unknown, nothing checked).
func adapterMemory(c *model.Config, a AdapterConfig, q int, total uint64) error {
	n, err := lora.Size(c, lora.Options{R: a.R, Alpha: a.Alpha, Targets: a.Targets, Layers: a.layers()})
	if err != nil {
		return nil // newTrainable says what is wrong
	}
	copies := 2*q + 2
	need := 4 * float64(n) * float64(copies)
	if total == 0 || need <= float64(total) {
		return nil
	}
	return fmt.Errorf("adapter.r %d on %v: the adapter's %s parameters need at least %s in the %d float32 copies a step holds (the parameters, %d perturbed points, the best), more than this machine's %s of memory; use a smaller adapter.r, fewer adapter.targets or adapter.layers, or a smaller optimizer.q",
		a.R, a.Targets, groupDigits(n), size(need), copies, copies-2, size(float64(total)))
}

// checkTestGeneration refuses, before the run starts, a generation cap
// (eval.max_new_tokens) whose test evaluation, or whose validation metric
// (eval.validation_metrics, of vals examples), cannot hold its key/value
// cache in the machine's memory: otherwise the run would train to the end,
// or to its first validation, and fail there. The cache of one evaluation
// batch holds at least the new tokens of each of its sequences (the
// prompts come on top).
func (r *run) checkTestGeneration(tests, vals int) error {
	task := data.Task(r.cfg.Task.Name)
	if r.cfg.Eval.Skip {
		tests = 0
	}
	if !r.cfg.Eval.ValidationMetrics {
		vals = 0
	}
	if !task.Generates() || tests == 0 && vals == 0 {
		return nil
	}
	what, rows, maxNew := "the test evaluation's", min(r.cfg.Eval.BatchSize, max(tests, vals)), r.cfg.maxNewTokens()
	if tests < vals {
		what = "the validation metric's (eval.validation_metrics)"
	}
	need, total := r.m.CacheHostBytes(rows, float64(maxNew)), sysmem.Total()
	if total == 0 || need <= float64(total) {
		return nil
	}
	return fmt.Errorf("eval.max_new_tokens %d: %s key/value cache of %d sequences needs at least %s, more than this machine's %s of memory",
		maxNew, what, rows, size(need), size(float64(total)))
}

// checkF1Generation is checkTestGeneration for train.objective f1, whose
// every step generates answers for the mini-batch (eval.batch_size
// sequences at a time), with or without a test evaluation: refused before
// the run starts, not at its first step, after which the resume could not
// change eval.max_new_tokens.
func (r *run) checkF1Generation() error {
	if r.cfg.Train.Objective != ObjectiveF1 {
		return nil
	}
	rows, maxNew := min(r.cfg.Eval.BatchSize, r.cfg.Train.BatchSize), r.cfg.maxNewTokens()
	need, total := r.m.CacheHostBytes(rows, float64(maxNew)), sysmem.Total()
	if total == 0 || need <= float64(total) {
		return nil
	}
	return fmt.Errorf("eval.max_new_tokens %d: the key/value cache of train.objective f1's generation of %d sequences (a step's answers) needs at least %s, more than this machine's %s of memory",
		maxNew, rows, size(need), size(float64(total)))
}

// size writes a byte count given as a float64 (a floor may pass any
// int64; capped at 4 EiB), as bytesize does.
func size(b float64) string { return bytesize.String(int64(min(b, 1<<62))) }
