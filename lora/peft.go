// Package lora reads and writes PEFT LoRA adapters and attaches them to a
// model: y = W x + (alpha/r)·B(A x) on the target projections.
package lora

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/jsonkeys"
	"github.com/meazo-go/meazo/internal/peftweights"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// PEFTConfig is the part of PEFT's adapter_config.json that changes the
// computation.
type PEFTConfig struct {
	PeftType      string  `json:"peft_type"`
	TaskType      string  `json:"task_type"`
	R             int     `json:"r"`
	LoraAlpha     float64 `json:"lora_alpha"`
	LoraDropout   float64 `json:"lora_dropout"`
	TargetModules Targets `json:"target_modules"`
	Bias          string  `json:"bias"`
	UseRSLoRA     bool    `json:"use_rslora"`
	UseDoRA       bool    `json:"use_dora"`
	FanInFanOut   bool    `json:"fan_in_fan_out"`
	LoraBias      bool    `json:"lora_bias"`
	// Fields that change the computation per layer; only empty values are supported.
	AlphaPattern map[string]any `json:"alpha_pattern"`
	RankPattern  map[string]any `json:"rank_pattern"`
	// The layers adapted: one index, a list, or null for all (Layers has
	// them, read by readPEFTConfig); layers_pattern names the module list
	// the index counts in: null or "layers" (the only one these models have).
	LayersToTransform any   `json:"layers_to_transform"`
	LayersPattern     any   `json:"layers_pattern"`
	Layers            []int `json:"-"`
	// layersPatterns is layers_pattern as a list (nil: none given, or an
	// empty one, which PEFT reads as any module list): each name is
	// checked against the model by its loader (checkDecoderPattern,
	// checkViTPattern).
	layersPatterns []string
	// Other weights trained alongside (a whole lm_head, some embedding
	// rows) and saved in the adapter file; not supported.
	ModulesToSave         []string `json:"modules_to_save"`
	TrainableTokenIndices any      `json:"trainable_token_indices"`
	BaseModel             string   `json:"base_model_name_or_path"`
}

// Targets is PEFT's target_modules: a list of module names (a name is also
// matched as the end of a module's full name: "self_attn.q_proj"), or one
// string, a regular expression that a module's full name must match whole
// (PEFT's re.fullmatch; "all-linear" as a string, in any case, is PEFT's
// all-linear).
type Targets struct {
	Names []string
	Regex string // "" for a list
	// listedAllLinear is an entry of a list that spells "all-linear" (in
	// any case): PEFT 0.15 expands all-linear only from a string, and reads
	// the entry as a module's name, which no module has (readPEFTConfig
	// refuses it).
	listedAllLinear string
}

// UnmarshalJSON reads target_modules: a list of strings, or one string.
func (t *Targets) UnmarshalJSON(b []byte) error {
	*t = Targets{}
	if err := json.Unmarshal(b, &t.Names); err == nil {
		if i := slices.IndexFunc(t.Names, func(n string) bool { return strings.EqualFold(n, AllLinear) }); i >= 0 {
			t.listedAllLinear = t.Names[i]
		}
		return nil
	}
	if err := json.Unmarshal(b, &t.Regex); err != nil {
		return fmt.Errorf("target_modules is %s: want a list of module names or one regular expression", clip.Raw(string(b)))
	}
	if strings.EqualFold(t.Regex, AllLinear) { // PEFT lower-cases the string before it compares
		*t = Targets{Names: []string{AllLinear}}
	}
	return nil
}

// peftConfig is the adapter_config.json that PEFT writes for a LoRA
// adapter made with o: taskType is "CAUSAL_LM" for a decoder, nil (null)
// for a ViT; modulesToSave names the modules trained whole beside it.
func peftConfig(o Options, targets []string, base string, taskType any, modulesToSave []string) map[string]any {
	return map[string]any{
		"peft_type":               "LORA",
		"task_type":               taskType,
		"r":                       o.R,
		"lora_alpha":              o.Alpha,
		"lora_dropout":            0.0,
		"target_modules":          targets,
		"bias":                    "none",
		"base_model_name_or_path": base,
		"fan_in_fan_out":          false,
		"use_rslora":              o.RSLoRA,
		"use_dora":                false,
		"init_lora_weights":       true,
		"inference_mode":          true,
		"modules_to_save":         modulesToSave,
	}
}

// savePEFT writes a PEFT adapter directory: tensors as
// adapter_model.safetensors and cfg as adapter_config.json, both
// atomically.
func savePEFT(dir string, tensors []safetensors.Tensor, cfg map[string]any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save adapter: %w", err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, peftweights.File), tensors, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "adapter_config.json"), b)
}

// peftKeys are the keys of adapter_config.json that ReadPEFTConfig reads
// and checks (PEFTConfig's), and those of PEFT 0.15's LoraConfig that do
// not change what a saved adapter computes (its initialisation, the base
// model's revision, megatron_core without megatron_config). Any other key
// set to something is refused
// (exclude_modules, layer_replication, megatron_config, and whatever a
// newer PEFT adds).
var peftKeys = map[string]bool{
	"peft_type": true, "task_type": true, "r": true, "lora_alpha": true, "lora_dropout": true, "target_modules": true,
	"bias": true, "use_rslora": true, "use_dora": true, "fan_in_fan_out": true, "lora_bias": true, "alpha_pattern": true,
	"rank_pattern": true, "layers_to_transform": true, "layers_pattern": true, "modules_to_save": true,
	"trainable_token_indices": true, "base_model_name_or_path": true,
	"inference_mode": true, "init_lora_weights": true, "revision": true, "auto_mapping": true, "loftq_config": true,
	"eva_config": true, "corda_config": true, "megatron_core": true, "runtime_config": true,
}

// Scale is the factor PEFT multiplies B(Ax) by: alpha/r, or alpha/√r with rsLoRA.
func (c *PEFTConfig) Scale() float32 {
	if c.UseRSLoRA {
		return float32(c.LoraAlpha / math.Sqrt(float64(c.R)))
	}
	return float32(c.LoraAlpha / float64(c.R))
}

// SupportedTargets lists the target names an adapter of a decoder model
// may give, whatever the model: the projections of Llama's layers (and
// Qwen's, Mistral's), then OPT's names of its own, then AllLinear. Which
// of them a model has is checked against the model (New, Load).
func SupportedTargets() []string {
	var names []string
	for _, arch := range []string{"LlamaForCausalLM", "OPTForCausalLM"} {
		for _, p := range (&model.Config{Architecture: arch}).Projections() {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	return append(names, AllLinear)
}

// ReadPEFTConfig reads and checks adapter_config.json for a decoder
// model: the checks every adapter passes (readPEFTConfig), no
// modules_to_save, and targets among SupportedTargets (a module path,
// "model.layers.0.self_attn.q_proj", by its last part: targetPaths).
func ReadPEFTConfig(path string) (*PEFTConfig, error) {
	c, err := readPEFTConfig(path)
	if err != nil {
		return nil, err
	}
	if len(c.ModulesToSave) > 0 {
		hint := ""
		if slices.Contains(c.ModulesToSave, "classifier") {
			hint = "; an adapter that saves the classifier is an image classifier's (a ViT), not a decoder model's"
		}
		names := make([]string, 0, 4)
		for i, s := range c.ModulesToSave {
			if i == 3 {
				names = append(names, fmt.Sprintf("… (%d more)", len(c.ModulesToSave)-3))
				break
			}
			names = append(names, clip.Raw(s))
		}
		return nil, fmt.Errorf("adapter config %s: modules_to_save [%s] is not supported for a decoder model (only LoRA matrices)%s", path, strings.Join(names, " "), hint)
	}
	if err := c.checkDecoderPattern(); err != nil {
		return nil, fmt.Errorf("adapter config %s: %w", path, err)
	}
	supported := SupportedTargets()
	for _, t := range c.TargetModules.Names {
		// A path ("model.layers.0.self_attn.q_proj") names a module by its
		// last part; which layers it covers, targetPaths finds.
		if !slices.Contains(supported, t[strings.LastIndex(t, ".")+1:]) {
			return nil, fmt.Errorf("adapter config %s: target module %s is not supported (supported: %v)", path, clip.Quote(t), supported)
		}
	}
	return c, nil
}

// targetPaths turns target_modules as PEFT may save them into the names
// of the projections of c's layers they cover. PEFT matches a target to a
// module whose name is the target or ends with "." and the target, and
// saves the full names ("model.layers.0.self_attn.q_proj") of what
// target_modules="all-linear" found when they are fewer than 20 (PEFT
// 0.15: tuners_utils.py, MIN_TARGET_MODULES_FOR_OPTIMIZATION): a model of
// two Llama layers, or three OPT ones. A regular expression must match a
// module's full name whole (re.fullmatch; Go's regexp reads most of
// Python's). Bare names (and AllLinear) pass as they are, checked against
// c by targetsOf; a path or an expression must cover its projections in
// every layer, together with the other paths (an adapter on some layers
// names them in layers_to_transform, its projections by name).
func targetPaths(c *model.Config, t Targets) ([]string, error) {
	var names, labels []string
	var matches []func(key string) bool
	if t.Regex != "" {
		re, err := compileTargets(t.Regex)
		if err != nil {
			return nil, err
		}
		if other := otherModule(c, re); other != "" {
			return nil, fmt.Errorf("target_modules %s is a regular expression that also matches %s, a module that is not one of the layers' projections: PEFT would adapt it or refuse it, and this loader adapts projections only; match the projections alone, e.g. %q",
				clip.Quote(t.Regex), other, `.*\.(q_proj|v_proj)`)
		}
		matches, labels = append(matches, re.MatchString), append(labels, clip.Quote(t.Regex))
	}
	for _, name := range t.Names {
		if !strings.Contains(name, ".") {
			names = append(names, name)
			continue
		}
		matches = append(matches, func(key string) bool { return key == name || strings.HasSuffix(key, "."+name) })
		labels = append(labels, clip.Quote(name))
	}
	type module struct {
		key, name string // "model.layers.3.self_attn.q_proj", "q_proj"
		layer     int
	}
	var modules []module // every projection of every layer, by its full name (formed once, not per target)
	for _, p := range c.Projections() {
		for l := range c.NumLayers {
			modules = append(modules, module{fmt.Sprintf("%s.%d.%s", c.LayersName(), l, p.Module), p.Name, l})
		}
	}
	layers := map[string]map[int]bool{} // the layers the paths cover, by projection
	for i, match := range matches {
		found := false
		for _, mod := range modules {
			if match(mod.key) {
				found = true
				if layers[mod.name] == nil {
					layers[mod.name] = map[int]bool{}
				}
				layers[mod.name][mod.layer] = true
			}
		}
		if !found && t.Regex != "" && i == 0 {
			return nil, noProjectionMatched(c, t.Regex)
		}
		if !found {
			return nil, fmt.Errorf("target module %s is no projection of this model's layers (%s.N.<module>)", labels[i], c.LayersName())
		}
	}
	for _, p := range c.Projections() {
		switch n := len(layers[p.Name]); {
		case n == 0 || slices.Contains(names, p.Name):
		case n != c.NumLayers:
			return nil, fmt.Errorf("target_modules name %s in %d of the model's %d layers: for an adapter on some layers, name the projections (%q) and the layers in layers_to_transform", p.Name, n, c.NumLayers, p.Name)
		default:
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// compileTargets compiles target_modules' regular expression as PEFT
// matches it: against a module's full name whole (re.fullmatch).
func compileTargets(expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) { // (its message holds the whole expression)
			err = fmt.Errorf("%s in %s", se.Code, clip.Quote(se.Expr))
		}
		return nil, fmt.Errorf("target_modules %s is a regular expression Go's regexp cannot read (no lookaround, no backreferences): %w", clip.Quote(expr), err)
	}
	return re, nil
}

// otherModule returns the first module of c other than its projections
// that re matches, or "". PEFT matches an expression against the name of
// every module but the root (whose name is empty): the containers (the
// model, its layers, their blocks), norms and activations it refuses
// ("Target module SiLU() is not supported"), the embeddings and the head
// it adapts, and this loader does neither.
func otherModule(c *model.Config, re *regexp.Regexp) string {
	for _, m := range otherModules(c) {
		if re.MatchString(m) {
			return strconv.Quote(m)
		}
	}
	return ""
}

// otherModules are the names of the modules of c's transformers model
// (named_modules) other than its layers' projections: the model's
// containers, embeddings, final norm, rotary embedding and head, and
// each layer's container, blocks, norms and activation.
func otherModules(c *model.Config) []string {
	layers := c.LayersName()
	base := strings.TrimSuffix(layers, ".layers")
	var others []string
	for i, r := range layers { // "model", "model.decoder", …
		if r == '.' {
			others = append(others, layers[:i])
		}
	}
	others = append(others, layers, base+".embed_tokens", "lm_head")
	var perLayer []string // within a layer
	if c.IsOPT() {
		others = append(others, base+".embed_positions")
		if !c.NoFinalNorm {
			others = append(others, base+".final_layer_norm")
		}
		if c.WordEmbedDim > 0 && c.WordEmbedDim != c.HiddenSize {
			others = append(others, base+".project_out", base+".project_in")
		}
		perLayer = []string{"self_attn", "activation_fn", "self_attn_layer_norm", "final_layer_norm"}
	} else {
		others = append(others, base+".norm", base+".rotary_emb")
		perLayer = []string{"self_attn", "mlp", "mlp.act_fn", "input_layernorm", "post_attention_layernorm"}
		if c.QKNorm {
			perLayer = append(perLayer, "self_attn.q_norm", "self_attn.k_norm")
		}
	}
	for l := range c.NumLayers {
		others = append(others, fmt.Sprintf("%s.%d", layers, l))
		for _, m := range perLayer {
			others = append(others, fmt.Sprintf("%s.%d.%s", layers, l, m))
		}
	}
	return others
}

// noProjectionMatched is targetPaths' error for a regular expression that
// matches none of c's projections. A string target_modules is an
// expression on the full name, so "q_proj" written as a string (not in a
// list) matches nothing, as in PEFT ("Target modules q_proj not found"):
// the error says so, and how to name the module.
func noProjectionMatched(c *model.Config, re string) error {
	hint := ""
	if regexp.QuoteMeta(re) == re && len(re) <= clip.Max {
		hint = fmt.Sprintf(`; to name the module in every layer, give a list: [%q]`, re)
	}
	return fmt.Errorf("target_modules %s is a string, which PEFT reads as a regular expression that a module's full name must match whole (re.fullmatch): it matches no projection of this model's layers (%s.N.<module>)%s",
		clip.Quote(re), c.LayersName(), hint)
}

// readPEFTConfig reads adapter_config.json and refuses what no loader of
// this package applies.
func readPEFTConfig(path string) (*PEFTConfig, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load adapter config: %w", err)
	}
	var c PEFTConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("adapter config %s: invalid JSON: %w", path, err)
	}
	if key, v := jsonkeys.Unapplied(b, peftKeys); key != "" {
		return nil, fmt.Errorf("adapter config %s: %s is %s, which this loader does not apply (the adapter would compute something else than its config says); remove the key if it was not meant to change anything", path, key, v)
	}
	switch {
	case c.PeftType != "LORA":
		return nil, fmt.Errorf("adapter config %s: peft_type %s, want LORA", path, clip.Quote(c.PeftType))
	case len(c.TargetModules.Names) == 0 && c.TargetModules.Regex == "":
		// An adapter on no module would load as one that changes nothing,
		// and score the base model under the adapter's name.
		return nil, fmt.Errorf("adapter config %s: target_modules is missing or empty: name the modules the adapter's matrices are for, e.g. [\"q_proj\", \"v_proj\"] (PEFT refuses it too)", path)
	case c.TargetModules.listedAllLinear != "":
		// PEFT 0.15 refuses ["all-linear"] ("Target modules {'all-linear'}
		// not found in the base model") and skips the entry beside names
		// that match: neither is every linear layer.
		return nil, fmt.Errorf("adapter config %s: target_modules %s is a list holding %q, which PEFT reads as the name of a module, not as its all-linear (no module has that name: PEFT refuses [\"all-linear\"] and ignores it beside other names); for every linear layer write the string \"all-linear\", not a list",
			path, clip.Raw(fmt.Sprintf("%q", c.TargetModules.Names)), c.TargetModules.listedAllLinear)
	case c.R <= 0:
		return nil, fmt.Errorf("adapter config %s: r must be positive, got %d", path, c.R)
	case c.UseDoRA:
		return nil, fmt.Errorf("adapter config %s: use_dora is not supported", path)
	case c.FanInFanOut:
		return nil, fmt.Errorf("adapter config %s: fan_in_fan_out is not supported", path)
	case c.Bias != "" && c.Bias != "none":
		return nil, fmt.Errorf("adapter config %s: bias %s is not supported (only \"none\")", path, clip.Quote(c.Bias))
	case c.LoraBias:
		return nil, fmt.Errorf("adapter config %s: lora_bias is not supported", path)
	case len(c.AlphaPattern) > 0 || len(c.RankPattern) > 0:
		return nil, fmt.Errorf("adapter config %s: alpha_pattern/rank_pattern (per-layer rank or alpha) are not supported", path)
	case c.TrainableTokenIndices != nil:
		return nil, fmt.Errorf("adapter config %s: trainable_token_indices is not supported (only LoRA matrices)", path)
	}
	if err := c.readLayers(); err != nil {
		return nil, fmt.Errorf("adapter config %s: %w", path, err)
	}
	return &c, nil
}

// readLayers reads layers_to_transform (an index, or a list of them) into
// Layers and layers_pattern (a name, or a list of them) into
// layersPatterns, and refuses a layers_pattern without layers_to_transform,
// as PEFT 0.15's LoraConfig does ("When `layers_pattern` is specified,
// `layers_to_transform` must also be specified"; null, [] and 0 count as
// not specified there). Whether the pattern names the model's layers, its
// loader checks.
func (c *PEFTConfig) readLayers() error {
	switch p := c.LayersPattern.(type) {
	case nil:
	case string:
		if p != "" {
			c.layersPatterns = []string{p}
		}
	case []any:
		for _, x := range p {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("layers_pattern %v: want a module list's name, or a list of them", clip.Raw(fmt.Sprint(p)))
			}
			c.layersPatterns = append(c.layersPatterns, s)
		}
	default:
		return fmt.Errorf("layers_pattern %v: want a module list's name, or a list of them", clip.Raw(fmt.Sprint(p)))
	}
	list, isList := c.LayersToTransform.([]any)
	if unset := c.LayersToTransform == nil || c.LayersToTransform == float64(0) || isList && len(list) == 0; c.layersPatterns != nil && unset {
		return fmt.Errorf("layers_pattern %s without layers_to_transform (it is %v): PEFT refuses it (\"When `layers_pattern` is specified, `layers_to_transform` must also be specified\"); give the layers, or remove layers_pattern", c.patternText(), c.LayersToTransform)
	}
	index := func(v any) (int, error) {
		f, ok := v.(float64)
		if !ok || f != float64(int(f)) || f < 0 || f > 1<<20 {
			return 0, fmt.Errorf("layers_to_transform %v: want a layer index or a list of them", c.LayersToTransform)
		}
		return int(f), nil
	}
	switch v := c.LayersToTransform.(type) {
	case nil:
		return nil
	case []any:
		// An empty list is every layer, as PEFT 0.15 reads it
		// (check_target_module_exists uses the indices only when the list
		// is not empty) and saves it (get_peft_model with
		// layers_to_transform=[] adapts every layer and writes []).
		if len(v) == 0 {
			return nil
		}
		for _, x := range v {
			l, err := index(x)
			if err != nil {
				return err
			}
			c.Layers = append(c.Layers, l)
		}
		// PEFT asks whether a module's layer is in the list: an index
		// given twice is the same layer.
		c.Layers = slices.Compact(slices.Sorted(slices.Values(c.Layers)))
		return nil
	default:
		l, err := index(v)
		c.Layers = []int{l}
		return err
	}
}

// patternText is layers_pattern as an error quotes it: a string quoted, a
// list of them as Go quotes one, clipped.
func (c *PEFTConfig) patternText() string {
	if p, ok := c.LayersPattern.(string); ok {
		return clip.Quote(p)
	}
	return clip.Raw(fmt.Sprintf("%q", c.layersPatterns))
}

// checkDecoderPattern refuses a layers_pattern other than a decoder's
// layers ("layers": model.layers, model.decoder.layers,
// model.language_model.layers).
func (c *PEFTConfig) checkDecoderPattern() error {
	if c.layersPatterns != nil && !slices.Equal(c.layersPatterns, []string{"layers"}) {
		return fmt.Errorf("layers_pattern %s is not supported (only the decoder layers: \"layers\")", c.patternText())
	}
	return nil
}

// tensorName is PEFT's saved key for one adapter matrix (adapter name
// dropped) of the projection at module (model.Projection.Module) in a
// model whose decoder layers are named layers (model.Config.LayersName).
func tensorName(layers string, layer int, module, ab string) string {
	return fmt.Sprintf("base_model.model.%s.%d.%s.lora_%s.weight", layers, layer, module, ab)
}

// visionTowerPrefix is where PEFT puts the LoRA matrices of a
// Mistral3ForConditionalGeneration's vision tower: its q_proj/v_proj match
// the same target_modules, so an adapter made with PEFT on the whole
// checkpoint (the paper's count, 11,403,264) holds them. The vision tower
// never runs on text, so they change nothing this package computes: Load
// skips them.
const visionTowerPrefix = "base_model.model.model.vision_tower."

// LoadPEFT reads a PEFT adapter directory (adapter_config.json and
// adapter_model.safetensors) and attaches it to m, replacing any adapter
// already there.
func LoadPEFT(dir string, m *model.Model) (*PEFTConfig, error) {
	a, cfg, err := load(dir, m, false)
	if err != nil {
		return nil, err
	}
	a.Attach(m)
	return cfg, nil
}

// readMatrix reads the tensor name of shape [rows cols].
func readMatrix(f *safetensors.File, name string, rows, cols int) ([]float32, error) {
	if err := checkMatrix(f, name, rows, cols); err != nil {
		return nil, err
	}
	return f.Float32(name)
}

// missingLayerHint is what a missing tensor of a layer suggests when the
// file holds nothing of that layer: the adapter was made for a model of
// fewer layers, or for some layers without saying which. "" otherwise.
func missingLayerHint(f *safetensors.File, name string) string {
	layer := func(n string) int {
		_, rest, ok := strings.Cut(n, ".layers.")
		if !ok {
			return -1
		}
		i := strings.IndexByte(rest, '.')
		l, err := strconv.Atoi(rest[:max(i, 0)])
		if err != nil {
			return -1
		}
		return l
	}
	want, last := layer(name), -1
	if want < 0 {
		return ""
	}
	for _, t := range f.Tensors() {
		l := layer(t.Name)
		if l == want {
			return ""
		}
		last = max(last, l)
	}
	switch {
	case last < 0:
		return ""
	case last < want:
		return fmt.Sprintf(": the file has no tensor past layer %d, as an adapter for a model of %d layers (another model) has", last, last+1)
	}
	return fmt.Sprintf(": the file has no tensor of layer %d (an adapter on some layers whose adapter_config.json lacks their layers_to_transform?)", want)
}

// checkMatrix checks that f holds a tensor name of shape [rows cols].
func checkMatrix(f *safetensors.File, name string, rows, cols int) error {
	info, ok := f.Info(name)
	if !ok {
		return fmt.Errorf("adapter %s: missing tensor %q%s", f.Path(), name, missingLayerHint(f, name))
	}
	if len(info.Shape) != 2 || info.Shape[0] != rows || info.Shape[1] != cols {
		return fmt.Errorf("adapter %s: tensor %q has shape %v, want [%d %d]", f.Path(), name, info.Shape, rows, cols)
	}
	return nil
}
