// Package update is the element-wise step of the ZO optimizers: given the
// estimate ĝ_i of one coordinate, move θ_i and the optimizer's state of that
// coordinate. The ZO engine applies it to an adapter's parameters on the
// host; a backend applies it to a model's own weights where they are stored
// (full-parameter ZO): the CPU backend calls this code, the CUDA kernel
// follows it operation for operation. So a coordinate moves the same way on
// every device. The update rules are docs/ALGORITHMS.md's.
//
// Every rule computes in float64 from the float32 (or bfloat16) values it
// reads, and rounds once when it stores. Every product is rounded before
// it is added (explicit conversions: the compiler fuses a multiply and an
// add into one rounding on arm64 and GOAMD64=v3 otherwise), so the bits are
// the same on every CPU and in the CUDA kernel.
package update

import (
	"fmt"
	"math"
)

// Kind is the form of a rule.
type Kind uint8

const (
	// SGD: θ ← θ − η(ĝ + λθ); with momentum μ > 0, b ← μb + (ĝ + λθ) and
	// θ ← θ − ηb (b is state m). ZO-SGD; also MEAZO (η: the step's
	// η/(√v̂+ζ)) and FZOO (ĝ already normalised).
	SGD Kind = iota
	// Adam: m ← β1m + (1−β1)ĝ, v ← β2v + (1−β2)ĝ², θ ← θ − η·m̂/(√v̂ + eps),
	// m̂ = m/C1, v̂ = v/C2. With β1 = 0 no m is kept and m̂ = ĝ/C1 … = ĝ.
	Adam
	// RAdaZO: m ← β1m + (1−β1)ĝ, v ← β2v + (1−β2)m², θ ← θ − η(m/C1)/(√(v/C2) + eps).
	RAdaZO
)

// Rule is one optimizer step for every coordinate of a tensor.
type Rule struct {
	Kind        Kind
	LR          float64
	WeightDecay float64 // SGD's λ
	Momentum    float64 // SGD's μ; 0: no state
	Beta1       float64 // Adam, RAdaZO
	Beta2       float64
	Eps         float64
	C1, C2      float64 // bias corrections 1−β1^t and 1−β2^t (1: none)
}

// States is the number of float32 state values the rule keeps per
// coordinate: m and v in that order (SGD with momentum: m alone; Adam with
// β1 = 0: v alone, passed as v).
func (r Rule) States() int {
	switch r.Kind {
	case SGD:
		if r.Momentum > 0 {
			return 1
		}
		return 0
	case Adam:
		if r.Beta1 == 0 {
			return 1
		}
	}
	return 2
}

// HasM and HasV say which of m and v the rule keeps.
func (r Rule) HasM() bool {
	return (r.Kind == SGD && r.Momentum > 0) || r.Kind == RAdaZO || (r.Kind == Adam && r.Beta1 != 0)
}
func (r Rule) HasV() bool { return r.Kind == Adam || r.Kind == RAdaZO }

// Check reports a rule a backend cannot apply (an unknown kind).
func (r Rule) Check() error {
	if r.Kind > RAdaZO {
		return fmt.Errorf("update: unknown rule kind %d", r.Kind)
	}
	return nil
}

// Target returns the new value of a coordinate x with estimate g, in
// float64 before rounding, and updates its state m and v (pointers into the
// state arrays; nil where the rule keeps none).
//
// Apply and ApplyBF16 are this function over whole ranges; it is the
// definition they follow.
func (r *Rule) Target(x, g float64, m, v *float32) float64 {
	switch r.Kind {
	case SGD:
		step := g + float64(r.WeightDecay*x)
		if m != nil {
			b := float64(r.Momentum*float64(*m)) + step
			*m = float32(b)
			step = b
		}
		return x - float64(r.LR*step)
	case Adam:
		mh := g
		if m != nil {
			mm := float64(r.Beta1*float64(*m)) + float64((1-r.Beta1)*g)
			*m = float32(mm)
			mh = mm / r.C1
		}
		vv := float64(r.Beta2*float64(*v)) + float64(float64((1-r.Beta2)*g)*g)
		*v = float32(vv)
		return x - float64(r.LR*mh)/(math.Sqrt(vv/r.C2)+r.Eps)
	}
	mm := float64(r.Beta1*float64(*m)) + float64((1-r.Beta1)*g)
	vv := float64(r.Beta2*float64(*v)) + float64(float64((1-r.Beta2)*mm)*mm)
	*m, *v = float32(mm), float32(vv)
	return x - float64(r.LR*(mm/r.C1))/(math.Sqrt(vv/r.C2)+r.Eps)
}

// Apply moves theta given ghat (same length), with the state m and v
// (same length, or nil where the rule keeps none), each new value rounded
// to float32, and returns Σ (θ_new − θ_old)², the change of each coordinate
// as stored, in float64, in index order.
func (r *Rule) Apply(theta []float32, ghat []float64, m, v []float32) float64 {
	var ss float64
	if r.Kind == SGD && m == nil {
		// The common case (MEAZO, ZO-SGD, FZOO): no state.
		lr, wd := r.LR, r.WeightDecay
		for i, g := range ghat[:len(theta)] {
			x := float64(theta[i])
			nx := float32(x - float64(lr*(g+float64(wd*x))))
			dx := float64(nx) - x
			ss += float64(dx * dx)
			theta[i] = nx
		}
		return ss
	}
	for i := range theta {
		x := float64(theta[i])
		nx := float32(r.Target(x, ghat[i], at(m, i), at(v, i)))
		dx := float64(nx) - x
		ss += float64(dx * dx)
		theta[i] = nx
	}
	return ss
}

// at is &s[i], or nil for a nil s.
func at(s []float32, i int) *float32 {
	if s == nil {
		return nil
	}
	return &s[i]
}

// ApplyBF16 is Apply on coordinates stored as bfloat16 (their bits): each
// new value is rounded to float32, then to bfloat16 stochastically
// (StochasticBF16) with the 16 low bits of the coordinate's random word in
// rnd (same length), so an update smaller than a bfloat16 step still moves
// θ in expectation, and the same words give the same bits.
func (r *Rule) ApplyBF16(theta []uint16, ghat []float64, m, v []float32, rnd []uint32) float64 {
	var ss float64
	for i := range theta {
		x := float64(BF16ToFloat32(theta[i]))
		nx := StochasticBF16(float32(r.Target(x, ghat[i], at(m, i), at(v, i))), rnd[i])
		dx := float64(BF16ToFloat32(nx)) - x
		ss += float64(dx * dx)
		theta[i] = nx
	}
	return ss
}

// BF16ToFloat32 widens bfloat16 bits exactly.
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// StochasticBF16 rounds x to bfloat16 with the random word r: the 16 bits
// below bfloat16's mantissa are added to r's low 16 bits and dropped. With
// r uniformly random, an x between the bfloat16 numbers a and b, |a| < |b|,
// becomes b with probability |x − a| / |b − a| and a otherwise: unbiased.
// NaN stays NaN (its payload's top bit is kept).
func StochasticBF16(x float32, r uint32) uint16 {
	b := math.Float32bits(x)
	if b&0x7F800000 == 0x7F800000 && b&0x007FFFFF != 0 {
		return uint16(b>>16) | 0x0040 // a quiet NaN
	}
	return uint16((b + r&0xFFFF) >> 16)
}
