package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/train"
)

// TestRandomModelCommand writes a random model that loads, and refuses a
// standard deviation that would make its weights NaN or meaningless.
func TestRandomModelCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"architectures":["Qwen3ForCausalLM"],"vocab_size":64,"hidden_size":32,"intermediate_size":64,
		"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"rms_norm_eps":1e-6,
		"rope_theta":1000000,"tie_word_embeddings":true}`), 0o644)
	out := filepath.Join(dir, "m")
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", out, "--tokenizer", "none"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := model.Load(out); err != nil {
		t.Errorf("the random model does not load: %v", err)
	}
	// A directory that holds a model already (here: the config's own) is
	// refused, untouched.
	for _, to := range []string{dir, out} {
		before, _ := os.ReadFile(filepath.Join(to, "config.json"))
		err := commands.Run("random-model", []string{"--config", cfg, "--out", to, "--seed", "2"}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "already holds a model (config.json)") {
			t.Errorf("--out %s: %v", to, err)
		}
		if after, _ := os.ReadFile(filepath.Join(to, "config.json")); string(after) != string(before) {
			t.Errorf("--out %s: config.json changed", to)
		}
	}
	for _, std := range []string{"NaN", "Inf", "-0.02", "0", "1e300", "1e-300"} {
		err := commands.Run("random-model", []string{"--config", cfg, "--out", filepath.Join(dir, "bad"), "--std", std}, nil, io.Discard)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--std must be between 1e-30 and 1e30") {
			t.Errorf("--std %s: %v", std, err)
		}
	}
}

// TestRandomModelByName: --model resolves a built-in published config (by
// name, hub id or short name) cut to --layers; an unknown name or both of
// --model and --config is a usage error.
func TestRandomModelByName(t *testing.T) {
	for _, name := range []string{"Qwen3-0.6B", "Qwen/Qwen3-0.6B", "qwen06b"} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		f := randomModelFlags{name: name, out: "o", dtype: "bf16", std: 0.02, layers: 2}
		cfg, err := f.check(fs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, _ := model.LookupPublished("Qwen3-0.6B")
		want, _ := p.Config()
		want.NumLayers = 2
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("%s: %+v, want Qwen3-0.6B's config with 2 layers", name, *cfg)
		}
	}
	// Every built-in model, by its short name.
	for _, p := range model.PublishedModels() {
		f := randomModelFlags{name: p.Short, out: "o", dtype: "bf16", std: 0.02, layers: 1}
		cfg, err := f.check(flag.NewFlagSet("x", flag.ContinueOnError))
		want, _ := p.Config()
		if err != nil || cfg.NumLayers != 1 || cfg.Architecture != want.Architecture || cfg.HiddenSize != want.HiddenSize {
			t.Errorf("--model %s: %v, %v; want %s's config with 1 layer", p.Short, cfg, err, p.Repo)
		}
	}
	for _, args := range [][]string{
		{"--model", "gpt2", "--out", "o"},
		{"--model", "qwen06b", "--config", "c.json", "--out", "o"},
		{"--out", "o"},
		{"--model", "qwen06b", "--out", "o", "--layers", "-1"},
	} {
		var ue *cli.UsageError
		if err := commands.Run("random-model", args, nil, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestRandomModelTrains: a random model written with the demo's tokenizer
// is what meazo-train runs on, with no other file; a tokenizer already in
// --out is kept without --tokenizer and refused with it, before any weight
// is written.
func TestRandomModelTrains(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"architectures":["LlamaForCausalLM"],"vocab_size":1024,"hidden_size":32,"intermediate_size":64,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"rms_norm_eps":1e-5,
		"rope_theta":500000,"tie_word_embeddings":true}`), 0o644)
	out := filepath.Join(dir, "m")
	var log strings.Builder
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", out}, nil, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "demo's byte-level tokenizer") {
		t.Errorf("output %q does not say which tokenizer was written", log.String())
	}
	demoCfg, err := train.WriteDemo(filepath.Join(dir, "demo"), 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := train.Run(train.Options{ConfigPath: demoCfg, Overrides: []string{"model.path=" + out, "train.steps=2",
		"train.eval_every=2", "eval.skip=true", "model.backend=cpu", "output.dir=" + filepath.Join(dir, "run")}})
	if err != nil || s.StepsDone != 2 {
		t.Fatalf("meazo-train on the random model: %v", err)
	}

	// Again into a directory holding only a tokenizer: kept by default.
	again := filepath.Join(dir, "again")
	os.MkdirAll(again, 0o755)
	tokJSON, _ := os.ReadFile(filepath.Join(out, "tokenizer.json"))
	os.WriteFile(filepath.Join(again, "tokenizer.json"), tokJSON, 0o644)
	os.WriteFile(filepath.Join(again, "tokenizer_config.json"), []byte(`{"eos_token": "<|im_end|>"}`), 0o644)
	for _, bad := range [][]string{{"--tokenizer", "demo"}, {"--tokenizer", out}} {
		err := commands.Run("random-model", append([]string{"--config", cfg, "--out", again}, bad...), nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "would write over it") {
			t.Errorf("%v onto a tokenizer: %v", bad, err)
		}
	}
	// A tokenizer with more ids than the model has rows: refused first.
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte(strings.Replace(string(must(os.ReadFile(cfg))), `"vocab_size":1024`, `"vocab_size":64`, 1)), 0o644)
	if err := commands.Run("random-model", []string{"--config", small, "--out", filepath.Join(dir, "s")}, nil, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "past the model's vocab_size 64") {
		t.Errorf("demo tokenizer on a 64-token model: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); err == nil {
		t.Error("a refused random-model made its --out")
	}
	if _, err := os.Stat(filepath.Join(again, "model.safetensors")); err == nil {
		t.Error("a refused random-model wrote weights")
	}
	log.Reset()
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", again}, nil, &log); err != nil || !strings.Contains(log.String(), "kept the tokenizer") {
		t.Errorf("without --tokenizer: %v, %q", err, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(again, "tokenizer_config.json")); string(b) != `{"eos_token": "<|im_end|>"}` {
		t.Errorf("the kept tokenizer_config.json changed: %s", b)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRandomModelViT: random-model on a ViT image classifier's config
// writes a checkpoint and preprocessor_config.json that forward runs on
// image files and meazo-train's image task trains; a tokenizer or bfloat16
// is refused for it, and so is a directory holding a preprocessor config.
func TestRandomModelViT(t *testing.T) {
	cfg := filepath.Join(vitTiny, "config.json")
	out := filepath.Join(t.TempDir(), "vit")
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", out, "--layers", "2"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	// Its config is the given one's (a float as Python writes it: 0.0),
	// but for the layers cut and the dtype.
	var got, given map[string]any
	json.Unmarshal(must(os.ReadFile(filepath.Join(out, "config.json"))), &got)
	json.Unmarshal(must(os.ReadFile(cfg)), &given)
	for k, v := range given {
		if k != "num_hidden_layers" && k != "torch_dtype" && fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("config.json %s: %v, given %v", k, got[k], v)
		}
	}
	if b := must(os.ReadFile(filepath.Join(out, "config.json"))); !strings.Contains(string(b), `"hidden_dropout_prob": 0.0,`) {
		t.Errorf("config.json writes a float as %s", b)
	}
	res := filepath.Join(t.TempDir(), "out.safetensors")
	if err := runForward([]string{"--model", out, "--images", "../../imageproc/testdata/scene_97x61.jpg", "--out", res}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(train.Options{Overrides: []string{"model.path=" + out, "task.name=pets",
		"task.train=../../train/testdata/pets/train.parquet", "adapter.targets=[query,value]", "adapter.r=4",
		"train.steps=2", "train.batch_size=4", "eval.skip=true", "output.dir=" + filepath.Join(t.TempDir(), "run")}}); err != nil {
		t.Errorf("meazo-train on the random ViT: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tokenizer", "demo"}, "--tokenizer]: not for a ViT"},
		{[]string{"--dtype", "bf16"}, "--dtype]: not for a ViT"},
	} {
		err := commands.Run("random-model", append([]string{"--config", cfg, "--out", filepath.Join(t.TempDir(), "x")}, c.args...), nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	held := t.TempDir()
	os.WriteFile(filepath.Join(held, "preprocessor_config.json"), []byte("{}"), 0o644)
	err := commands.Run("random-model", []string{"--config", cfg, "--out", held}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "already holds preprocessor_config.json") {
		t.Errorf("a directory with a preprocessor config: got %v", err)
	}
}

// TestParamCount: billions from one billion on, millions below, the whole
// count below a million (a tiny config printed "0.00B parameters", then a
// tiny ViT "0.0M parameters").
func TestParamCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{44_906, "44906"}, {999_999, "999999"}, {1_000_000, "1.0M"}, {3_350_400, "3.4M"}, {157_517_824, "157.5M"}, {1_315_758_080, "1.32B"}, {13_945_031_680, "13.95B"}} {
		if got := paramCount(c.n); got != c.want {
			t.Errorf("%d: %q, want %q", c.n, got, c.want)
		}
	}
}

// TestRandomModelKeepsConfigKeys: the keys of --config that the model does
// not read (initializer_range, use_cache, transformers_version, a
// sliding_window of null) are written as given; what random-model sets
// (num_hidden_layers under --layers, torch_dtype) is its own.
func TestRandomModelKeepsConfigKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	os.WriteFile(cfg, []byte(`{"architectures":["Qwen3ForCausalLM"],"vocab_size":64,"hidden_size":32,"intermediate_size":64,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"rms_norm_eps":1e-6,
		"rope_theta":1000000,"tie_word_embeddings":true,"initializer_range":0.02,"use_cache":true,
		"transformers_version":"4.51.0","sliding_window":null,"torch_dtype":"bfloat16"}`), 0o644)
	out := filepath.Join(dir, "m")
	if err := commands.Run("random-model", []string{"--config", cfg, "--out", out, "--tokenizer", "none", "--layers", "1"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(out, "config.json"))), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"initializer_range": 0.02, "use_cache": true, "transformers_version": "4.51.0", "sliding_window": nil,
		"num_hidden_layers": 1.0, "torch_dtype": "float32"} {
		if v, ok := got[k]; !ok || fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("config.json %s: %v (present %v), want %v", k, v, ok, want)
		}
	}
	if _, err := model.Load(out); err != nil {
		t.Errorf("the random model does not load: %v", err)
	}
}
