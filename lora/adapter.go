package lora

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// Options configures a trainable LoRA adapter. The defaults are the paper's:
// r = 16, alpha = 16 on q_proj and v_proj.
type Options struct {
	R       int      // rank (default 16)
	Alpha   float64  // lora_alpha (default 16); the update is scaled by Alpha/R
	Targets []string // projections to adapt (default q_proj, v_proj)
	Seed    uint64   // seeds the A initialisation
	// GroupByLayer makes each decoder layer its own parameter group (for
	// grouped ZO estimation); otherwise all parameters form group 0.
	GroupByLayer bool
	// RSLoRA scales by alpha/√r instead of alpha/r (PEFT's use_rslora).
	RSLoRA bool
}

func (o *Options) defaults() {
	if o.R == 0 {
		o.R = 16
	}
	if o.Alpha == 0 {
		o.Alpha = 16
	}
	if len(o.Targets) == 0 {
		o.Targets = []string{"q_proj", "v_proj"}
	}
}

// Adapter is a trainable LoRA adapter whose parameters live in flat float32
// vectors, one per group, in the canonical order of docs/ALGORITHMS.md (the noise contract):
// layers in increasing order; in a layer q_proj then v_proj (architecture
// order); for each, lora_A [r][in] then lora_B [out][r], row-major.
type Adapter struct {
	opts       Options
	targets    []string // Targets in architecture order
	layers     int
	names      string // the model's name of its decoder layers (model.Config.LayersName)
	in         int
	out        map[string]int // output width of each target
	params     [][]float32    // the groups
	base       string         // base_model_name_or_path written to adapter_config.json
	multimodal bool           // Ministral-3's checkpoint: PEFT's vision-tower matrices are skipped (visionTowerPrefix)
}

// New makes an adapter for m with PEFT's initialisation: A ~ U(-1/√in, 1/√in)
// (kaiming_uniform with a = √5), B = 0, so the adapted model starts equal to
// the base model. The random stream is ours (seeded by opts.Seed), not torch's.
func New(m *model.Model, opts Options) (*Adapter, error) {
	opts.defaults()
	a, err := newShape(m, opts)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x10ba))
	bound := 1 / math.Sqrt(float64(a.in))
	a.eachMatrix(func(_ int, _ string, ab string, v []float32) {
		if ab == "A" {
			for i := range v {
				v[i] = float32((2*rng.Float64() - 1) * bound)
			}
		}
	})
	return a, nil
}

// newShape allocates a zero adapter of the right shape for m.
func newShape(m *model.Model, opts Options) (*Adapter, error) {
	a, err := planShape(m, opts)
	if err != nil {
		return nil, err
	}
	a.allocate()
	return a, nil
}

// planShape is an adapter of the right shape for m, its parameters not yet
// allocated (allocate).
func planShape(m *model.Model, opts Options) (*Adapter, error) {
	if opts.R <= 0 {
		return nil, fmt.Errorf("lora: rank must be positive, got %d", opts.R)
	}
	// A rank above the hidden size adds nothing a full update would not,
	// and an absurd one (a corrupt adapter_config.json) must not allocate.
	if opts.R > m.HiddenSize {
		return nil, fmt.Errorf("lora: rank %d is above the model's hidden size %d", opts.R, m.HiddenSize)
	}
	a := &Adapter{opts: opts, layers: m.NumLayers, names: m.LayersName(), in: m.HiddenSize, multimodal: m.Multimodal, out: map[string]int{
		"q_proj": m.NumHeads * m.HeadDim, "v_proj": m.NumKVHeads * m.HeadDim,
	}}
	for _, t := range opts.Targets {
		if !slices.Contains(supportedTargets, t) {
			return nil, fmt.Errorf("lora: target module %q is not supported (supported: %v)", t, supportedTargets)
		}
	}
	for _, t := range supportedTargets { // architecture order
		if slices.Contains(opts.Targets, t) {
			a.targets = append(a.targets, t)
		}
	}
	return a, nil
}

// allocate gives a planned adapter its zero parameters.
func (a *Adapter) allocate() {
	perLayer := 0
	for _, t := range a.targets {
		perLayer += a.opts.R*a.in + a.out[t]*a.opts.R
	}
	if a.opts.GroupByLayer {
		for range a.layers {
			a.params = append(a.params, make([]float32, perLayer))
		}
	} else {
		a.params = [][]float32{make([]float32, perLayer*a.layers)}
	}
}

// matrixShape is the shape of a LoRA matrix ("A" or "B") of target t.
func (a *Adapter) matrixShape(t, ab string) (rows, cols int) {
	if ab == "B" {
		return a.out[t], a.opts.R
	}
	return a.opts.R, a.in
}

// Params returns the parameter groups (the adapter's own storage: the ZO
// engine updates them in place).
func (a *Adapter) Params() [][]float32 { return a.params }

// Rank is the adapter's r (as loaded or made).
func (a *Adapter) Rank() int { return a.opts.R }

// Alpha is the adapter's lora_alpha; the update's scale is Alpha/Rank.
func (a *Adapter) Alpha() float64 { return a.opts.Alpha }

// Targets are the projections the adapter updates (q_proj, v_proj).
func (a *Adapter) Targets() []string { return slices.Clone(a.targets) }

// Count returns the number of trainable parameters.
func (a *Adapter) Count() int {
	n := 0
	for _, g := range a.params {
		n += len(g)
	}
	return n
}

// Scale is the factor applied to B(Ax): alpha/r (alpha/√r with rsLoRA).
func (a *Adapter) Scale() float32 {
	if a.opts.RSLoRA {
		return float32(a.opts.Alpha / math.Sqrt(float64(a.opts.R)))
	}
	return float32(a.opts.Alpha / float64(a.opts.R))
}

// GroupLayer returns the first decoder layer group g's parameters touch
// (prefix caching starts a variant of group g there): g itself when grouped
// by layer, 0 for a single group.
func (a *Adapter) GroupLayer(g int) int {
	if a.opts.GroupByLayer {
		return g
	}
	return 0
}

// SetBaseModel records base_model_name_or_path for saving.
func (a *Adapter) SetBaseModel(name string) { a.base = name }

// eachMatrix calls fn for every adapter matrix in canonical order with a
// slice of the given group storage.
func (a *Adapter) eachMatrixOf(params [][]float32, fn func(layer int, target, ab string, v []float32)) {
	r := a.opts.R
	for l := 0; l < a.layers; l++ {
		g, off := 0, 0
		if a.opts.GroupByLayer {
			g = l
		} else {
			off = l * (len(params[0]) / a.layers)
		}
		for _, t := range a.targets {
			nA, nB := r*a.in, a.out[t]*r
			fn(l, t, "A", params[g][off:off+nA])
			fn(l, t, "B", params[g][off+nA:off+nA+nB])
			off += nA + nB
		}
	}
}

func (a *Adapter) eachMatrix(fn func(layer int, target, ab string, v []float32)) {
	a.eachMatrixOf(a.params, fn)
}

// View returns the model-side adapter reading the given parameter groups
// (same shapes as Params) without copying: the ZO objective uses it to run
// perturbed copies of the parameters.
func (a *Adapter) View(params [][]float32) *model.Adapter {
	ad := &model.Adapter{Layers: make([]model.LayerAdapter, a.layers)}
	var pendingA []float32
	a.eachMatrixOf(params, func(l int, t, ab string, v []float32) {
		if ab == "A" {
			pendingA = v
			return
		}
		lo := &model.LoRA{R: a.opts.R, A: pendingA, B: v, Scale: a.Scale()}
		if t == "q_proj" {
			ad.Layers[l].Q = lo
		} else {
			ad.Layers[l].V = lo
		}
	})
	return ad
}

// Attach makes m apply the adapter's current parameters in Forward and Generate.
func (a *Adapter) Attach(m *model.Model) { m.Adapter = a.View(a.params) }

// Save writes the adapter in PEFT format: adapter_model.safetensors (keys
// base_model.model.model.layers.{i}.self_attn.{q,v}_proj.lora_{A,B}.weight;
// OPT's: model.decoder.layers, Ministral-3's checkpoint's:
// model.language_model.layers) and adapter_config.json, both atomically.
func (a *Adapter) Save(dir string) error { return a.SaveParams(dir, a.params) }

// SaveParams is Save for other parameter values of the same shape (a best
// copy kept by the trainer, say).
func (a *Adapter) SaveParams(dir string, params [][]float32) error {
	var tensors []safetensors.Tensor
	a.eachMatrixOf(params, func(l int, t, ab string, v []float32) {
		shape := []int{a.opts.R, a.in}
		if ab == "B" {
			shape = []int{a.out[t], a.opts.R}
		}
		tensors = append(tensors, safetensors.F32Tensor(tensorName(a.names, l, t, ab), shape, v))
	})
	return savePEFT(dir, tensors, peftConfig(a.opts, a.targets, a.base, "CAUSAL_LM", nil))
}

// Load reads a PEFT LoRA adapter directory into a trainable adapter for m
// (one parameter group per layer when groupByLayer, else one group; R,
// Alpha and Targets come from the file).
func Load(dir string, m *model.Model, groupByLayer bool) (*Adapter, error) {
	a, _, err := load(dir, m, groupByLayer)
	return a, err
}

// load reads an adapter directory and returns it with its config.
func load(dir string, m *model.Model, groupByLayer bool) (*Adapter, *PEFTConfig, error) {
	cfg, err := ReadPEFTConfig(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return nil, nil, err
	}
	a, err := planShape(m, Options{R: cfg.R, Alpha: cfg.LoraAlpha, Targets: cfg.TargetModules, GroupByLayer: groupByLayer, RSLoRA: cfg.UseRSLoRA})
	if err != nil {
		return nil, nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	a.base = cfg.BaseModel
	path := filepath.Join(dir, "adapter_model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load adapter: %w", err)
	}
	defer f.Close()
	read, err := a.checkFile(f)
	if err != nil {
		return nil, nil, err
	}
	a.allocate()
	a.eachMatrix(func(l int, t, ab string, v []float32) {
		if err != nil {
			return
		}
		rows, cols := a.matrixShape(t, ab)
		var w []float32
		if w, err = readMatrix(f, tensorName(a.names, l, t, ab), rows, cols); err == nil {
			copy(v, w)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	// A tensor the model has no place for is refused rather than dropped:
	// a layer the model lacks means an adapter made for another model;
	// anything else, weights this loader does not apply.
	for _, t := range f.Tensors() {
		if read[t.Name] || a.multimodal && strings.HasPrefix(t.Name, visionTowerPrefix) {
			continue
		}
		var layer int
		var rest string
		if n, _ := fmt.Sscanf(t.Name, "base_model.model."+a.names+".%d.%s", &layer, &rest); n == 2 && layer >= a.layers {
			return nil, nil, fmt.Errorf("adapter %s: tensor %q is for layer %d, and the model has %d layers: an adapter for another model?",
				path, t.Name, layer, a.layers)
		}
		return nil, nil, fmt.Errorf("adapter %s: tensor %q is not supported (only the LoRA matrices of %v)", path, t.Name, a.targets)
	}
	return a, cfg, nil
}

// checkFile checks, before a planned adapter's parameters are allocated,
// that f holds each of its matrices in its shape, and returns their names:
// a rank in adapter_config.json far above the file's (a damaged or a
// hostile config: 7 GB of parameters at an 8B model's hidden size) is an
// error, not memory for matrices that are not there.
func (a *Adapter) checkFile(f *safetensors.File) (map[string]bool, error) {
	names := map[string]bool{}
	for l := range a.layers {
		for _, t := range a.targets {
			for _, ab := range []string{"A", "B"} {
				name := tensorName(a.names, l, t, ab)
				rows, cols := a.matrixShape(t, ab)
				if err := checkMatrix(f, name, rows, cols); err != nil {
					return nil, err
				}
				names[name] = true
			}
		}
	}
	return names, nil
}
