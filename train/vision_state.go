package train

import (
	"slices"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/zo"
)

// visionState is a ViT's LoRA adapter (and classifier) trained on the host:
// adapterCopies over the adapter's files (vitFiles).
type visionState struct {
	adapterCopies
	v     *vision
	merge bool // evaluate with LoRA merged into a copy of the weights (eval.merge)
}

func newVisionState(v *vision, grouped, merge bool) *visionState {
	return &visionState{adapterCopies: newAdapterCopies(&vitFiles{v: v, grouped: grouped}), v: v, merge: merge}
}

// newEngine is adapterCopies' with the classifier's bias exempt from
// weight decay (optimizer.weight_decay), as MeZO's update exempts every
// bias.
func (s *visionState) newEngine(opt zo.Optimizer, cfg zo.Config) (*zo.Engine, error) {
	g, lo, hi := s.v.adapter.BiasSpan()
	cfg.NoDecay = append(slices.Clone(cfg.NoDecay), zo.Span{Group: g, Lo: lo, Hi: hi})
	return s.adapterCopies.newEngine(opt, cfg)
}

// tests are the test evaluations of the best and the last adapter (and,
// with base, of the model as loaded: its classifier untrained, so about
// chance on a fresh one). An image task scores the ViT with the parameters
// attached (vision.testMetrics), or with eval.merge a copy of the ViT with
// them merged into its weights (lora.MergeViT, as PEFT's
// merge_and_unload), put in the ViT's place for the evaluation: the
// *model.Model handed to fn is nil.
func (s *visionState) tests(base bool) []testEval {
	with := func(params [][]float32) func(fn func(*model.Model) error) error {
		return func(fn func(*model.Model) error) error {
			switch {
			case params != nil && s.merge:
				vit := s.v.vit
				merged := lora.MergeViT(vit, s.v.adapter.View(params))
				s.v.vit = merged
				defer func() { s.v.vit = vit; lora.FreeMergedViT(merged, vit) }()
			case params != nil:
				s.files.Attach(params)
				defer s.files.Detach()
			}
			return fn(nil)
		}
	}
	evals := []testEval{{"best", with(s.bestCopy)}, {"last", with(s.params)}}
	if base {
		evals = append(evals, testEval{"base", with(nil)})
	}
	return evals
}

// vitFiles are a ViT adapter's parameters as adapterCopies needs them:
// attached to the ViT, saved and loaded as a PEFT adapter directory
// (lora.ViTAdapter: LoRA on the encoder's linear layers, the classifier in
// modules_to_save).
type vitFiles struct {
	v       *vision
	grouped bool
}

func (f *vitFiles) Params() [][]float32 { return f.v.adapter.Params() }

func (f *vitFiles) Attach(params [][]float32) { f.v.vit.Adapter = f.v.adapter.View(params) }

func (f *vitFiles) Detach() { f.v.vit.Adapter = nil }

func (f *vitFiles) Save(dir string, params [][]float32) error {
	return f.v.adapter.SaveParams(dir, params)
}

func (f *vitFiles) Load(dir string, dst [][]float32) error {
	a, err := lora.LoadViT(dir, f.v.vit, f.grouped)
	if err != nil {
		return err
	}
	return copyLoaded(dir, dst, a.Params())
}
