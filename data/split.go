package data

import "fmt"

// Rand is SplitMix64 (Steele, Lea & Flood 2014): a tiny generator whose
// output is fixed by its definition, so splits and sampling orders never
// change with the Go version or GOMAXPROCS.
type Rand struct{ state uint64 }

// NewRand seeds a generator.
func NewRand(seed uint64) *Rand { return &Rand{state: seed} }

// Uint64 returns the next value.
func (r *Rand) Uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IntN returns a uniform integer in [0, n) by rejection (no modulo bias).
func (r *Rand) IntN(n int) int {
	bound := uint64(n)
	limit := -bound % bound // 2^64 mod n
	for {
		if v := r.Uint64(); v >= limit {
			return int(v % bound)
		}
	}
}

// Permutation returns a Fisher–Yates shuffle of 0..n-1 drawn from seed.
func Permutation(n int, seed uint64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r := NewRand(seed)
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// SplitSpec is the paper's protocol for one task (docs/ALGORITHMS.md's data protocol, Appendix B.4).
type SplitSpec struct {
	// ValidationFraction of the original train set held out as validation
	// (SST-2, SQuAD: 0.05); 0 when the dataset has its own validation set (XSum).
	ValidationFraction float64
	// MaxTrain and MaxValidation keep the first examples of each split
	// (0: all). SQuAD and XSum: 50,000 and 1,000.
	MaxTrain, MaxValidation int
}

// PaperSplits are the paper's settings.
var PaperSplits = map[Task]SplitSpec{
	SST2:  {ValidationFraction: 0.05},
	SQuAD: {ValidationFraction: 0.05, MaxTrain: 50000, MaxValidation: 1000},
	XSum:  {MaxTrain: 50000, MaxValidation: 1000},
}

// OwnSplit is the split of the tasks on the user's own data
// (classification, generation) without a validation file: SST-2's, 5% of
// the train file held out, no cap.
var OwnSplit = SplitSpec{ValidationFraction: 0.05}

// TrainValidation splits the original train set (of n examples) into the
// paper's train and validation index lists. The draw: a permutation of
// 0..n-1 from Permutation(n, dataSeed); its first n - ceil(n·fraction)
// indices are train, the rest validation; each list is then cut to its
// maximum. The same data seed (default 0) is used for every optimizer and run
// seed, so that runs see the same examples. SST-2: 63,981 / 3,368; SQuAD:
// 83,219 / 4,380 before the cut to 50,000 / 1,000.
func TrainValidation(n int, spec SplitSpec, dataSeed uint64) (train, validation []int, err error) {
	if spec.ValidationFraction < 0 || spec.ValidationFraction >= 1 {
		return nil, nil, fmt.Errorf("validation fraction %v is not in [0, 1)", spec.ValidationFraction)
	}
	perm := Permutation(n, dataSeed)
	nVal := int(ceilFrac(n, spec.ValidationFraction))
	train, validation = perm[:n-nVal], perm[n-nVal:]
	if spec.MaxTrain > 0 && len(train) > spec.MaxTrain {
		train = train[:spec.MaxTrain]
	}
	if spec.MaxValidation > 0 && len(validation) > spec.MaxValidation {
		validation = validation[:spec.MaxValidation]
	}
	return train, validation, nil
}

// ceilFrac is ceil(n·f), computed so that 0.05·100 is exactly 5.
func ceilFrac(n int, f float64) int {
	v := float64(n) * f
	c := int(v)
	if float64(c) < v-1e-9 {
		c++
	}
	return c
}

// Select returns the examples at idx, in idx order.
func Select(exs []Example, idx []int) []Example {
	out := make([]Example, len(idx))
	for i, j := range idx {
		out[i] = exs[j]
	}
	return out
}
