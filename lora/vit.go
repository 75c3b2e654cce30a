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

// vitTargets are the ViT projections a LoRA adapter may update, in the
// architecture's order (the paper's ViT runs adapt both).
var vitTargets = []string{"query", "value"}

// SupportedViTTargets lists the ViT projections an adapter can target, in
// the architecture's order.
func SupportedViTTargets() []string { return slices.Clone(vitTargets) }

// ViTAdapter is a trainable PEFT LoRA adapter of a ViT image classifier:
// low-rank updates of query and value in every layer and, as PEFT's
// modules_to_save, a whole trainable copy of the classifier. Its parameters
// are flat float32 groups in the canonical order: layers in increasing
// order, in a layer query then value, for each lora_A [r][hidden] then
// lora_B [hidden][r]; then classifier.weight [labels][hidden] and
// classifier.bias [labels]. With GroupByLayer each layer is a group and the
// classifier is the last; otherwise everything is group 0.
type ViTAdapter struct {
	opts    Options
	targets []string
	layers  int
	hidden  int
	labels  int
	params  [][]float32
	base    string
}

// NewViT makes an adapter for m with PEFT's initialisation: A ~
// U(−1/√hidden, 1/√hidden), B = 0, and the classifier copied from m's, so
// the adapted model starts equal to m. opts.Targets defaults to query and
// value; the random stream is ours (seeded by opts.Seed).
func NewViT(m *model.ViT, opts Options) (*ViTAdapter, error) {
	if len(opts.Targets) == 0 {
		opts.Targets = vitTargets
	}
	if opts.Layers != nil {
		return nil, fmt.Errorf("lora: a ViT adapter covers every layer (layers %v)", opts.Layers)
	}
	opts.defaults()
	a, err := newViTShape(&m.Config, opts)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x10ba))
	bound := 1 / math.Sqrt(float64(a.hidden))
	a.eachLoRA(a.params, func(_ int, _, ab string, v []float32) {
		if ab == "A" {
			for i := range v {
				v[i] = float32((2*rng.Float64() - 1) * bound)
			}
		}
	})
	w, b := a.classifier(a.params)
	be := m.Backend
	rows := make([]int, a.labels)
	for i := range rows {
		rows[i] = i
	}
	dst := be.Alloc(a.labels * a.hidden)
	be.Rows(dst, m.Classifier.W, rows) // the packed matrix read back
	copy(w, be.ToHost(dst))
	be.Free(dst)
	copy(b, be.ToHost(m.Classifier.B))
	return a, nil
}

// newViTShape allocates a zero adapter of the right shape for a model of
// config c.
func newViTShape(c *model.ViTConfig, opts Options) (*ViTAdapter, error) {
	a, err := planViTShape(c, opts)
	if err != nil {
		return nil, err
	}
	a.allocate()
	return a, nil
}

// planViTShape is a ViT adapter of the right shape for c, its parameters
// not yet allocated (allocate).
func planViTShape(c *model.ViTConfig, opts Options) (*ViTAdapter, error) {
	if opts.R <= 0 || opts.R > c.HiddenSize {
		return nil, fmt.Errorf("lora: rank %d is not between 1 and the model's hidden size %d", opts.R, c.HiddenSize)
	}
	a := &ViTAdapter{opts: opts, layers: c.NumLayers, hidden: c.HiddenSize, labels: c.NumLabels}
	for _, t := range opts.Targets {
		if !slices.Contains(vitTargets, t) {
			return nil, fmt.Errorf("lora: target module %s is not supported on a ViT (supported: %v)", quoteClipped(t), vitTargets)
		}
	}
	for _, t := range vitTargets {
		if slices.Contains(opts.Targets, t) {
			a.targets = append(a.targets, t)
		}
	}
	return a, nil
}

// allocate gives a planned adapter its zero parameters.
func (a *ViTAdapter) allocate() {
	perLayer := len(a.targets) * 2 * a.opts.R * a.hidden
	head := a.labels*a.hidden + a.labels
	if a.opts.GroupByLayer {
		for range a.layers {
			a.params = append(a.params, make([]float32, perLayer))
		}
		a.params = append(a.params, make([]float32, head))
	} else {
		a.params = [][]float32{make([]float32, perLayer*a.layers+head)}
	}
}

// checkFile checks, before a planned adapter's parameters are allocated,
// that f holds each of its LoRA matrices in its shape (a rank in
// adapter_config.json far above the file's is an error, not memory for
// matrices that are not there), and returns their names.
func (a *ViTAdapter) checkFile(f *safetensors.File) (map[string]bool, error) {
	names := map[string]bool{}
	for l := range a.layers {
		for _, t := range a.targets {
			for _, ab := range []string{"A", "B"} {
				rows, cols := a.matrixShape(ab)
				if err := checkMatrix(f, vitTensorName(l, t, ab), rows, cols); err != nil {
					return nil, err
				}
				names[vitTensorName(l, t, ab)] = true
			}
		}
	}
	return names, nil
}

// matrixShape is the shape of a LoRA matrix, "A" or "B".
func (a *ViTAdapter) matrixShape(ab string) (rows, cols int) {
	if ab == "B" {
		return a.hidden, a.opts.R
	}
	return a.opts.R, a.hidden
}

// eachLoRA calls fn on each LoRA matrix of params in the canonical order.
func (a *ViTAdapter) eachLoRA(params [][]float32, fn func(layer int, target, ab string, v []float32)) {
	size := a.opts.R * a.hidden // A and B have the same size here: square projections
	off, g := 0, 0
	for l := range a.layers {
		if a.opts.GroupByLayer {
			off, g = 0, l
		}
		for _, t := range a.targets {
			for _, ab := range []string{"A", "B"} {
				fn(l, t, ab, params[g][off:off+size])
				off += size
			}
		}
	}
}

// classifier returns the classifier's weight and bias within params.
func (a *ViTAdapter) classifier(params [][]float32) (w, b []float32) {
	last := params[len(params)-1]
	head := last[len(last)-a.labels*a.hidden-a.labels:]
	return head[:a.labels*a.hidden], head[a.labels*a.hidden:]
}

// Params returns the parameter groups (the adapter's own storage: the ZO
// engine updates them in place).
func (a *ViTAdapter) Params() [][]float32 { return a.params }

// Count is the number of trainable parameters: PEFT's trainable count of
// the same adapter (the LoRA matrices and the classifier's copy).
func (a *ViTAdapter) Count() int {
	n := 0
	for _, p := range a.params {
		n += len(p)
	}
	return n
}

// SetBaseModel sets base_model_name_or_path for Save.
func (a *ViTAdapter) SetBaseModel(name string) { a.base = name }

// Rank is the adapter's r.
func (a *ViTAdapter) Rank() int { return a.opts.R }

// Alpha is the adapter's lora_alpha; the update's scale is Alpha/Rank.
func (a *ViTAdapter) Alpha() float64 { return a.opts.Alpha }

// RSLoRA says whether the update is scaled by Alpha/√Rank (PEFT's use_rslora).
func (a *ViTAdapter) RSLoRA() bool { return a.opts.RSLoRA }

// Targets are the projections the adapter updates (query, value).
func (a *ViTAdapter) Targets() []string { return slices.Clone(a.targets) }

// View returns the model's view of params (of the adapter's shape): the
// LoRA updates and the classifier, sharing params' storage.
func (a *ViTAdapter) View(params [][]float32) *model.ViTAdapter {
	v := &model.ViTAdapter{Layers: make([]model.LayerAdapter, a.layers)}
	scale := float32(a.opts.Alpha / float64(a.opts.R))
	if a.opts.RSLoRA {
		scale = float32(a.opts.Alpha / math.Sqrt(float64(a.opts.R)))
	}
	var cur *model.LoRA
	a.eachLoRA(params, func(l int, t, ab string, m []float32) {
		if ab == "A" {
			cur = &model.LoRA{R: a.opts.R, A: m, Scale: scale}
			if t == "query" {
				v.Layers[l].Q = cur
			} else {
				v.Layers[l].V = cur
			}
			return
		}
		cur.B = m
	})
	v.Classifier, v.ClassifierBias = a.classifier(params)
	return v
}

// Attach makes m apply the adapter's current parameters.
func (a *ViTAdapter) Attach(m *model.ViT) { m.Adapter = a.View(a.params) }

// vitTensorName is PEFT's saved key of one LoRA matrix of a ViT.
func vitTensorName(layer int, target, ab string) string {
	return fmt.Sprintf("base_model.model.vit.encoder.layer.%d.attention.attention.%s.lora_%s.weight", layer, target, ab)
}

// PEFT saves a modules_to_save copy under the module's own name.
const (
	vitClassifierWeight = "base_model.model.classifier.weight"
	vitClassifierBias   = "base_model.model.classifier.bias"
)

// Save writes the adapter in PEFT's format: adapter_model.safetensors and
// adapter_config.json (modules_to_save ["classifier"]), both atomically.
func (a *ViTAdapter) Save(dir string) error { return a.SaveParams(dir, a.params) }

// SaveParams is Save for other parameter values of the same shape.
func (a *ViTAdapter) SaveParams(dir string, params [][]float32) error {
	var tensors []safetensors.Tensor
	a.eachLoRA(params, func(l int, t, ab string, v []float32) {
		shape := []int{a.opts.R, a.hidden}
		if ab == "B" {
			shape = []int{a.hidden, a.opts.R}
		}
		tensors = append(tensors, safetensors.F32Tensor(vitTensorName(l, t, ab), shape, v))
	})
	w, b := a.classifier(params)
	tensors = append(tensors, safetensors.F32Tensor(vitClassifierWeight, []int{a.labels, a.hidden}, w),
		safetensors.F32Tensor(vitClassifierBias, []int{a.labels}, b))
	return savePEFT(dir, tensors, peftConfig(a.opts, a.targets, a.base, nil, []string{"classifier"}))
}

// LoadViT reads a PEFT LoRA adapter of a ViT (target_modules among query
// and value, modules_to_save ["classifier"]) into a trainable adapter for
// m. A tensor missing, of the wrong shape or with no place in the model is
// an error naming it.
func LoadViT(dir string, m *model.ViT, groupByLayer bool) (*ViTAdapter, error) {
	cfg, err := readPEFTConfig(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return nil, err
	}
	if !slices.Equal(cfg.ModulesToSave, []string{"classifier"}) {
		hint := ""
		if len(cfg.ModulesToSave) == 0 && slices.ContainsFunc(cfg.TargetModules.Names, func(t string) bool { return strings.HasSuffix(t, "_proj") }) {
			hint = fmt.Sprintf(" (targets %s: a decoder model's adapter, not a ViT's)", clip(fmt.Sprintf("%q", cfg.TargetModules.Names)))
		}
		return nil, fmt.Errorf("adapter %s: modules_to_save is %q; a ViT adapter trains the classifier ([\"classifier\"])%s", dir, cfg.ModulesToSave, hint)
	}
	if cfg.Layers != nil {
		return nil, fmt.Errorf("adapter %s: layers_to_transform %v: a ViT adapter covers every layer", dir, cfg.Layers)
	}
	if cfg.TargetModules.Regex != "" {
		return nil, fmt.Errorf("adapter %s: target_modules is the regular expression %s; a ViT adapter's are a list (query, value)", dir, quoteClipped(cfg.TargetModules.Regex))
	}
	a, err := planViTShape(&m.Config, Options{R: cfg.R, Alpha: cfg.LoraAlpha, Targets: cfg.TargetModules.Names, GroupByLayer: groupByLayer, RSLoRA: cfg.UseRSLoRA})
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	a.base = cfg.BaseModel
	path := filepath.Join(dir, "adapter_model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load adapter: %w", err)
	}
	defer f.Close()
	read, err := a.checkFile(f)
	if err != nil {
		return nil, err
	}
	a.allocate()
	load := func(name string, rows, cols int, dst []float32) {
		if err != nil {
			return
		}
		read[name] = true
		var v []float32
		if rows == 0 { // a vector
			v, err = readVector(f, name, cols)
		} else {
			v, err = readMatrix(f, name, rows, cols)
		}
		if err == nil {
			copy(dst, v)
		}
	}
	a.eachLoRA(a.params, func(l int, t, ab string, v []float32) {
		rows, cols := a.matrixShape(ab)
		load(vitTensorName(l, t, ab), rows, cols, v)
	})
	w, b := a.classifier(a.params)
	load(vitClassifierWeight, a.labels, a.hidden, w)
	load(vitClassifierBias, 0, a.labels, b)
	if err != nil {
		return nil, err
	}
	for _, t := range f.Tensors() {
		if !read[t.Name] {
			return nil, fmt.Errorf("adapter %s: tensor %q has no place in this %d-layer ViT adapter of %v", path, t.Name, a.layers, a.targets)
		}
	}
	return a, nil
}

// readVector reads a tensor of shape [n].
func readVector(f *safetensors.File, name string, n int) ([]float32, error) {
	info, ok := f.Info(name)
	if !ok {
		return nil, fmt.Errorf("adapter %s: missing tensor %q", f.Path(), name)
	}
	if len(info.Shape) != 1 || info.Shape[0] != n {
		return nil, fmt.Errorf("adapter %s: tensor %q has shape %v, want [%d]", f.Path(), name, info.Shape, n)
	}
	return f.Float32(name)
}
