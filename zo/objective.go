package zo

// Group values of Variant.Group that are not a group index.
const (
	AllGroups = -1 // several groups differ from θ0 (joint perturbation of a grouped parameter set)
	Clean     = -2 // nothing differs: the variant is θ0 itself (FZOO's L0)
)

// Variant is one point at which a step evaluates the loss.
//
// For an engine over host slices (New), Params holds one float32 slice per
// parameter group, in the canonical order.
// For a group that is not perturbed, Params[g] IS θ0's own slice (the same
// backing array as the engine's parameters), so an objective can recognise it
// by identity as well as by Group. Perturbed slices are engine buffers that
// are valid only during the Evaluate call; the objective must not keep or
// modify any of them.
type Variant struct {
	// Group is the only group that differs from θ0, or AllGroups, or Clean.
	// With prefix caching a model evaluates a variant of group b from the
	// first decoder layer b's parameters act in (layer b, or the b-th of an
	// adapter's layers) on, starting from its clean pass's hidden state.
	Group int
	// Dir is the direction j (0..q-1) and Sign is +1 (θ0+εz), -1 (θ0-εz) or
	// 0 (Clean). They are informative: the objective needs only Group and Params.
	Dir, Sign int
	Params    [][]float32
	// Perturbation, for an engine over a Store (NewStore), says which noise
	// to add to which groups; Params is nil then. It is nil for Clean.
	Perturbation *Perturbation
}

// Objective evaluates the mini-batch loss at every variant of one step, on the
// same mini-batch, and returns one loss per variant in the order given.
//
// base is θ0, the unperturbed parameters of this step (one slice per group):
// a model that caches prefix activations runs its clean pass with it. All
// variants of a step are handed over at once so that a model can evaluate them
// in one batched forward (frozen weights shared, only the adapter differs);
// it must give the same losses as evaluating them one by one, up to float32
// rounding, and should use the same reduction order for every variant so that
// rounding cancels in L+ - L-.
type Objective interface {
	// Evaluate returns one loss per variant, in variants' order.
	Evaluate(base [][]float32, variants []Variant) ([]float64, error)
}

// Func adapts a plain loss function to Objective by calling it once per
// variant, in order.
type Func func(params [][]float32) float64

// Evaluate implements Objective.
func (f Func) Evaluate(_ [][]float32, variants []Variant) ([]float64, error) {
	losses := make([]float64, len(variants))
	for i, v := range variants {
		losses[i] = f(v.Params)
	}
	return losses, nil
}
