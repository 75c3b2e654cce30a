package train

import (
	"fmt"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/sysmem"
)

// A step's memory, checked before a run writes anything. A mini-batch of
// train.batch_size examples is padded to its longest; one forward over it
// holds at least its hidden states and its MLP's two intermediate products
// (float32, one value per token and width), and the host builds the
// batch's token ids, labels and mask (or an image batch's pixels). A batch
// size that cannot fit (a typo, 1e9) is refused with the figures, where it
// would otherwise kill the process out of memory after step 0's
// checkpoint, leaving a run that --resume cannot finish.

// stepFloor is a lower bound, in bytes, of what one training step of rows
// sequences of tokens each allocates: host bytes per token (the batch's
// arrays) and, where the model computes in host memory, the forward's.
type stepFloor struct {
	rows, tokens int
	virtual      int // of tokens, a prompt-tuning run's virtual tokens (each row's, in front)
	hostPerToken int // the batch's arrays
	actPerToken  int // the forward's activations, float32
}

// bytes is the floor's total, in float64 (it may exceed any int).
func (f stepFloor) bytes(onHost bool) float64 {
	per := f.hostPerToken
	if onHost {
		per += f.actPerToken
	}
	return float64(f.rows) * float64(f.tokens) * float64(per)
}

// textFloor is a text task's floor: B sequences of the longest training
// example's length and a prompt-tuning run's virtual tokens, with hidden
// states and the MLP's gate and up products.
func textFloor(batch, longest, virtual, hidden, intermediate int) stepFloor {
	return stepFloor{rows: batch, tokens: longest + virtual, virtual: virtual, hostPerToken: 3 * 8, actPerToken: 4 * (hidden + 2*intermediate)}
}

// imageFloor is an image task's: B images of side², each 3 float32 a pixel
// on the host, and the encoder's tokens (patches and CLS) with hidden
// states and the MLP's product.
func imageFloor(batch, side, patch, hidden, intermediate int) stepFloor {
	tokens := (side/patch)*(side/patch) + 1
	return stepFloor{rows: batch, tokens: tokens, hostPerToken: 3 * 4 * side * side / tokens, actPerToken: 4 * (hidden + intermediate)}
}

// checkBatchMemory refuses a batch size whose step needs more than the
// machine's memory (total: 0 when unknown, then nothing is checked).
func checkBatchMemory(batch int, f stepFloor, onHost bool, total uint64) error {
	need := f.bytes(onHost)
	if total == 0 || need <= float64(total) {
		return nil
	}
	if f.virtual > 0 {
		return fmt.Errorf("train.batch_size %d, adapter.virtual_tokens %d: one step needs at least %s (%d examples of up to %d tokens each, %d of them virtual), more than this machine's %s of memory; use a smaller batch or fewer virtual tokens",
			batch, f.virtual, size(need), f.rows, f.tokens, f.virtual, size(float64(total)))
	}
	return fmt.Errorf("train.batch_size %d: one step needs at least %s (%d examples of up to %d tokens each), more than this machine's %s of memory; use a smaller batch",
		batch, size(need), f.rows, f.tokens, size(float64(total)))
}

// checkStepMemory refuses the run's batch size (and a prompt-tuning run's
// virtual tokens) when a step's floor f exceeds the machine's memory.
func (r *run) checkStepMemory(f stepFloor) error {
	return checkBatchMemory(r.cfg.Train.BatchSize, f, r.backend.Name() == "cpu", sysmem.Total())
}

// size writes a byte count given as a float64 (a floor may pass any
// int64; capped at 4 EiB), as bytesize does.
func size(b float64) string { return bytesize.String(int64(min(b, 1<<62))) }
