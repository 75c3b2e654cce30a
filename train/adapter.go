package train

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/tokenizer"
)

// trainable is what a run needs of its adapter, whatever its kind: the
// parameters the ZO engine trains, the model's view of any point of them
// (the live parameters, a perturbed variant, the best copy), and saving and
// loading them as a PEFT adapter directory. loraAdapter and promptAdapter
// implement it; only newTrainable knows the kinds apart.
type trainable interface {
	// Params returns the live parameters: one slice per group, canonical order.
	Params() [][]float32
	// Variant returns the model's view of params (no copy), joining the
	// forward at decoder layer from.
	Variant(params [][]float32, from int) model.Variant
	// GroupLayer returns the first decoder layer where group g acts (prefix
	// caching when grouped); 0 when a group is not tied to a layer.
	GroupLayer(g int) int
	// Attach makes the model use params in Forward and Generate; Detach
	// takes them away again.
	Attach(params [][]float32)
	Detach()
	// Save writes params as a PEFT adapter directory.
	Save(dir string, params [][]float32) error
	// Load reads a saved adapter directory into dst (shaped like Params).
	Load(dir string, dst [][]float32) error
}

// merger is the optional interface of a trainable whose parameters can be
// merged into the model's weights for evaluation (LoRA: eval.merge).
type merger interface {
	// Merge returns a copy of the model with params merged into its weights;
	// FreeMerged releases what Merge made once the copy is no longer used.
	Merge(params [][]float32) *model.Model
	FreeMerged(merged *model.Model)
}

// newTrainable makes the adapter the config describes on m: fresh, or read
// from adapter.init (whose shape must match the config).
func newTrainable(cfg *Config, m *model.Model, tok *tokenizer.Tokenizer) (trainable, error) {
	name := cfg.ModelName()
	switch cfg.Adapter.Kind {
	case "lora":
		var a *lora.Adapter
		var err error
		if cfg.Adapter.Init != "" {
			a, err = lora.Load(cfg.Adapter.Init, m, cfg.Adapter.Grouped)
		} else {
			a, err = lora.New(m, lora.Options{R: cfg.Adapter.R, Alpha: cfg.Adapter.Alpha, Targets: cfg.Adapter.Targets,
				Seed: cfg.Train.Seed, GroupByLayer: cfg.Adapter.Grouped})
		}
		if err != nil {
			return nil, err
		}
		a.SetBaseModel(name)
		if cfg.Adapter.Init != "" {
			if err := checkInitLoRA(cfg, a); err != nil {
				return nil, err
			}
		}
		return &loraAdapter{a: a, m: m, grouped: cfg.Adapter.Grouped}, nil
	case "prompt":
		var p *prompttune.Prompt
		var err error
		if cfg.Adapter.Init != "" {
			p, err = prompttune.Load(cfg.Adapter.Init, m)
		} else {
			text := cfg.Adapter.InitText
			if text == "" {
				text = data.Prompt(data.Example{Task: data.Task(cfg.Task.Name)})[0].Content // the task's system prompt
			}
			p, err = prompttune.FromText(m, tok, cfg.Adapter.VirtualTokens, text)
		}
		if err != nil {
			return nil, err
		}
		p.BaseModel, p.Tokenizer = name, name
		if cfg.Adapter.Init != "" {
			if err := checkInitPrompt(cfg, p); err != nil {
				return nil, err
			}
		}
		return &promptAdapter{p: p, m: m}, nil
	}
	return nil, fmt.Errorf("adapter.kind %q: want lora or prompt", cfg.Adapter.Kind)
}

// loraAdapter is a LoRA adapter (lora.Adapter) on the run's model.
type loraAdapter struct {
	a       *lora.Adapter
	m       *model.Model
	grouped bool // one parameter group per layer
}

func (l *loraAdapter) Params() [][]float32 { return l.a.Params() }

func (l *loraAdapter) Variant(params [][]float32, from int) model.Variant {
	return model.Variant{Adapter: l.a.View(params), From: from}
}

func (l *loraAdapter) GroupLayer(g int) int { return l.a.GroupLayer(g) }

func (l *loraAdapter) Attach(params [][]float32) { l.m.Adapter = l.a.View(params) }

func (l *loraAdapter) Detach() { l.m.Adapter = nil }

func (l *loraAdapter) Save(dir string, params [][]float32) error { return l.a.SaveParams(dir, params) }

func (l *loraAdapter) Load(dir string, dst [][]float32) error {
	a, err := lora.Load(dir, l.m, l.grouped)
	if err != nil {
		return err
	}
	return copyLoaded(dir, dst, a.Params())
}

func (l *loraAdapter) Merge(params [][]float32) *model.Model {
	return lora.Merge(l.m, l.a.View(params))
}

func (l *loraAdapter) FreeMerged(merged *model.Model) { lora.FreeMerged(merged, l.m) }

// promptAdapter is prompt tuning (prompttune.Prompt): one group, the
// virtual tokens' embeddings, put before every sequence.
type promptAdapter struct {
	p *prompttune.Prompt // nil in an objective made by NewObjective (only Variant is used)
	m *model.Model
}

func (p *promptAdapter) Params() [][]float32 { return p.p.Params() }

func (p *promptAdapter) Variant(params [][]float32, from int) model.Variant {
	return model.Variant{Prompt: params[0], From: from}
}

func (p *promptAdapter) GroupLayer(int) int { return 0 }

func (p *promptAdapter) Attach(params [][]float32) { p.m.Prompt = params[0] }

func (p *promptAdapter) Detach() { p.m.Prompt = nil }

func (p *promptAdapter) Save(dir string, params [][]float32) error {
	return p.p.SaveParams(dir, p.m, params)
}

func (p *promptAdapter) Load(dir string, dst [][]float32) error {
	q, err := prompttune.Load(dir, p.m)
	if err != nil {
		return err
	}
	return copyLoaded(dir, dst, q.Params())
}

// copyLoaded copies a loaded adapter's parameters into dst when the shapes agree.
func copyLoaded(dir string, dst, src [][]float32) error {
	if countParams(src) != countParams(dst) {
		return fmt.Errorf("adapter %s does not match this run's adapter shape", dir)
	}
	copyParams(dst, src)
	return nil
}

// checkInitLoRA refuses an adapter.init whose shape differs from the
// adapter the config describes: the run would train one shape while its
// config.yaml (and every record of the run) says another.
func checkInitLoRA(cfg *Config, l *lora.Adapter) error {
	a := cfg.Adapter
	got, want := slices.Sorted(slices.Values(l.Targets())), slices.Sorted(slices.Values(a.Targets))
	if l.Rank() != a.R || l.Alpha() != a.Alpha || !slices.Equal(got, want) {
		return fmt.Errorf("adapter.init %s is a LoRA of rank %d, alpha %g on %v, but the config says adapter.r %d, adapter.alpha %g, adapter.targets %v: set them to match the adapter",
			a.Init, l.Rank(), l.Alpha(), l.Targets(), a.R, a.Alpha, a.Targets)
	}
	return nil
}

// checkInitPrompt is checkInitLoRA for prompt tuning: the number of virtual tokens.
func checkInitPrompt(cfg *Config, p *prompttune.Prompt) error {
	a := cfg.Adapter
	if p.N != a.VirtualTokens {
		return fmt.Errorf("adapter.init %s has %d virtual tokens, but adapter.virtual_tokens is %d: set it to match the adapter", a.Init, p.N, a.VirtualTokens)
	}
	return nil
}

func countParams(p [][]float32) int {
	n := 0
	for _, g := range p {
		n += len(g)
	}
	return n
}

func cloneParams(p [][]float32) [][]float32 {
	out := make([][]float32, len(p))
	for i, g := range p {
		out[i] = slices.Clone(g)
	}
	return out
}

func copyParams(dst, src [][]float32) {
	for i := range dst {
		copy(dst[i], src[i])
	}
}
