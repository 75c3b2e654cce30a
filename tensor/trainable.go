package tensor

import (
	"fmt"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/update"
)

// Trainer is implemented by backends that can train a model's own weights
// where they are stored (full-parameter ZO): read a weight perturbed by
// seeded noise without writing it, and update it in place from the noise.
// Nothing the size of a weight is copied or stored: the noise is drawn
// again, on the device, wherever it is needed (package noise's contract, so
// every backend draws the same values).
type Trainer interface {
	// MatMulPerturbed computes y = x·Wᵀ as MatMul does (add: y += x·Wᵀ, as
	// MatMulAdd), where each segment of consecutive rows of x reads W as its
	// Perturbation makes it (nil: W as it is). The segments' rows add up to
	// the rows of x. A perturbed W has the bits noise.Perturbed gives, so a row's
	// result is the one MatMul gives with those values packed.
	MatMulPerturbed(y, x Buf, w Weight, segs []Segment, add bool)
	// RowsPerturbed is Rows with every row of w read as p makes it (nil:
	// as it is).
	RowsPerturbed(dst Buf, w Weight, ids []int, p *Perturbation)
	// Perturb writes src (a vector parameter: a norm's weight) as p makes
	// it into dst.
	Perturb(dst, src Buf, p *Perturbation)
	// UpdateWeight moves every element of w in place by u, with the
	// optimizer state m and v (matrices made by NewState for w, or nil
	// where u.Rule keeps none). Its Σ (w_new − w_old)² over the elements as
	// stored, in float64 (summed in an order the backend fixes, so
	// bit-identical run to run), goes into what UpdateSquares returns next.
	UpdateWeight(w, m, v Weight, u *Update)
	// UpdateVector is UpdateWeight for a vector parameter; bf16 says that
	// its values are bfloat16 numbers (a bf16 checkpoint's) to be kept so.
	UpdateVector(b, m, v Buf, bf16 bool, u *Update)
	// UpdateSquares returns the Σ Δθ² of every UpdateWeight and
	// UpdateVector since its last call, added from 0 in call order, and
	// starts again from 0. The sums are read together, not one per tensor,
	// because on a GPU each read waits for the device: a group's tensors
	// are updated with one wait, not one each. The updates and this read
	// are one caller's sequence (the ZO engine's), never concurrent.
	UpdateSquares() float64
	// NewState returns a zeroed float32 matrix in w's layout, for the
	// optimizer state of w's elements.
	NewState(w Weight) Weight
}

// Noise names the noise of one parameter tensor: element i of the tensor
// (row-major, a matrix in HF's [out][in] layout) takes element Offset+i of
// Stream under Dist, divided by Norm for sphere noise (1 otherwise).
type Noise struct {
	Stream noise.Stream
	Dist   noise.Dist
	Norm   float64
	Offset int64
}

// Perturbation is a tensor read as θ + Scale·z, z its Noise: element by
// element noise.Perturbed(θ, Scale, z).
type Perturbation struct {
	Noise
	Scale float64 // +ε or −ε
}

// Segment is a run of Rows consecutive rows of an input that read a weight
// as P makes it (nil: as it is).
type Segment struct {
	Rows int
	P    *Perturbation
}

// Update is one in-place ZO update of a tensor: for every element i,
// ĝ_i = Σ_j Weights[j]·z_j,i (in float64, j in order), z_j,i element
// Offset+i of Streams[j] under Dist (divided by Norms[j]: 1 but for sphere
// noise); then Rule moves the element and its optimizer state
// (update.Rule.Apply). A bfloat16 element is rounded by
// update.Rule.ApplyBF16 with word Offset+i of Rounding (noise.Stream.FillBits).
type Update struct {
	Streams  []noise.Stream
	Dist     noise.Dist
	Norms    []float64
	Offset   int64
	Weights  []float64
	Rule     update.Rule
	Rounding noise.Stream
}

// Check refuses an update a backend cannot run.
func (u *Update) Check() error {
	if len(u.Streams) == 0 || len(u.Streams) != len(u.Weights) || len(u.Norms) != len(u.Weights) {
		return fmt.Errorf("tensor: update with %d streams, %d norms and %d weights", len(u.Streams), len(u.Norms), len(u.Weights))
	}
	if u.Offset < 0 {
		return fmt.Errorf("tensor: update at offset %d", u.Offset)
	}
	return u.Rule.Check()
}
