package model

import "github.com/meazo-go/meazo/tensor"

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
	pr := [...]Projection{
		ProjQ: {ProjQ, "q_proj", "self_attn.q_proj", d, qd}, ProjK: {ProjK, "k_proj", "self_attn.k_proj", d, kvd},
		ProjV: {ProjV, "v_proj", "self_attn.v_proj", d, kvd}, ProjO: {ProjO, "o_proj", "self_attn.o_proj", qd, d},
		ProjGate: {ProjGate, "gate_proj", "mlp.gate_proj", d, f}, ProjUp: {ProjUp, "up_proj", "mlp.up_proj", d, f},
		ProjDown: {ProjDown, "down_proj", "mlp.down_proj", f, d},
	}[p]
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
