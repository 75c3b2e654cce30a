package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/tokenizer"
)

// trainable is what a run needs of its adapter, whatever its kind: the
// parameters the ZO engine trains, the model's view of any point of them
// (the live parameters, a perturbed variant, the best copy), and saving and
// loading them as a PEFT adapter directory. loraAdapter and promptAdapter
// implement it; only freshAdapter and openAdapter know the kinds apart.
// (The run itself reaches what it trains, an adapter or not, through
// paramState; adapterState wraps a trainable.)
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

	// matchConfig refuses an adapter.init that is not the adapter the
	// config describes (another kind or shape): the run would train one
	// adapter while its config.yaml, and every record of the run, says
	// another.
	matchConfig(a *AdapterConfig) error
	// setBaseModel names the base model in the saved adapter_config.json.
	setBaseModel(name string)
}

// merger is the optional interface of a trainable whose parameters can be
// merged into the model's weights for evaluation (LoRA: eval.merge).
type merger interface {
	// Merge returns a copy of the model with params merged into its weights;
	// FreeMerged releases what Merge made once the copy is no longer used.
	Merge(params [][]float32) *model.Model
	FreeMerged(merged *model.Model)
}

// newTrainable makes the adapter the config describes on m: read from
// init (adapter.init, or on resume the checkpoint: initDir; its kind and
// shape must match the config), or fresh.
func newTrainable(cfg *Config, init string, m *model.Model, tok *tokenizer.Tokenizer) (trainable, error) {
	var t trainable
	var err error
	if init != "" {
		if t, err = openAdapter(init, m, cfg.Adapter.Grouped); err != nil {
			return nil, err
		}
		if err := t.matchConfig(&cfg.Adapter); err != nil {
			return nil, err
		}
	} else if t, err = freshAdapter(cfg, m, tok); err != nil {
		return nil, err
	}
	t.setBaseModel(cfg.ModelName())
	return t, nil
}

// freshAdapter makes a new adapter of the config's kind and shape: LoRA
// drawn from train.seed, prompt tuning from the embeddings of a text
// (adapter.init_text, or the task's system prompt: task.instruction on the
// user's own data).
func freshAdapter(cfg *Config, m *model.Model, tok *tokenizer.Tokenizer) (trainable, error) {
	switch cfg.Adapter.Kind {
	case "lora":
		a, err := lora.New(m, lora.Options{R: cfg.Adapter.R, Alpha: cfg.Adapter.Alpha, Targets: cfg.Adapter.Targets, RSLoRA: cfg.Adapter.RSLoRA, Layers: cfg.Adapter.layers(),
			Seed: cfg.Train.Seed, GroupByLayer: cfg.Adapter.Grouped})
		if err != nil {
			return nil, loraKeyError(err)
		}
		return &loraAdapter{a: a, m: m, grouped: cfg.Adapter.Grouped}, nil
	case "prompt":
		text := cfg.Adapter.InitText
		if text == "" {
			// The task's system prompt: a paper task's, or task.instruction
			// (Validate refuses prompt tuning of a task without either).
			text = data.Prompt(data.Example{Task: data.Task(cfg.Task.Name), Own: cfg.own()})[0].Content
		}
		p, err := prompttune.FromText(m, tok, cfg.Adapter.VirtualTokens, text)
		if err != nil {
			return nil, err
		}
		return &promptAdapter{p: p, m: m}, nil
	}
	return nil, fmt.Errorf("adapter.kind %q: want lora or prompt", cfg.Adapter.Kind)
}

// openAdapter reads a saved adapter directory (PEFT format, as a run's
// best/, last/ and checkpoint/) for m, whatever its kind: the peft_type of
// its adapter_config.json says LoRA or prompt tuning. It is the one reader
// of adapters of unknown kind: adapter.init and Evaluate's Adapter
// (meazo-eval task --adapter) go through it. grouped gives a LoRA one
// parameter group per decoder layer.
func openAdapter(dir string, m *model.Model, grouped bool) (trainable, error) {
	a, err := readAdapter(dir, m, grouped)
	if err != nil {
		return nil, err
	}
	// A NaN or an infinity would not fail: every score would be made of it.
	for g, p := range a.Params() {
		for _, v := range p {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("adapter %s: parameter group %d holds %v: not an adapter to evaluate or train from (a diverged run's?)", dir, g, v)
			}
		}
	}
	return a, nil
}

// readAdapter is openAdapter without the check of the values.
func readAdapter(dir string, m *model.Model, grouped bool) (trainable, error) {
	kind, err := peftType(dir)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "LORA":
		a, err := lora.Load(dir, m, grouped)
		if err != nil {
			return nil, err
		}
		return &loraAdapter{a: a, m: m, grouped: grouped}, nil
	case "PROMPT_TUNING":
		p, err := prompttune.Load(dir, m)
		if err != nil {
			return nil, err
		}
		return &promptAdapter{p: p, m: m}, nil
	}
	return nil, fmt.Errorf("adapter %s: adapter_config.json has peft_type %s; supported: LORA, PROMPT_TUNING", dir, clipValue(kind))
}

// peftType is the peft_type of the adapter saved in dir, as its
// adapter_config.json says; a directory without one is an error that says
// what it is instead (notAnAdapter).
func peftType(dir string) (string, error) {
	b, err := inputfile.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("adapter %s: %s", dir, notAnAdapter(dir))
	}
	if err != nil {
		return "", fmt.Errorf("adapter %s: %w", dir, err)
	}
	var head struct {
		PeftType string `json:"peft_type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", fmt.Errorf("adapter %s: adapter_config.json: %w", dir, err)
	}
	return head.PeftType, nil
}

// notAnAdapter says what is wrong with an adapter directory that has no
// adapter_config.json, naming what it is instead for the two that are taken
// for an adapter most often: a full-parameter run's best/ or last/ (a whole
// model) and a run directory.
func notAnAdapter(dir string) string {
	const want = "want a saved adapter directory (a LoRA or prompt-tuning run's best/ or last/)"
	has := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return "no such directory; " + want
	case !st.IsDir():
		return "not a directory; " + want
	case has("config.json"):
		return "a model directory (config.json, no adapter_config.json), as a full-parameter run's best/ and last/ are: " +
			"load it as the model (--model, model.path), not as an adapter"
	case isRunDir(dir):
		return "a run directory, not an adapter: " + runWeights(dir, "a LoRA or prompt-tuning run's adapters")
	}
	return "no adapter_config.json there; " + want
}

// AttachAdapter opens the adapter saved in dir (LoRA or prompt tuning, as
// its adapter_config.json says) and attaches it to m for every later
// forward and generation, as the commands that look inside a trained model
// (meazo-inspect forward and generate) need. It goes through the same
// reader as training and evaluation.
func AttachAdapter(dir string, m *model.Model) error {
	a, err := openAdapter(dir, m, false)
	if err != nil {
		return err
	}
	a.Attach(a.Params())
	return nil
}

// AttachViTAdapter loads the saved ViT LoRA adapter in dir (PEFT's format:
// LoRA on the encoder's linear layers, the classifier in modules_to_save) onto m, as
// AttachAdapter does for a decoder.
func AttachViTAdapter(dir string, m *model.ViT) error {
	a, err := lora.LoadViT(dir, m, false)
	if err != nil {
		return err
	}
	a.Attach(m)
	return nil
}

// withAdapter runs fn on m with params of a attached, or, when merge is
// asked and a can merge (LoRA), on a copy of m with params merged into its
// weights (faster generation); then it takes them away again. nil params
// run fn on m as it is (the base model). The run's test evaluation and
// Evaluate (meazo-eval) go through it.
func withAdapter(m *model.Model, a trainable, params [][]float32, merge bool, fn func(*model.Model) error) error {
	if params == nil {
		return fn(m)
	}
	a.Attach(params)
	defer a.Detach()
	if mg, ok := a.(merger); ok && merge {
		merged := mg.Merge(params)
		defer mg.FreeMerged(merged)
		return fn(merged)
	}
	return fn(m)
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

func (l *loraAdapter) setBaseModel(name string) { l.a.SetBaseModel(name) }

func (l *loraAdapter) matchConfig(a *AdapterConfig) error {
	c := *a // adapter.targets as the model's names (all-linear: each of them)
	var err error
	if c.Targets, err = lora.TargetNames(&l.m.Config, a.Targets); err != nil {
		return loraKeyError(err)
	}
	if err := matchLoRA(&c, l.a); err != nil {
		return err
	}
	want, err := lora.LayersOf(l.m.NumLayers, a.layers()) // (refused past the model's layers: the message below quotes no more)
	if err != nil {
		return loraKeyError(err)
	}
	if got := l.a.Layers(); !slices.Equal(got, want) {
		return fmt.Errorf("adapter.init %s adapts layers %v (layers_to_transform), but adapter.layers is %v: set it to match the adapter", a.Init, got, a.Layers)
	}
	return nil
}

// loraKeyError names, in lora's refusal of one of its options, the config
// key that set it ("adapter.targets: target module \"fc1\" is not …").
func loraKeyError(err error) error {
	var oe *lora.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	key := map[string]string{"R": "adapter.r", "Targets": "adapter.targets", "Layers": "adapter.layers"}[oe.Option]
	return fmt.Errorf("%s: %w", key, oe.Err)
}

// loraShape is what adapter.init's LoRA must share with the config.
type loraShape interface {
	Rank() int
	Alpha() float64
	RSLoRA() bool
	Targets() []string
}

// matchLoRA refuses an adapter.init LoRA adapter l whose rank, alpha or
// targets are not the config's a.
func matchLoRA(a *AdapterConfig, l loraShape) error {
	if a.Kind != "lora" {
		return fmt.Errorf("adapter.init %s is a LoRA adapter, but adapter.kind is %q: set adapter.kind to lora", a.Init, a.Kind)
	}
	got, want := slices.Sorted(slices.Values(l.Targets())), slices.Sorted(slices.Values(a.Targets))
	if l.Rank() != a.R || l.Alpha() != a.Alpha || l.RSLoRA() != a.RSLoRA || !slices.Equal(got, want) {
		return fmt.Errorf("adapter.init %s is a LoRA of rank %d, alpha %g%s on %v, but the config says adapter.r %d, adapter.alpha %g, adapter.rslora %v, adapter.targets %v: set them to match the adapter",
			a.Init, l.Rank(), l.Alpha(), map[bool]string{true: " (use_rslora)"}[l.RSLoRA()], l.Targets(), a.R, a.Alpha, a.RSLoRA, a.Targets)
	}
	return nil
}

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

func (p *promptAdapter) setBaseModel(name string) { p.p.BaseModel, p.p.Tokenizer = name, name }

func (p *promptAdapter) matchConfig(a *AdapterConfig) error {
	if a.Kind != "prompt" {
		return fmt.Errorf("adapter.init %s is a prompt-tuning adapter, but adapter.kind is %q: set adapter.kind to prompt", a.Init, a.Kind)
	}
	if p.p.N != a.VirtualTokens {
		return fmt.Errorf("adapter.init %s has %d virtual tokens, but adapter.virtual_tokens is %d: set it to match the adapter", a.Init, p.p.N, a.VirtualTokens)
	}
	return nil
}

// copyLoaded copies a loaded adapter's parameters into dst when the shapes agree.
func copyLoaded(dir string, dst, src [][]float32) error {
	if countParams(src) != countParams(dst) {
		return fmt.Errorf("adapter %s has %d parameters, but this run's adapter has %d: check adapter.r, adapter.targets or adapter.virtual_tokens", dir, countParams(src), countParams(dst))
	}
	copyParams(dst, src)
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
