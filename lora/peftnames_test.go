package lora

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// TestLoadPEFTModulePaths: target_modules as PEFT writes them when they
// are paths rather than bare names load as the projections they match.
// PEFT 0.15's get_peft_model with target_modules="all-linear" sets
// target_modules to the full names of the linear modules
// (tuners_utils.py, _maybe_include_all_linear_layers) and shortens them to
// bare names only when there are 20 or more (MIN_TARGET_MODULES_FOR_
// OPTIMIZATION): on a model of 2 Llama layers (14 projections) or of 3 OPT
// layers (18: the committed opt-tiny) its saved adapter_config.json lists
// "model.layers.0.self_attn.q_proj", … . PEFT matches a target to a module
// whose name is the target or ends with "." + the target, so
// "self_attn.q_proj" is q_proj of every layer; a list of paths that leaves
// out a projection of some layers is refused with how to say that
// (layers_to_transform).
func TestLoadPEFTModulePaths(t *testing.T) {
	llama, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := model.Load(filepath.Join("..", "model", "testdata", "opt", "opt-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	// paths is PEFT's full module name of every projection of every layer of m.
	paths := func(m *model.Model, layers ...int) []string {
		var names []string
		for _, l := range layers {
			for _, p := range m.Projections() {
				names = append(names, fmt.Sprintf("%s.%d.%s", m.LayersName(), l, p.Module))
			}
		}
		return names
	}
	for _, tc := range []struct {
		name    string
		m       *model.Model
		targets []string // as saved
		file    any      // target_modules in adapter_config.json: a list, or a regular expression
		want    string   // an error containing it; "" loads, as targets
	}{
		{"llama all-linear, PEFT's paths", llama, []string{AllLinear}, paths(llama, 0, 1), ""},
		{"opt-tiny all-linear, PEFT's paths", opt, []string{AllLinear}, paths(opt, 0, 1, 2), ""},
		{"suffixes", llama, []string{"q_proj", "v_proj"}, []string{"self_attn.q_proj", "v_proj", "model.layers.1.self_attn.q_proj"}, ""},
		{"one layer of two", llama, []string{AllLinear}, paths(llama, 0), "name q_proj in 1 of the model's 2 layers: for an adapter on some layers, name the projections (\"q_proj\") and the layers in layers_to_transform"},
		// PEFT 0.15 expands all-linear from a string only: get_peft_model
		// refuses the list ["all-linear"] ("Target modules {'all-linear'}
		// not found in the base model") and, beside q_proj, adapts q_proj
		// alone (checked on the tiny ViT, scripts/make_vit_lora_fixture.py's
		// model).
		{"all-linear in a list", llama, []string{AllLinear}, []string{"all-linear"}, `a list holding "all-linear", which PEFT reads as the name of a module`},
		{"ALL-LINEAR in a list", llama, []string{AllLinear}, []string{"ALL-LINEAR"}, `write the string "all-linear", not a list`},
		{"all-linear in a list beside a name", llama, []string{"q_proj"}, []string{"q_proj", "all-linear"}, `write the string "all-linear", not a list`},
		{"no such module", llama, []string{"q_proj"}, []string{"model.layers.0.self_attn.qkv_proj"}, `target module "model.layers.0.self_attn.qkv_proj" is not supported`},
		{"another model's path", llama, []string{"q_proj"}, []string{"model.decoder.layers.0.fc1"}, `target module "model.decoder.layers.0.fc1" is no projection of this model's layers (model.layers.N.<module>)`},
		{"a regular expression", llama, []string{"q_proj", "down_proj"}, `.*\.(q_proj|down_proj)`, ""},
		{"opt-tiny, a regular expression", opt, []string{"out_proj", "fc2"}, `model\.decoder\.layers\.\d+\.(self_attn\.out_proj|fc2)`, ""},
		{"all-linear as a string", llama, []string{AllLinear}, "all-linear", ""},
		{"an expression of one layer", llama, []string{AllLinear}, `model\.layers\.0\..*_proj`, "name q_proj in 1 of the model's 2 layers"},
		// PEFT matches an expression against every module: containers are
		// refused there ("Target module LlamaAttention(...) is not
		// supported"), the embeddings and the head adapted.
		{"an expression matching everything", llama, []string{"q_proj"}, `.*`, `target_modules ".*" is a regular expression that also matches "model", a module that is not one of the layers' projections`},
		{"an expression matching a layer's blocks", llama, []string{"q_proj"}, `model\.layers\.0\..*`, `also matches "model.layers.0.self_attn"`},
		{"an expression matching the embeddings", llama, []string{"q_proj"}, `.*embed_tokens|.*q_proj`, `also matches "model.embed_tokens"`},
		{"opt-tiny, an expression matching its head", opt, []string{"fc1"}, `.*(fc1|lm_head)`, `also matches "lm_head"`},
		{"an expression matching a part only", llama, []string{"q_proj"}, `q_proj`, `target_modules "q_proj" is a string, which PEFT reads as a regular expression that a module's full name must match whole (re.fullmatch): it matches no projection of this model's layers (model.layers.N.<module>); to name the module in every layer, give a list: ["q_proj"]`},
		{"an expression matching nothing", llama, []string{"q_proj"}, `.*\.qkv`, `target_modules ".*\\.qkv" is a string, which PEFT reads as a regular expression that a module's full name must match whole (re.fullmatch): it matches no projection of this model's layers (model.layers.N.<module>)`},
		{"an empty list", llama, []string{"q_proj"}, []string{}, "target_modules is missing or empty"},
		{"null", llama, []string{"q_proj"}, nil, "target_modules is missing or empty"},
		{"an empty expression", llama, []string{"q_proj"}, "", "target_modules is missing or empty"},
		{"Python's lookbehind", llama, []string{"q_proj"}, `.*(?<=self_attn\.)q_proj`, "is a regular expression Go's regexp cannot read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.m, Options{R: 2, Targets: tc.targets, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range a.Params() {
				for i := range p {
					p[i] = float32(i%5) * 0.01
				}
			}
			dir := t.TempDir()
			if err := a.Save(dir); err != nil {
				t.Fatal(err)
			}
			setTargetModules(t, dir, tc.file)
			b, err := Load(dir, tc.m, false)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("target_modules %v: got %v, want an error containing %q", tc.file, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("target_modules %v: %v", tc.file, err)
			}
			if !slices.Equal(b.Targets(), a.Targets()) || !slices.Equal(b.Params()[0], a.Params()[0]) {
				t.Errorf("loaded targets %v, want %v (parameters equal: %v)", b.Targets(), a.Targets(), slices.Equal(b.Params()[0], a.Params()[0]))
			}
		})
	}
}

// savedWithTargets saves an adapter of rank 2 on m's q_proj and returns
// its directory, with target_modules in adapter_config.json set to targets.
func savedWithTargets(t *testing.T, m *model.Model, targets any) string {
	t.Helper()
	a, err := New(m, Options{R: 2, Targets: []string{"q_proj"}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := a.Save(dir); err != nil {
		t.Fatal(err)
	}
	setTargetModules(t, dir, targets)
	return dir
}

// setTargetModules rewrites target_modules in dir's adapter_config.json.
func setTargetModules(t *testing.T, dir string, targets any) {
	t.Helper()
	setConfigKey(t, dir, "target_modules", targets)
}

// setConfigKey sets key to v in dir's adapter_config.json.
func setConfigKey(t *testing.T, dir, key string, v any) {
	t.Helper()
	path := filepath.Join(dir, "adapter_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg[key] = v
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesAdapterOnNoModule: an adapter whose target_modules is
// empty or missing, with no matrices in its file, is refused rather than
// loaded as an adapter that changes nothing (forward, evaluation and merge
// ran the base model under its name). PEFT refuses it too: "Target modules
// set() not found", "Please specify `target_modules`".
func TestLoadRefusesAdapterOnNoModule(t *testing.T) {
	m, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	for _, targets := range []any{[]string{}, nil, ""} {
		dir := savedWithTargets(t, m, targets)
		if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), nil, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, m, false); err == nil || !strings.Contains(err.Error(), "target_modules is missing or empty") {
			t.Errorf("target_modules %#v and no tensors: %v, want it refused", targets, err)
		}
	}
}

// TestLoadClipsLongTargets: an error about a target_modules of megabytes
// quotes its start and says how long it is, rather than all of it (an
// expression of 2,000,000 alternatives that Go's regexp found too large
// made an error of 72 MB: the expression in ours, and again in regexp's).
func TestLoadClipsLongTargets(t *testing.T) {
	m, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	for _, tc := range []struct {
		name string
		file any
		want string
	}{
		{"an expression Go cannot read", long + "(", "missing closing ) in "},
		{"an expression matching nothing", long, "matches no projection"},
		{"a module name", []string{"model." + long}, "is not supported"},
		{"not a list nor a string", map[string]string{"a": long}, "want a list of module names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(savedWithTargets(t, m, tc.file), m, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.300v, want an error containing %q", err, tc.want)
			}
			if msg := err.Error(); len(msg) > 1000 || !strings.Contains(msg, " bytes)") || !utf8.ValidString(msg) {
				t.Errorf("an error of %d bytes (valid UTF-8: %v), want the target clipped: %.400s", len(msg), utf8.ValidString(msg), msg)
			}
		})
	}
}

// TestLoadClipsLongConfigValues: an error about another adapter_config.json
// value of megabytes (peft_type, bias, modules_to_save) quotes its start
// and says how long it is, and names at most three modules to save.
func TestLoadClipsLongConfigValues(t *testing.T) {
	m, err := model.NewRandom(tinyConfig(), 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	for _, tc := range []struct {
		key  string
		v    any
		want string
	}{
		{"peft_type", long, "want LORA"},
		{"bias", long, "is not supported"},
		{"modules_to_save", []string{"lm_head", long}, `modules_to_save [lm_head éé`},
		{"modules_to_save", make([]string, 100000), `modules_to_save [   … (99997 more)]`},
		{"not_a_key", 1, `é… (1048576 bytes) is 1, which this loader does not apply`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			dir := savedWithTargets(t, m, []string{"q_proj"})
			setConfigKey(t, dir, strings.ReplaceAll(tc.key, "not_a_key", long), tc.v)
			_, err := Load(dir, m, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.300v, want an error containing %q", err, tc.want)
			}
			if msg := err.Error(); len(msg) > 1000 || !utf8.ValidString(msg) {
				t.Errorf("an error of %d bytes (valid UTF-8: %v), want the value clipped: %.400s", len(msg), utf8.ValidString(msg), msg)
			}
		})
	}
}

// TestRegexOtherModules: a target_modules expression is refused when it
// matches any module of the model other than its layers' projections, as
// PEFT 0.15 refuses it (the containers, norms and activations: "Target
// module SiLU() is not supported") or adapts more than the projections
// (the embeddings, the head), and accepted when it matches projections
// alone, the root module too (PEFT skips the root, whose name is empty:
// "|.*\.q_proj" adapts q_proj there). The modules are those
// transformers 4.51's named_modules lists, other than the projections,
// for a two-layer Llama and Qwen3 (LlamaConfig/Qwen3Config of tinyConfig's
// shape) and the three-layer opt-tiny.
func TestRegexOtherModules(t *testing.T) {
	opt, err := model.Load(filepath.Join("..", "model", "testdata", "opt", "opt-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	qwen3 := tinyConfig()
	qwen3.Architecture, qwen3.QKNorm = "Qwen3ForCausalLM", true
	for _, tc := range []struct {
		name    string
		c       *model.Config
		modules []string // transformers' named_modules, less the projections and the root
		target  string   // a projection of every layer
	}{
		{"llama", tinyConfig(), []string{"model", "model.embed_tokens", "model.layers", "model.layers.0", "model.layers.0.self_attn", "model.layers.0.mlp", "model.layers.0.mlp.act_fn", "model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm", "model.layers.1", "model.layers.1.self_attn", "model.layers.1.mlp", "model.layers.1.mlp.act_fn", "model.layers.1.input_layernorm", "model.layers.1.post_attention_layernorm", "model.norm", "model.rotary_emb", "lm_head"}, "q_proj"},
		{"qwen3", qwen3, []string{"model", "model.embed_tokens", "model.layers", "model.layers.0", "model.layers.0.self_attn", "model.layers.0.self_attn.q_norm", "model.layers.0.self_attn.k_norm", "model.layers.0.mlp", "model.layers.0.mlp.act_fn", "model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm", "model.layers.1", "model.layers.1.self_attn", "model.layers.1.self_attn.q_norm", "model.layers.1.self_attn.k_norm", "model.layers.1.mlp", "model.layers.1.mlp.act_fn", "model.layers.1.input_layernorm", "model.layers.1.post_attention_layernorm", "model.norm", "model.rotary_emb", "lm_head"}, "q_proj"},
		{"opt-tiny", &opt.Config, []string{"model", "model.decoder", "model.decoder.embed_tokens", "model.decoder.embed_positions", "model.decoder.final_layer_norm", "model.decoder.layers", "model.decoder.layers.0", "model.decoder.layers.0.self_attn", "model.decoder.layers.0.activation_fn", "model.decoder.layers.0.self_attn_layer_norm", "model.decoder.layers.0.final_layer_norm", "model.decoder.layers.1", "model.decoder.layers.1.self_attn", "model.decoder.layers.1.activation_fn", "model.decoder.layers.1.self_attn_layer_norm", "model.decoder.layers.1.final_layer_norm", "model.decoder.layers.2", "model.decoder.layers.2.self_attn", "model.decoder.layers.2.activation_fn", "model.decoder.layers.2.self_attn_layer_norm", "model.decoder.layers.2.final_layer_norm", "lm_head"}, "fc1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range tc.modules {
				re := regexp.QuoteMeta(m) + `|.*\.` + tc.target
				_, err := targetPaths(tc.c, Targets{Regex: re})
				if want := fmt.Sprintf("also matches %q, a module that is not one of the layers' projections", m); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want an error containing %q", re, err, want)
				}
			}
			for _, re := range []string{`|.*\.` + tc.target, `.*\.` + tc.target} {
				if names, err := targetPaths(tc.c, Targets{Regex: re}); err != nil || !slices.Equal(names, []string{tc.target}) {
					t.Errorf("%s: %v, %v; want %s", re, names, err, tc.target)
				}
			}
		})
	}
}

// TestMissingLayerHint: a tensor missing from an adapter file says what
// the file's layers suggest: a model of fewer layers, or layers left out.
func TestMissingLayerHint(t *testing.T) {
	m, a := tinyAdapter(t, 3, 1)
	for _, tc := range []struct {
		drop []int // the layers whose tensors the file loses
		want string
	}{
		{[]int{2}, `layers.2.self_attn.q_proj.lora_A.weight": the file has no tensor past layer 1, as an adapter for a model of 2 layers (another model) has`},
		{[]int{1}, `layers.1.self_attn.q_proj.lora_A.weight": the file has no tensor of layer 1 (an adapter on some layers whose adapter_config.json lacks their layers_to_transform?)`},
	} {
		dir := t.TempDir()
		if err := a.Save(dir); err != nil {
			t.Fatal(err)
		}
		dropLayers(t, filepath.Join(dir, "adapter_model.safetensors"), tc.drop)
		if _, err := Load(dir, m, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("layers %v dropped: %v, want %q", tc.drop, err, tc.want)
		}
	}
}

// dropLayers rewrites the safetensors file at path without the tensors of
// the layers given.
func dropLayers(t *testing.T, path string, layers []int) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []safetensors.Tensor
	for _, info := range f.Tensors() {
		if slices.ContainsFunc(layers, func(l int) bool { return strings.Contains(info.Name, fmt.Sprintf(".layers.%d.", l)) }) {
			continue
		}
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, safetensors.F32Tensor(info.Name, info.Shape, v))
	}
	f.Close()
	if err := safetensors.WriteFile(path, keep, nil); err != nil {
		t.Fatal(err)
	}
}
