package train

import (
	"math"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/zo"
)

// objective is the bridge between the ZO engine and the model: it evaluates
// every perturbed variant of a step on the current mini-batch in one batched
// forward, starting a variant that perturbs only layer b's adapter at layer
// b (prefix caching).
type objective struct {
	m      *model.Model
	lora   *lora.Adapter // nil for prompt tuning
	batch  model.Input
	labels []int

	layerEvals int  // decoder-layer evaluations of the last step (one unit = one layer over B sequences)
	nonFinite  bool // the last step produced a NaN or infinite loss
}

// variant maps a ZO parameter point to the model's view of it.
func (o *objective) variant(params [][]float32, from int) model.Variant {
	if o.lora != nil {
		return model.Variant{Adapter: o.lora.View(params), From: from}
	}
	return model.Variant{Prompt: params[0], From: from}
}

// Evaluate implements zo.Objective.
func (o *objective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		from := 0
		switch {
		case v.Group == zo.Clean:
			from = o.m.NumLayers // identical to the base: reuse its pass
		case v.Group >= 0 && o.lora != nil:
			from = o.lora.GroupLayer(v.Group)
		}
		mv[i] = o.variant(v.Params, from)
	}
	losses, stats, err := o.m.Losses(o.batch, o.labels, o.variant(base, 0), mv)
	if err != nil {
		return nil, err
	}
	o.layerEvals = stats.LayerEvals
	o.nonFinite = false
	for _, l := range losses {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			o.nonFinite = true
		}
	}
	return losses, nil
}
