package lora

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/peftweights"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// Options configures a trainable LoRA adapter. The defaults are the paper's:
// r = 16, alpha = 16 on q_proj and v_proj.
type Options struct {
	R     int     // rank (default 16)
	Alpha float64 // lora_alpha (default 16); the update is scaled by Alpha/R
	// Targets are the projections to adapt, by PEFT's names (default
	// q_proj, v_proj): any of the model's (model.Config.Projections), or
	// AllLinear alone for every one of them.
	Targets []string
	// Layers are the decoder layers adapted (PEFT's layers_to_transform),
	// in any order; nil: every layer. A step's perturbed points then start
	// at the first of them from the clean pass below (prefix caching).
	Layers []int
	Seed   uint64 // seeds the A initialisation
	// GroupByLayer makes each adapted decoder layer its own parameter group
	// (for grouped ZO estimation): the i-th of Layers in increasing order is
	// group i; otherwise all parameters form group 0.
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

// AllLinear as the only target adapts every projection of every layer, as
// PEFT's target_modules="all-linear" does (the head excepted).
const AllLinear = "all-linear"

// Adapter is a trainable LoRA adapter whose parameters live in flat float32
// vectors, one per group, in the canonical order of docs/ALGORITHMS.md (the noise contract):
// its layers in increasing order; in a layer its targets in architecture order
// (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj); for
// each, lora_A [r][in] then lora_B [out][r], row-major.
type Adapter struct {
	opts       Options
	targets    []model.Projection // the adapted projections in architecture order
	layers     int                // the model's decoder layers
	adapted    []int              // the layers adapted, increasing (all of them unless Options.Layers)
	names      string             // the model's name of its decoder layers (model.Config.LayersName)
	params     [][]float32        // the groups
	base       string             // base_model_name_or_path written to adapter_config.json
	multimodal bool               // Ministral-3's checkpoint: PEFT's vision-tower matrices are skipped (visionTowerPrefix)
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
	a.eachMatrix(func(_ int, pr model.Projection, ab string, v []float32) {
		if bound := 1 / math.Sqrt(float64(pr.In)); ab == "A" {
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
		return nil, &OptionError{"R", fmt.Errorf("rank must be positive, got %d", opts.R)}
	}
	// A rank above the hidden size adds nothing a full update would not,
	// and an absurd one (a corrupt adapter_config.json) must not allocate.
	if opts.R > m.HiddenSize {
		return nil, &OptionError{"R", fmt.Errorf("rank %d is above the model's hidden size %d", opts.R, m.HiddenSize)}
	}
	a := &Adapter{opts: opts, layers: m.NumLayers, names: m.LayersName(), multimodal: m.Multimodal}
	var err error
	if a.targets, err = targetsOf(&m.Config, opts.Targets); err != nil {
		return nil, err
	}
	if a.adapted, err = LayersOf(m.NumLayers, opts.Layers); err != nil {
		return nil, err
	}
	return a, nil
}

// An OptionError is the refusal of one field of Options (Option: "R",
// "Targets", "Layers"), so that a caller can name its own setting of it.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return "lora: " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// LayersOf is the layers of a model of n that Options.Layers names (nil:
// all of them), in increasing order; an OptionError names a layer the
// model lacks or one given twice.
func LayersOf(n int, layers []int) ([]int, error) {
	if layers == nil {
		out := make([]int, n)
		for l := range out {
			out[l] = l
		}
		return out, nil
	}
	if len(layers) == 0 {
		return nil, &OptionError{"Layers", fmt.Errorf("no layer to adapt (layers is empty)")}
	}
	out := slices.Sorted(slices.Values(layers))
	for i, l := range out {
		switch {
		case l < 0 || l >= n:
			return nil, &OptionError{"Layers", fmt.Errorf("layer %d is not one of the model's %d layers (0 to %d)", l, n, n-1)}
		case i > 0 && l == out[i-1]:
			return nil, &OptionError{"Layers", fmt.Errorf("layer %d is named twice", l)}
		}
	}
	return out, nil
}

// targetsOf is the projections of c's layers that targets names (by
// PEFT's names, or AllLinear alone for all), in architecture order; its
// refusals are OptionErrors of Targets.
func targetsOf(c *model.Config, targets []string) ([]model.Projection, error) {
	all := c.Projections()
	if slices.Equal(targets, []string{AllLinear}) {
		return all, nil
	}
	var ps []model.Projection
	for _, t := range targets {
		i := slices.IndexFunc(all, func(p model.Projection) bool { return p.Name == t })
		switch {
		case i < 0:
			return nil, &OptionError{"Targets", fmt.Errorf("target module %q is not a projection of this model (%s's: %s, or %s alone for all)", t, c.Architecture, strings.Join(projNames(all), ", "), AllLinear)}
		case slices.ContainsFunc(ps, func(p model.Projection) bool { return p.Name == t }):
			return nil, &OptionError{"Targets", fmt.Errorf("target module %q is named twice", t)}
		}
		ps = append(ps, all[i])
	}
	slices.SortFunc(ps, func(a, b model.Projection) int { return int(a.Proj - b.Proj) })
	return ps, nil
}

// TargetNames is the names of the projections of c's layers that targets
// names (AllLinear alone: all of them), in architecture order; an
// OptionError names a target c's layers do not have.
func TargetNames(c *model.Config, targets []string) ([]string, error) {
	ps, err := targetsOf(c, targets)
	if err != nil {
		return nil, err
	}
	return projNames(ps), nil
}

// projNames is the names of ps (PEFT's target names), in their order.
func projNames(ps []model.Projection) []string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return names
}

// Size is the number of parameters an adapter made with opts on a model
// of config c would have, without making it (nothing is allocated): what
// a caller checks against its memory before New. Its errors are New's.
func Size(c *model.Config, opts Options) (int64, error) {
	opts.defaults()
	a, err := planShape(&model.Model{Config: *c}, opts)
	if err != nil {
		return 0, err
	}
	var perLayer int64
	for _, t := range a.targets {
		perLayer += int64(a.opts.R) * int64(t.In+t.Out)
	}
	return perLayer * int64(len(a.adapted)), nil
}

// allocate gives a planned adapter its zero parameters.
func (a *Adapter) allocate() {
	perLayer := 0
	for _, t := range a.targets {
		perLayer += a.opts.R * (t.In + t.Out)
	}
	if a.opts.GroupByLayer {
		for range a.adapted {
			a.params = append(a.params, make([]float32, perLayer))
		}
	} else {
		a.params = [][]float32{make([]float32, perLayer*len(a.adapted))}
	}
}

// matrixShape is the shape of a LoRA matrix ("A" or "B") of target t.
func (a *Adapter) matrixShape(t model.Projection, ab string) (rows, cols int) {
	if ab == "B" {
		return t.Out, a.opts.R
	}
	return a.opts.R, t.In
}

// Params returns the parameter groups (the adapter's own storage: the ZO
// engine updates them in place).
func (a *Adapter) Params() [][]float32 { return a.params }

// Rank is the adapter's r (as loaded or made).
func (a *Adapter) Rank() int { return a.opts.R }

// Alpha is the adapter's lora_alpha; the update's scale is Alpha/Rank.
func (a *Adapter) Alpha() float64 { return a.opts.Alpha }

// RSLoRA says whether the update is scaled by Alpha/√Rank (PEFT's use_rslora).
func (a *Adapter) RSLoRA() bool { return a.opts.RSLoRA }

// Targets are the names of the projections the adapter updates, in
// architecture order (q_proj, v_proj by default).
func (a *Adapter) Targets() []string { return projNames(a.targets) }

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
// (prefix caching starts a variant of group g there): group g's layer when
// grouped by layer, the first adapted layer for a single group.
func (a *Adapter) GroupLayer(g int) int {
	if a.opts.GroupByLayer {
		return a.adapted[g]
	}
	return a.adapted[0]
}

// Layers are the decoder layers the adapter adapts, in increasing order.
func (a *Adapter) Layers() []int { return slices.Clone(a.adapted) }

// allLayers says whether the adapter adapts every layer of its model.
func (a *Adapter) allLayers() bool { return len(a.adapted) == a.layers }

// SetBaseModel records base_model_name_or_path for saving.
func (a *Adapter) SetBaseModel(name string) { a.base = name }

// eachMatrixOf calls fn for every adapter matrix in canonical order with a
// slice of the given group storage.
func (a *Adapter) eachMatrixOf(params [][]float32, fn func(layer int, target model.Projection, ab string, v []float32)) {
	r := a.opts.R
	for i, l := range a.adapted {
		g, off := 0, 0
		if a.opts.GroupByLayer {
			g = i
		} else {
			off = i * (len(params[0]) / len(a.adapted))
		}
		for _, t := range a.targets {
			nA, nB := r*t.In, t.Out*r
			fn(l, t, "A", params[g][off:off+nA])
			fn(l, t, "B", params[g][off+nA:off+nA+nB])
			off += nA + nB
		}
	}
}

func (a *Adapter) eachMatrix(fn func(layer int, target model.Projection, ab string, v []float32)) {
	a.eachMatrixOf(a.params, fn)
}

// View returns the model-side adapter reading the given parameter groups
// (same shapes as Params) without copying: the ZO objective uses it to run
// perturbed copies of the parameters.
func (a *Adapter) View(params [][]float32) *model.Adapter {
	ad := &model.Adapter{Layers: make([]model.LayerAdapter, a.layers)}
	var pendingA []float32
	a.eachMatrixOf(params, func(l int, t model.Projection, ab string, v []float32) {
		if ab == "A" {
			pendingA = v
			return
		}
		*ad.Layers[l].Slot(t.Proj) = &model.LoRA{R: a.opts.R, A: pendingA, B: v, Scale: a.Scale()}
	})
	return ad
}

// Attach makes m apply the adapter's current parameters in Forward and Generate.
func (a *Adapter) Attach(m *model.Model) { m.Adapter = a.View(a.params) }

// Save writes the adapter in PEFT format: adapter_model.safetensors (keys
// base_model.model.model.layers.{i}.self_attn.q_proj.lora_{A,B}.weight and
// so on, model.Projection.Module;
// OPT's: model.decoder.layers, Ministral-3's checkpoint's:
// model.language_model.layers) and adapter_config.json, both atomically.
func (a *Adapter) Save(dir string) error { return a.SaveParams(dir, a.params) }

// SaveParams is Save for other parameter values of the same shape (a best
// copy kept by the trainer, say).
func (a *Adapter) SaveParams(dir string, params [][]float32) error {
	var tensors []safetensors.Tensor
	a.eachMatrixOf(params, func(l int, t model.Projection, ab string, v []float32) {
		rows, cols := a.matrixShape(t, ab)
		tensors = append(tensors, safetensors.F32Tensor(tensorName(a.names, l, t.Module, ab), []int{rows, cols}, v))
	})
	cfg := peftConfig(a.opts, a.Targets(), a.base, "CAUSAL_LM", nil)
	if !a.allLayers() {
		cfg["layers_to_transform"] = a.adapted
	}
	return savePEFT(dir, tensors, cfg)
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
	targets, err := targetPaths(&m.Config, cfg.TargetModules)
	if err != nil {
		return nil, nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	if cfg.Layers != nil && (cfg.TargetModules.Regex != "" || slices.ContainsFunc(cfg.TargetModules.Names, func(t string) bool { return strings.Contains(t, ".") })) {
		return nil, nil, fmt.Errorf("adapter %s: layers_to_transform with target_modules given as module paths or a regular expression is not supported (name the projections: q_proj, v_proj, …)", dir)
	}
	a, err := planShape(m, Options{R: cfg.R, Alpha: cfg.LoraAlpha, Targets: targets, Layers: cfg.Layers, GroupByLayer: groupByLayer, RSLoRA: cfg.UseRSLoRA})
	if err != nil {
		return nil, nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	a.base = cfg.BaseModel
	path := filepath.Join(dir, peftweights.File)
	f, err := peftweights.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("load adapter: %w", err)
	}
	defer f.Close()
	read, err := a.checkFile(f)
	if err != nil {
		return nil, nil, err
	}
	a.allocate()
	a.eachMatrix(func(l int, t model.Projection, ab string, v []float32) {
		if err != nil {
			return
		}
		rows, cols := a.matrixShape(t, ab)
		var w []float32
		if w, err = readMatrix(f, tensorName(a.names, l, t.Module, ab), rows, cols); err == nil {
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
		} else if n == 2 && !slices.Contains(a.adapted, layer) {
			return nil, nil, fmt.Errorf("adapter %s: tensor %q is for layer %d, which its layers_to_transform %v leaves out", path, t.Name, layer, a.adapted)
		}
		return nil, nil, fmt.Errorf("adapter %s: tensor %q is not supported (only the LoRA matrices of %v)", path, t.Name, a.Targets())
	}
	return a, cfg, nil
}

// otherWidthHint is what a matrix of the adapter's rank whose other side
// is not the model's projection size suggests: an adapter trained on
// another model (the commonest cause: the wrong base model given to
// meazo-eval or meazo-inspect), with the base model its config names. ""
// when the rank side differs too (a damaged config, not another model).
func (a *Adapter) otherWidthHint(f *safetensors.File, name, ab string, rows, cols int) string {
	info, ok := f.Info(name)
	if !ok || len(info.Shape) != 2 {
		return ""
	}
	side, rank, got, want := "input", info.Shape[0], info.Shape[1], cols // lora_A is [r, in]
	if ab == "B" {
		side, rank, got, want = "output", info.Shape[1], info.Shape[0], rows // lora_B is [out, r]
	}
	if rank != a.opts.R || got == want {
		return ""
	}
	hint := fmt.Sprintf(": an adapter for another model (its %s has %d features, this model's %d)?", side, got, want)
	if a.base != "" {
		hint += fmt.Sprintf(" Its adapter_config.json names the base model %q", a.base)
	}
	return hint
}

// checkFile checks, before a planned adapter's parameters are allocated,
// that f holds each of its matrices in its shape, and returns their names:
// a rank in adapter_config.json far above the file's (a damaged or a
// hostile config: 7 GB of parameters at an 8B model's hidden size) is an
// error, not memory for matrices that are not there.
func (a *Adapter) checkFile(f *safetensors.File) (map[string]bool, error) {
	names := map[string]bool{}
	for _, l := range a.adapted {
		for _, t := range a.targets {
			for _, ab := range []string{"A", "B"} {
				name := tensorName(a.names, l, t.Module, ab)
				rows, cols := a.matrixShape(t, ab)
				if err := checkMatrix(f, name, rows, cols); err != nil {
					return nil, fmt.Errorf("%w%s", err, a.otherWidthHint(f, name, ab, rows, cols))
				}
				names[name] = true
			}
		}
	}
	return names, nil
}
