package train

import (
	"fmt"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/zo"
)

// objective is the bridge between the ZO engine and the model: it evaluates
// every perturbed variant of a step on the current mini-batch in one batched
// forward, starting a variant that perturbs only layer b's adapter at layer
// b (prefix caching).
//
// An image task's objective evaluates its variants on the ViT instead
// (images; vision.losses), one forward each.
type objective struct {
	m      *model.Model
	view   viewer  // the trained parameters: an adapter's, or the model's own weights
	images *vision // an image task's model and mini-batch (m and view are nil)
	layers int     // the ViT's encoder layers, for layerEvals
	batch  model.Input
	labels []int
	// noPrefixCache runs every variant from the first layer (for measuring
	// what prefix caching saves; results are identical).
	noPrefixCache bool

	layerEvals int // decoder-layer evaluations of the last step (one unit = one layer over B sequences)
}

// Objective is the exported form of the trainer's ZO objective, for
// benchmarks and tools: LoRA (a != nil) or prompt tuning.
type Objective struct{ o *objective }

// NewObjective returns the objective for a LoRA adapter on m; with a nil
// adapter the parameters are prompt-tuning embeddings.
func NewObjective(m *model.Model, a *lora.Adapter, prefixCache bool) *Objective {
	var t trainable = &promptAdapter{m: m}
	if a != nil {
		t = &loraAdapter{a: a, m: m}
	}
	return &Objective{&objective{m: m, view: adapterView{t}, noPrefixCache: !prefixCache}}
}

// NewViTObjective returns an image task's objective for a LoRA adapter on
// a ViT: the mean cross-entropy of the mini-batch SetImages sets, one
// forward per variant, as a training run evaluates it.
func NewViTObjective(m *model.ViT, a *lora.ViTAdapter) *Objective {
	return &Objective{&objective{images: &vision{vit: m, adapter: a}, layers: m.Config.NumLayers}}
}

// SetImages sets the mini-batch the next step of a NewViTObjective
// evaluates: n images' pixel_values ([n][channels][side][side]) and their
// classes. On a decoder's objective it is an error.
func (x *Objective) SetImages(pixels []float32, labels []int) error {
	if x.o.images == nil {
		return fmt.Errorf("train: SetImages on a decoder's objective (SetBatch sets its tokens)")
	}
	x.o.images.pixels, x.o.images.labels = pixels, labels
	return nil
}

// SetBatch sets the mini-batch the next step evaluates.
func (x *Objective) SetBatch(in model.Input, labels []int) { x.o.batch, x.o.labels = in, labels }

// LayerEvals returns the decoder-layer evaluations of the last step.
func (x *Objective) LayerEvals() int { return x.o.layerEvals }

// Evaluate implements zo.Objective.
func (x *Objective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	return x.o.Evaluate(base, vs)
}

// Evaluate implements zo.Objective.
func (o *objective) Evaluate(base [][]float32, vs []zo.Variant) ([]float64, error) {
	if o.images != nil {
		losses, err := o.images.losses(base, vs)
		o.layerEvals = o.layers * len(vs)
		return losses, err
	}
	mv := make([]model.Variant, len(vs))
	for i, v := range vs {
		from := 0
		switch {
		case v.Group == zo.Clean:
			from = o.m.NumLayers // identical to the base: reuse its pass
		case v.Group >= 0:
			from = o.view.groupLayer(v.Group)
		}
		if o.noPrefixCache && v.Group != zo.Clean {
			from = 0
		}
		mv[i] = o.view.variant(v, from)
	}
	losses, stats, err := o.m.Losses(o.batch, o.labels, o.view.baseOf(base), mv)
	if err != nil {
		return nil, err
	}
	o.layerEvals = stats.LayerEvals
	return losses, nil
}
