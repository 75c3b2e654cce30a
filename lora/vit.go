package lora

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/peftweights"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// vitTargets are the target names an adapter of a ViT may be made with
// (Options.Targets, adapter.targets), as PEFT's target_modules lists them:
// PEFT matches a name to every module whose full name is it or ends with
// "." and it, so "dense" names the three dense layers of each encoder
// layer (attention.output.dense, intermediate.dense, output.dense) and
// "output.dense" two of them (attention.output.dense too). AllLinear alone
// names every linear layer of the encoder (not the classifier, which the
// adapter trains whole).
var vitTargets = []string{"query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense", "dense"}

// SupportedViTTargets lists the target names an adapter of a ViT can be
// made with, as PEFT reads them (vitTargets), then AllLinear.
func SupportedViTTargets() []string { return append(slices.Clone(vitTargets), AllLinear) }

// ViTAdapter is a trainable PEFT LoRA adapter of a ViT image classifier:
// low-rank updates of some of the linear layers of every encoder layer
// (query and value by default, as the paper's ViT runs) and, as PEFT's
// modules_to_save, a whole trainable copy of the classifier. Its
// parameters are flat float32 groups in the canonical order: layers in
// increasing order, in a layer its targets in the layer's order (query,
// key, value, attention.output.dense, intermediate.dense, output.dense:
// model.ViTConfig.Projections), for each lora_A [r][in] then lora_B
// [out][r]; then classifier.weight [labels][hidden] and classifier.bias
// [labels]. With GroupByLayer each adapted layer is a group and the
// classifier is the last; otherwise everything is group 0. Options.Layers
// (PEFT's layers_to_transform) adapts some layers only; the classifier is
// trained whatever they are.
type ViTAdapter struct {
	opts    Options
	targets []model.Projection // in the layer's order
	layers  int                // the model's encoder layers
	adapted []int              // the layers adapted, increasing (all of them unless Options.Layers: layers_to_transform)
	hidden  int
	labels  int
	params  [][]float32
	base    string
}

// NewViT makes an adapter for m with PEFT's initialisation: A ~
// U(−1/√in, 1/√in), B = 0, and the classifier copied from m's, so the
// adapted model starts equal to m. opts.Targets (PEFT's target_modules,
// vitTargets, or AllLinear alone) defaults to query and value; the random
// stream is ours (seeded by opts.Seed). opts.Layers (nil: every layer)
// are the encoder layers adapted, as PEFT's layers_to_transform.
func NewViT(m *model.ViT, opts Options) (*ViTAdapter, error) {
	if len(opts.Targets) == 0 {
		opts.Targets = []string{"query", "value"}
	}
	opts.defaults()
	targets, err := vitTargetsOf(&m.Config, Targets{Names: opts.Targets}, false, nil)
	if err != nil {
		return nil, &OptionError{"Targets", err}
	}
	adapted, err := LayersOf(m.Config.NumLayers, opts.Layers)
	if err != nil {
		return nil, err
	}
	a, err := newViTShape(&m.Config, opts, targets, adapted)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x10ba))
	a.eachLoRA(a.params, func(_ int, pr model.Projection, ab string, v []float32) {
		if bound := 1 / math.Sqrt(float64(pr.In)); ab == "A" {
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

// ViTTargetNames is the target_modules an adapter of a ViT of config c
// made with targets (Options.Targets) on layers (Options.Layers; nil:
// all) saves, and its Targets: PEFT's names of the same linear layers
// (vitPEFTTargets); an error names a target or a layer that is not one.
func ViTTargetNames(c *model.ViTConfig, targets []string, layers []int) ([]string, error) {
	ps, err := vitTargetsOf(c, Targets{Names: targets}, false, nil)
	if err != nil {
		return nil, err
	}
	adapted, err := LayersOf(c.NumLayers, layers)
	if err != nil {
		return nil, err
	}
	return vitPEFTTargets(ps, adapted), nil
}

// vitModulesOther are the modules of a ViTForImageClassification other
// than its encoder layers' linear layers and its classifier (its
// named_modules in transformers 4.51), by full name: those outside the
// layers, and those of each layer (after "vit.encoder.layer.N").
var vitModulesOther = [2][]string{
	{"vit", "vit.embeddings", "vit.embeddings.patch_embeddings", "vit.embeddings.patch_embeddings.projection",
		"vit.embeddings.dropout", "vit.encoder", "vit.encoder.layer", "vit.layernorm"},
	{"", ".attention", ".attention.attention", ".attention.output", ".attention.output.dropout", ".intermediate",
		".intermediate.intermediate_act_fn", ".output", ".output.dropout", ".layernorm_before", ".layernorm_after"},
}

// peftMatch is PEFT's match of a target_modules name to a module's full
// name (check_target_module_exists): the name itself, or its end after a
// ".".
func peftMatch(key, name string) bool {
	return key == name || strings.HasSuffix(key, "."+name)
}

// vitTargetsOf is the linear layers of c's encoder layers that t names as
// PEFT reads a target_modules (peftMatch for a list; AllLinear alone: all
// of them; a regular expression: a module's full name matched whole), in
// the layer's order. A name or the expression must match linear layers
// only, in every layer (an adapter covers every layer), or it is an
// error: one that matches no module, or another module (a norm, a
// container, the patch embedding's convolution), which PEFT would refuse
// or adapt and the forward cannot. loaded says t comes from a saved
// adapter_config.json, where "classifier" may stand (PEFT's all-linear
// lists it; modules_to_save wraps it whole before any LoRA, so it is
// skipped); in Options it is an error: the classifier is trained whole.
//
// layers (increasing; nil: every layer) are layers_to_transform's, read
// as PEFT 0.15's check_target_module_exists reads them for a list of
// names: a name that is a module's full name matches it whatever its
// layer; one that ends a module's name matches it only if the module's
// layer index (vitLayerIndex) is one of layers. Each projection must then
// be matched in exactly those layers or in none (the adapter's shape).
// (PEFT refuses layers_to_transform with a regular expression or
// all-linear: LoadViT refuses them before.)
func vitTargetsOf(c *model.ViTConfig, t Targets, loaded bool, layers []int) ([]model.Projection, error) {
	all := c.Projections()
	if t.Regex == "" && slices.Equal(t.Names, []string{AllLinear}) {
		return all, nil
	}
	inLayers := func(key string) bool {
		l := vitLayerIndex(key)
		return layers == nil || l >= 0 && slices.Contains(layers, l)
	}
	if t.Regex == "" && len(t.Names) == 0 {
		return nil, fmt.Errorf("no target module: name one or more of %v, or %s alone", vitTargets, AllLinear)
	}
	type matcher struct {
		what     string // the target, as an error names it
		match    func(key string) bool
		notFound string // its error when it matches no module
	}
	var matchers []matcher
	if t.Regex != "" { // the classifier, if it matches, is modules_to_save's: vitModules leaves it out
		re, err := compileTargets(t.Regex)
		if err != nil {
			return nil, err
		}
		what := fmt.Sprintf("target_modules %s (a regular expression, matched whole)", clip.Quote(t.Regex))
		matchers = append(matchers, matcher{what, re.MatchString,
			fmt.Sprintf("%s matches no linear layer of the ViT's encoder (vit.encoder.layer.N.<module>: %v)", what, vitTargets)})
	}
	for _, name := range t.Names {
		if name == "classifier" {
			if loaded {
				continue
			}
			return nil, fmt.Errorf("target module \"classifier\": a ViT adapter trains the classifier whole (PEFT's modules_to_save), not with LoRA; name the encoder's linear layers (%v, or %s alone)", vitTargets, AllLinear)
		}
		if name == AllLinear {
			return nil, fmt.Errorf("target module %q is PEFT's shorthand for every linear layer: give it alone", AllLinear)
		}
		what := "target module " + clip.Quote(name)
		match := func(key string) bool { return key == name || strings.HasSuffix(key, "."+name) && inLayers(key) }
		matchers = append(matchers, matcher{what, match,
			fmt.Sprintf("%s is no linear layer of the ViT's encoder (vit.encoder.layer.N.<module>; names: %v, or %s alone)%s", what, vitTargets, AllLinear, inLayersHint(layers))})
	}
	covered := make([][]bool, len(all)) // by projection, the layers named
	for i := range covered {
		covered[i] = make([]bool, c.NumLayers)
	}
	modules := vitModules(c)
	for _, m := range matchers {
		found := false
		for _, mod := range modules {
			if !m.match(mod.key) {
				continue
			}
			if mod.proj < 0 {
				return nil, fmt.Errorf("%s names %q, which is not a linear layer of the ViT's encoder: PEFT would refuse it or adapt it, and a ViT adapter adapts the encoder's linear layers only (%v, or %s alone)",
					m.what, mod.key, vitTargets, AllLinear)
			}
			covered[mod.proj][mod.layer], found = true, true
		}
		if !found {
			return nil, errors.New(m.notFound)
		}
	}
	want := make([]bool, c.NumLayers) // the layers each projection matched must be
	for l := range want {
		want[l] = layers == nil || slices.Contains(layers, l)
	}
	var ps []model.Projection
	for i, pr := range all {
		switch {
		case countTrue(covered[i]) == 0:
		case !slices.Equal(covered[i], want) && layers == nil:
			return nil, fmt.Errorf("target_modules name %s in %d of the model's %d layers (%v): for an adapter on some layers, name the module (%q) and the layers in layers_to_transform",
				pr.Module, countTrue(covered[i]), c.NumLayers, trueAt(covered[i]), pr.Name)
		case !slices.Equal(covered[i], want):
			return nil, fmt.Errorf("target_modules name %s in layers %v, not in layers_to_transform's %v: every adapted module must be in the same layers (a full name, \"vit.encoder.layer.N.…\", counts whatever layers_to_transform says, as in PEFT)",
				pr.Module, trueAt(covered[i]), layers)
		default:
			ps = append(ps, pr)
		}
	}
	return ps, nil
}

// inLayersHint is what an error about a name that matched nothing adds
// when layers_to_transform restricts the match.
func inLayersHint(layers []int) string {
	if layers == nil {
		return ""
	}
	return fmt.Sprintf(" in layers_to_transform's layers %v", layers)
}

// vitLayerRe is PEFT 0.15's match of a module's layer index when
// layers_pattern is not given (check_target_module_exists:
// re.match(r".*\.[^.]*\.(\d+)\.", key)): the number of the last
// ".name.N." in the key, which for a ViT's modules is the encoder
// layer's (vit.encoder.layer.N.…), and for the layer itself
// ("vit.encoder.layer.N", no "." after N) and the modules outside the
// layers is none. Go's regexp picks the submatch Python's does (leftmost
// first, .* greedy). checkViTPattern allows only layers_pattern that
// give the same index.
var vitLayerRe = regexp.MustCompile(`^.*\.[^.]*\.(\d+)\.`)

// vitLayerIndex is a module's layer index as PEFT reads it (vitLayerRe),
// or −1.
func vitLayerIndex(key string) int {
	m := vitLayerRe.FindStringSubmatch(key)
	if m == nil {
		return -1
	}
	l, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return l
}

// trueAt is the indices of bs that are true.
func trueAt(bs []bool) []int {
	var is []int
	for i, b := range bs {
		if b {
			is = append(is, i)
		}
	}
	return is
}

// vitModule is a module of a ViTForImageClassification by its full name:
// one of its encoder layers' linear layers (proj: its index in
// ViTConfig.Projections, in layer layer), or another module (proj −1).
type vitModule struct {
	key         string
	proj, layer int
}

// vitModules lists the modules of a ViTForImageClassification of config
// c but its classifier (which modules_to_save keeps from LoRA): the
// modules outside the layers first, so that a name matching one of them is
// reported as such.
func vitModules(c *model.ViTConfig) []vitModule {
	var ms []vitModule
	for _, k := range vitModulesOther[0] {
		ms = append(ms, vitModule{k, -1, -1})
	}
	projs := c.Projections()
	for l := range c.NumLayers {
		prefix := fmt.Sprintf("vit.encoder.layer.%d", l)
		for _, k := range vitModulesOther[1] {
			ms = append(ms, vitModule{prefix + k, -1, l})
		}
		for i, pr := range projs {
			ms = append(ms, vitModule{prefix + "." + pr.Module, i, l})
		}
	}
	return ms
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// vitPEFTTargets is the target_modules list that names exactly ps in
// layers (all of the model's, or layers_to_transform's) as PEFT matches
// names (peftMatch; a name that ends a module's only in layers), in the
// layer's order: query, key, value by name; the dense layers as "dense"
// when all three, "output.dense" for attention.output.dense and
// output.dense, else each by its own: attention.output.dense and
// intermediate.dense by those names, output.dense alone by its full name
// in each of layers ("vit.encoder.layer.N.output.dense": "output.dense"
// would name attention.output.dense too).
func vitPEFTTargets(ps []model.Projection, layers []int) []string {
	has := map[model.Proj]bool{}
	for _, p := range ps {
		has[p.Proj] = true
	}
	var names []string
	for _, p := range ps {
		if p.Proj <= model.ProjV {
			names = append(names, p.Name)
		}
	}
	switch o, up, down := has[model.ProjO], has[model.ProjUp], has[model.ProjDown]; {
	case o && up && down:
		names = append(names, "dense")
	case o && down:
		names = append(names, "output.dense")
	default:
		if o {
			names = append(names, "attention.output.dense")
		}
		if up {
			names = append(names, "intermediate.dense")
		}
		if down {
			for _, l := range layers { // (a full name counts whatever layers_to_transform says)
				names = append(names, fmt.Sprintf("vit.encoder.layer.%d.output.dense", l))
			}
		}
	}
	return names
}

// newViTShape allocates a zero adapter of the right shape for a model of
// config c.
func newViTShape(c *model.ViTConfig, opts Options, targets []model.Projection, adapted []int) (*ViTAdapter, error) {
	a, err := planViTShape(c, opts, targets, adapted)
	if err != nil {
		return nil, err
	}
	a.allocate()
	return a, nil
}

// planViTShape is a ViT adapter of the right shape for c on targets (of
// c.Projections, in their order) in layers adapted (increasing, checked by
// LayersOf), its parameters not yet allocated (allocate).
func planViTShape(c *model.ViTConfig, opts Options, targets []model.Projection, adapted []int) (*ViTAdapter, error) {
	if opts.R <= 0 || opts.R > c.HiddenSize {
		return nil, fmt.Errorf("lora: rank %d is not between 1 and the model's hidden size %d", opts.R, c.HiddenSize)
	}
	return &ViTAdapter{opts: opts, targets: targets, layers: c.NumLayers, adapted: adapted, hidden: c.HiddenSize, labels: c.NumLabels}, nil
}

// allocate gives a planned adapter its zero parameters.
func (a *ViTAdapter) allocate() {
	perLayer := 0
	for _, pr := range a.targets {
		perLayer += a.opts.R * (pr.In + pr.Out)
	}
	head := a.labels*a.hidden + a.labels
	if a.opts.GroupByLayer {
		for range a.adapted {
			a.params = append(a.params, make([]float32, perLayer))
		}
		a.params = append(a.params, make([]float32, head))
	} else {
		a.params = [][]float32{make([]float32, perLayer*len(a.adapted)+head)}
	}
}

// checkFile checks, before a planned adapter's parameters are allocated,
// that f holds each of its LoRA matrices in its shape (a rank in
// adapter_config.json far above the file's is an error, not memory for
// matrices that are not there), and returns their names.
func (a *ViTAdapter) checkFile(f *safetensors.File) (map[string]bool, error) {
	names := map[string]bool{}
	for _, l := range a.adapted {
		for _, pr := range a.targets {
			for _, ab := range []string{"A", "B"} {
				rows, cols := a.matrixShape(pr, ab)
				if err := checkMatrix(f, vitTensorName(l, pr, ab), rows, cols); err != nil {
					return nil, err
				}
				names[vitTensorName(l, pr, ab)] = true
			}
		}
	}
	return names, nil
}

// matrixShape is the shape of pr's LoRA matrix ab, "A" or "B".
func (a *ViTAdapter) matrixShape(pr model.Projection, ab string) (rows, cols int) {
	if ab == "B" {
		return pr.Out, a.opts.R
	}
	return a.opts.R, pr.In
}

// eachLoRA calls fn on each LoRA matrix of params in the canonical order.
func (a *ViTAdapter) eachLoRA(params [][]float32, fn func(layer int, pr model.Projection, ab string, v []float32)) {
	off, g := 0, 0
	for i, l := range a.adapted {
		if a.opts.GroupByLayer {
			off, g = 0, i
		}
		for _, pr := range a.targets {
			for _, ab := range []string{"A", "B"} {
				rows, cols := a.matrixShape(pr, ab)
				fn(l, pr, ab, params[g][off:off+rows*cols])
				off += rows * cols
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

// BiasSpan is where the classifier's bias lies in Params: group g's
// coordinates [lo, hi), the last of the last group. A trainer exempts it
// from weight decay, as MeZO's update does every bias.
func (a *ViTAdapter) BiasSpan() (g, lo, hi int) {
	g = len(a.params) - 1
	hi = len(a.params[g])
	return g, hi - a.labels, hi
}

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

// Targets are the target_modules that Save writes: PEFT's names of the
// linear layers the adapter updates (["query", "value"] by default;
// vitPEFTTargets).
func (a *ViTAdapter) Targets() []string { return vitPEFTTargets(a.targets, a.adapted) }

// Layers are the encoder layers the adapter adapts, in increasing order
// (all of them unless it was made or saved with layers_to_transform).
func (a *ViTAdapter) Layers() []int { return slices.Clone(a.adapted) }

// View returns the model's view of params (of the adapter's shape): the
// LoRA updates and the classifier, sharing params' storage.
func (a *ViTAdapter) View(params [][]float32) *model.ViTAdapter {
	v := &model.ViTAdapter{Layers: make([]model.LayerAdapter, a.layers)}
	scale := float32(a.opts.Alpha / float64(a.opts.R))
	if a.opts.RSLoRA {
		scale = float32(a.opts.Alpha / math.Sqrt(float64(a.opts.R)))
	}
	var cur *model.LoRA
	a.eachLoRA(params, func(l int, pr model.Projection, ab string, m []float32) {
		if ab == "A" {
			cur = &model.LoRA{R: a.opts.R, A: m, Scale: scale}
			*v.Layers[l].Slot(pr.Proj) = cur
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
func vitTensorName(layer int, pr model.Projection, ab string) string {
	return fmt.Sprintf("base_model.model.vit.encoder.layer.%d.%s.lora_%s.weight", layer, pr.Module, ab)
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
	a.eachLoRA(params, func(l int, pr model.Projection, ab string, v []float32) {
		rows, cols := a.matrixShape(pr, ab)
		tensors = append(tensors, safetensors.F32Tensor(vitTensorName(l, pr, ab), []int{rows, cols}, v))
	})
	w, b := a.classifier(params)
	tensors = append(tensors, safetensors.F32Tensor(vitClassifierWeight, []int{a.labels, a.hidden}, w),
		safetensors.F32Tensor(vitClassifierBias, []int{a.labels}, b))
	cfg := peftConfig(a.opts, a.Targets(), a.base, nil, []string{"classifier"})
	if len(a.adapted) < a.layers {
		cfg["layers_to_transform"] = a.adapted // (layers_pattern left null: PEFT then finds vit.encoder.layer.N's N)
	}
	return savePEFT(dir, tensors, cfg)
}

// LoadViT reads a PEFT LoRA adapter of a ViT into a trainable adapter
// for m: modules_to_save naming the classifier and no other module
// (vitModulesToSave); target_modules a list of names of the encoder
// layers' linear layers as PEFT matches them (full names such as PEFT
// saves for all-linear on a small model included), "all-linear", or a
// regular expression (vitTargetsOf). A tensor missing, of the wrong shape
// or with no place in the model is an error naming it.
func LoadViT(dir string, m *model.ViT, groupByLayer bool) (*ViTAdapter, error) {
	cfg, err := readPEFTConfig(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return nil, err
	}
	if err := vitModulesToSave(&m.Config, cfg.ModulesToSave); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	if !slices.ContainsFunc(cfg.ModulesToSave, func(s string) bool { return strings.HasSuffix("classifier", s) }) { // as PEFT matches it
		hint := ""
		if len(cfg.ModulesToSave) == 0 && slices.ContainsFunc(cfg.TargetModules.Names, func(t string) bool { return strings.HasSuffix(t, "_proj") }) {
			hint = fmt.Sprintf(" (targets %s: a decoder model's adapter, not a ViT's)", clip.Raw(fmt.Sprintf("%q", cfg.TargetModules.Names)))
		}
		return nil, fmt.Errorf("adapter %s: modules_to_save is %q; a ViT adapter trains the classifier ([\"classifier\"])%s", dir, cfg.ModulesToSave, hint)
	}
	if err := checkViTPattern(cfg.layersPatterns); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	if cfg.Layers != nil && (cfg.TargetModules.Regex != "" || slices.Equal(cfg.TargetModules.Names, []string{AllLinear})) {
		// PEFT 0.15's LoraConfig refuses them together: "`layers_to_transform`
		// cannot be used when `target_modules` is a str".
		return nil, fmt.Errorf("adapter %s: layers_to_transform %v with target_modules the string %s: PEFT refuses them together (\"`layers_to_transform` cannot be used when `target_modules` is a str\"); name the modules in a list (%q, …)",
			dir, cfg.Layers, clip.Quote(cmp.Or(cfg.TargetModules.Regex, AllLinear)), "query")
	}
	adapted, err := LayersOf(m.Config.NumLayers, cfg.Layers)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: layers_to_transform: %w", dir, errors.Unwrap(err))
	}
	targets, err := vitTargetsOf(&m.Config, cfg.TargetModules, true, cfg.Layers)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	if len(targets) == 0 { // ["classifier"] alone
		return nil, fmt.Errorf("adapter %s: target_modules %s names no linear layer of the ViT's encoder", dir, clip.Raw(fmt.Sprintf("%q", cfg.TargetModules.Names)))
	}
	a, err := planViTShape(&m.Config, Options{R: cfg.R, Alpha: cfg.LoraAlpha, Targets: cfg.TargetModules.Names, Layers: cfg.Layers, GroupByLayer: groupByLayer, RSLoRA: cfg.UseRSLoRA}, targets, adapted)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	a.base = cfg.BaseModel
	path := filepath.Join(dir, peftweights.File)
	f, err := peftweights.Open(dir)
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
	a.eachLoRA(a.params, func(l int, pr model.Projection, ab string, v []float32) {
		rows, cols := a.matrixShape(pr, ab)
		load(vitTensorName(l, pr, ab), rows, cols, v)
	})
	w, b := a.classifier(a.params)
	load(vitClassifierWeight, a.labels, a.hidden, w)
	load(vitClassifierBias, 0, a.labels, b)
	if err != nil {
		return nil, err
	}
	for _, t := range f.Tensors() {
		if read[t.Name] {
			continue
		}
		if l := vitLayerIndex(strings.TrimPrefix(t.Name, "base_model.model.")); l >= 0 && l < a.layers && !slices.Contains(a.adapted, l) {
			return nil, fmt.Errorf("adapter %s: tensor %q is for layer %d, which its layers_to_transform %v leaves out", path, t.Name, l, a.adapted)
		}
		return nil, fmt.Errorf("adapter %s: tensor %q has no place in this %d-layer ViT adapter of %v", path, t.Name, a.layers, a.Targets())
	}
	return a, nil
}

// checkViTPattern refuses a layers_pattern (as a list, nil: none) that
// does not find a ViT's encoder layers as PEFT 0.15 looks for them
// (re.match(rf".*\.{pattern}\.(\d+)\.", key), each pattern in turn): the
// encoder's layers are vit.encoder.layer.N, so a list must hold "layer",
// the only plain name followed by a layer number in the ViT's module
// names (PEFT's default, none, finds the same: vitLayerRe); a pattern with
// regular-expression syntax is not read here.
func checkViTPattern(patterns []string) error {
	if patterns == nil {
		return nil
	}
	for _, p := range patterns {
		if regexp.QuoteMeta(p) != p {
			return fmt.Errorf("layers_pattern %s is a regular expression, which this loader does not read: for a ViT give \"layer\" (its encoder's vit.encoder.layer.N) or null", clip.Quote(p))
		}
	}
	if !slices.Contains(patterns, "layer") {
		return fmt.Errorf("layers_pattern %s finds no layer of a ViT, whose encoder's layers are vit.encoder.layer.N (PEFT would adapt no module: \"Target modules … not found\"): give \"layer\" or null", clip.Raw(fmt.Sprintf("%q", patterns)))
	}
	return nil
}

// vitModulesToSave checks modules_to_save as PEFT 0.15 matches it
// (_set_trainable: every module whose full name ends with an entry, no "."
// needed) against c's modules: an entry that names a module other than
// the classifier is an error (PEFT would train it whole; the forward
// cannot); one that names none is skipped, as PEFT skips it (task_type
// SEQ_CLS adds "classifier" and "score", and a ViT has no score). LoadViT
// then requires the classifier among what it names.
func vitModulesToSave(c *model.ViTConfig, names []string) error {
	modules := vitModules(c)
	for _, name := range names {
		for _, mod := range modules {
			if strings.HasSuffix(mod.key, name) {
				return fmt.Errorf("modules_to_save %s names %q (PEFT trains every module whose name ends with it whole): a ViT adapter trains the classifier whole, nothing else", clip.Quote(name), mod.key)
			}
		}
	}
	return nil
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
