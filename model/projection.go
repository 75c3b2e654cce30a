package model

import (
	"fmt"

	"github.com/meazo-go/meazo/tensor"
)

// A decoder layer's linear maps, named as HF names them, for what must
// find them by name: a LoRA adapter (PEFT's target_modules and saved keys)
// and a merge of one into the weights.

// Proj is one of a decoder layer's projections: a place where a LoRA
// adapter may add its low-rank term (LayerAdapter.Slot).
type Proj int

// The projections, in the order a layer's forward applies them (the
// canonical order of an adapter's parameters, docs/ALGORITHMS.md).
const (
	ProjQ    Proj = iota // q_proj
	ProjK                // k_proj
	ProjV                // v_proj
	ProjO                // o_proj (OPT: out_proj)
	ProjGate             // gate_proj (OPT has none)
	ProjUp               // up_proj (OPT: fc1)
	ProjDown             // down_proj (OPT: fc2)
	NumProj
)

// String is p's name in Llama's layers ("q_proj", …, "down_proj").
func (p Proj) String() string {
	if p < 0 || p >= NumProj {
		return fmt.Sprintf("Proj(%d)", int(p))
	}
	return [...]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}[p]
}

// Projection is one of a layer's projections as the checkpoint names it.
type Projection struct {
	Proj   Proj
	Name   string // the module's own name, PEFT's target name: "q_proj", "fc1"
	Module string // its path within a layer: "self_attn.q_proj", "mlp.gate_proj", "fc1"
	In     int    // the width of its input
	Out    int    // the width of its output
}

// Projections lists the projections of a decoder layer of this model, in
// Proj order: Llama's seven (q, k, v, o; gate, up, down), OPT's six.
func (c *Config) Projections() []Projection {
	var ps []Projection
	for p := range NumProj {
		if pr, ok := c.projection(p); ok {
			ps = append(ps, pr)
		}
	}
	return ps
}

// projection is projection p of this model's layers; false where its
// layers have none (OPT's gate).
func (c *Config) projection(p Proj) (Projection, bool) {
	d, qd, kvd, f := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	width := [...][2]int{ProjQ: {d, qd}, ProjK: {d, kvd}, ProjV: {d, kvd}, ProjO: {qd, d}, ProjGate: {d, f}, ProjUp: {d, f}, ProjDown: {f, d}}[p]
	pr := Projection{Proj: p, Name: p.String(), Module: "self_attn." + p.String(), In: width[0], Out: width[1]}
	if p >= ProjGate {
		pr.Module = "mlp." + p.String()
	}
	if c.IsOPT() {
		switch p {
		case ProjGate:
			return Projection{}, false
		case ProjO:
			pr.Name, pr.Module = "out_proj", "self_attn.out_proj"
		case ProjUp:
			pr.Name, pr.Module = "fc1", "fc1"
		case ProjDown:
			pr.Name, pr.Module = "fc2", "fc2"
		}
	}
	return pr, true
}

// Slot is where la holds projection p's update (nil: none).
func (la *LayerAdapter) Slot(p Proj) **LoRA {
	return [...]**LoRA{ProjQ: &la.Q, ProjK: &la.K, ProjV: &la.V, ProjO: &la.O, ProjGate: &la.Gate, ProjUp: &la.Up, ProjDown: &la.Down}[p]
}

// Weight is where layer l holds projection p's matrix (nil where the
// backend holds it stacked: Attention.QKV, MLP.GateUp).
func (m *Model) Weight(l int, p Proj) *tensor.Weight {
	a, mlp := &m.Layers[l].Attn, &m.Layers[l].MLP
	return [...]*tensor.Weight{ProjQ: &a.Q, ProjK: &a.K, ProjV: &a.V, ProjO: &a.O, ProjGate: &mlp.Gate, ProjUp: &mlp.Up, ProjDown: &mlp.Down}[p]
}

// checkAdapter refuses an adapter that does not fit the model (made for
// another model, or by hand): one LayerAdapter per layer, and each update's
// matrices of its projection's widths, which the forward would otherwise
// read past.
func (m *Model) checkAdapter(a *Adapter) error {
	if a == nil {
		return nil
	}
	if len(a.Layers) != m.NumLayers {
		return fmt.Errorf("the adapter has %d layers, the model %d", len(a.Layers), m.NumLayers)
	}
	for l := range a.Layers {
		for p := range NumProj {
			lo := *a.Layers[l].Slot(p)
			if lo == nil {
				continue
			}
			pr, ok := m.projection(p)
			switch {
			case !ok:
				return fmt.Errorf("layer %d's adapter updates %v, which %s's layers do not have", l, p, m.Architecture)
			case lo.R <= 0 || len(lo.A) != lo.R*pr.In || len(lo.B) != pr.Out*lo.R:
				return fmt.Errorf("layer %d's LoRA of %s has %d and %d values at rank %d: want A [r][%d] and B [%d][r]", l, pr.Name, len(lo.A), len(lo.B), lo.R, pr.In, pr.Out)
			}
		}
	}
	return nil
}
