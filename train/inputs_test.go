package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
)

// What a run is given: config values, an initial adapter, the data's and
// the tokenizer's sizes, the chat template, --set strings; each is used as
// written or refused with what is wrong named.

// TestConfigValueErrors: values of the wrong type are errors naming the key
// and where it was given (the file or --set), never silently converted.
func TestConfigValueErrors(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	b, _ := os.ReadFile(cfg)
	halfStep := filepath.Join(dir, "half.yaml")
	os.WriteFile(halfStep, []byte(strings.Replace(string(b), "  steps: 2", "  steps: 2.5", 1)), 0o644)
	cases := []struct {
		name      string
		path      string
		overrides []string
		want      []string
	}{
		{"fractional steps in --set", cfg, []string{"train.steps=2.5"}, []string{"--set train.steps", "whole number", "2.5"}},
		{"fractional steps in file", halfStep, nil, []string{"half.yaml", "train.steps", "whole number"}},
		{"negative seed", cfg, []string{"train.seed=-1"}, []string{"--set train.seed", "non-negative"}},
		{"text for a number", cfg, []string{"optimizer.lr=fast"}, []string{"--set optimizer.lr", "want a number"}},
		{"text for a bool", cfg, []string{"eval.skip=maybe"}, []string{"--set eval.skip", "true or false"}},
		{"scalar for a list", cfg, []string{"adapter.targets=q_proj"}, []string{"--set adapter.targets", "list"}},
		{"invalid value by --set", cfg, []string{"optimizer.lr=-1"}, []string{"--set optimizer.lr: must be positive"}},
		{"huge int", cfg, []string{"train.steps=1e30"}, []string{"--set train.steps", "out of range"}},
		{"beta1 of 1.5", cfg, []string{"optimizer.name=zo-adam", "optimizer.beta1=1.5"}, []string{"--set optimizer.beta1: must be in [0, 1), got 1.5"}},
		{"beta of 1", cfg, []string{"optimizer.beta=1"}, []string{"--set optimizer.beta: must be in [0, 1), got 1"}},
		{"negative momentum", cfg, []string{"optimizer.momentum=-0.1"}, []string{"--set optimizer.momentum: must be in [0, 1), got -0.1"}},
		{"unknown target", cfg, []string{"adapter.targets=[q_proj,qkv_proj]"}, []string{"--set adapter.targets: [q_proj qkv_proj]: want one or more of [q_proj k_proj v_proj o_proj gate_proj up_proj down_proj out_proj fc1 fc2 all-linear], each once (all-linear only alone)"}},
		{"all-linear and more", cfg, []string{"adapter.targets=[all-linear,q_proj]"}, []string{"--set adapter.targets:", "all-linear only alone"}},
		{"a layer as a scalar", cfg, []string{"adapter.layers=3"}, []string{"--set adapter.layers: want a list, e.g. [20, 21], got 3"}},
		{"a negative layer", cfg, []string{"adapter.layers=[-1]"}, []string{"--set adapter.layers: want a list of layer indices (whole numbers from 0), got element -1"}},
		{"a layer twice", cfg, []string{"adapter.layers=[1,1]"}, []string{"--set adapter.layers: layer 1 is named twice: want layer indices from 0, each once"}},
		{"target twice", cfg, []string{"adapter.targets=[v_proj,v_proj]"}, []string{"--set adapter.targets:", "each once"}},
		{"no target", cfg, []string{"adapter.targets=[]"}, []string{"--set adapter.targets:", "one or more"}},
		{"zeta 0", cfg, []string{"optimizer.zeta=0"}, []string{"--set optimizer.zeta: must be positive and finite, got 0"}},
		{"negative weight decay", cfg, []string{"optimizer.weight_decay=-1"}, []string{"--set optimizer.weight_decay: must be >= 0"}},
		{"unknown schedule", cfg, []string{"optimizer.schedule=cosine_with_restarts"}, []string{"--set optimizer.schedule:", "cosine_with_restarts", "constant, linear or cosine"}},
		{"HF's constant_with_warmup", cfg, []string{"optimizer.schedule=constant_with_warmup"}, []string{"constant_with_warmup is constant here, with optimizer.warmup_steps"}},
		{"negative warmup", cfg, []string{"optimizer.warmup_steps=-1"}, []string{"--set optimizer.warmup_steps: must be at least 0, got -1"}},
		{"a schedule over no steps", cfg, []string{"train.steps=0", "optimizer.schedule=linear"}, []string{"--set optimizer.schedule: linear runs over train.steps, which is 0"}},
		{"a section by --set", cfg, []string{"train=5"}, []string{`--set train: "train" is a section: set one of its keys (e.g. train.steps=…)`}},
		{"zero batch", cfg, []string{"train.batch_size=0"}, []string{"--set train.batch_size: must be at least 1, got 0"}},
		{"negative threads", cfg, []string{"train.threads=-2"}, []string{"--set train.threads: must not be negative, got -2"}},
		{"negative max_train", cfg, []string{"task.max_train=-4"}, []string{"--set task.max_train: must not be negative"}},
		{"negative max_new_tokens", cfg, []string{"eval.max_new_tokens=-5"}, []string{"--set eval.max_new_tokens: must not be negative"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path, tc.overrides)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.path == cfg && strings.Contains(err.Error(), cfg) {
				t.Errorf("error %q blames the file for a --set value", err)
			}
		})
	}
	if c, err := Load(cfg, []string{"train.steps=3", "train.seed=18446744073709551615", "optimizer.lr=1"}); err != nil || c.Train.Steps != 3 || c.Train.Seed != 1<<64-1 {
		t.Errorf("valid values: %+v %v", c, err)
	}
}

// TestInitAdapterMustMatchConfig: an adapter.init of another rank (or kind)
// is refused instead of training rank 8 under a config that says 16.
func TestInitAdapterMustMatchConfig(t *testing.T) {
	dir, cfg := demoConfig(t, 0)
	src := filepath.Join(dir, "src")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+src)}); err != nil {
		t.Fatal(err)
	}
	init := "adapter.init=" + filepath.Join(src, "best")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"rank", []string{init, "adapter.r=16"}, "rank 8, alpha 16"},
		{"alpha", []string{init, "adapter.alpha=32"}, "adapter.alpha 32"},
		{"targets", []string{init, "adapter.targets=[q_proj,k_proj]"}, "adapter.targets"},
		{"kind", []string{init, "adapter.kind=prompt"}, "is a LoRA adapter, but adapter.kind is \"prompt\""},
		{"matching", []string{init, "adapter.targets=[v_proj,q_proj]"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(append(trustSet, "output.dir="+filepath.Join(dir, tc.name)), tc.set...)})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestInitAllLinear: a run with adapter.targets [all-linear] saves an
// adapter on each of the model's projections, named as PEFT names them, and
// an adapter.init of it matches a config that says all-linear or lists them,
// not one that says q_proj and v_proj.
func TestInitAllLinear(t *testing.T) {
	dir, cfg := demoConfig(t, 0)
	src := filepath.Join(dir, "src")
	all := []string{"adapter.targets=[all-linear]", "adapter.r=4"}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), all...), "output.dir="+src)}); err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Targets []string `json:"target_modules"`
	}
	b, err := os.ReadFile(filepath.Join(src, "best", "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	names := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	if !slices.Equal(saved.Targets, names) {
		t.Errorf("saved target_modules %v, want %v", saved.Targets, names)
	}
	init := "adapter.init=" + filepath.Join(src, "best")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"all-linear", append(slices.Clone(all), init), ""},
		{"listed", []string{init, "adapter.r=4", "adapter.targets=[" + strings.Join(names, ",") + "]"}, ""},
		{"q and v", []string{init, "adapter.r=4"}, "adapter.targets [q_proj v_proj]"},
		{"OPT's name", []string{init, "adapter.r=4", "adapter.targets=[fc1]"}, `adapter.targets: target module "fc1" is not a projection of this model (Qwen3ForCausalLM's: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, or all-linear alone for all)`},
		{"OPT's name, fresh", []string{"adapter.targets=[q_proj,out_proj]"}, `adapter.targets: target module "out_proj" is not a projection of this model (Qwen3ForCausalLM's:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), "output.dir="+out), tc.set...)})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out); tc.want != "" && err == nil {
				t.Errorf("the refused run left %s", out)
			}
		})
	}
}

// TestRSLoRA: adapter.rslora trains PEFT's rank-stabilised LoRA (scale
// alpha/√r), saved with use_rslora so that PEFT scales it so too, and an
// adapter.init of it must say adapter.rslora as well.
func TestRSLoRA(t *testing.T) {
	dir, cfg := demoConfig(t, 0)
	src := filepath.Join(dir, "src")
	rs := []string{"adapter.rslora=true", "adapter.r=4", "adapter.alpha=8"}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), rs...), "output.dir="+src)}); err != nil {
		t.Fatal(err)
	}
	pc, err := lora.ReadPEFTConfig(filepath.Join(src, "best", "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !pc.UseRSLoRA || pc.Scale() != 4 {
		t.Errorf("saved use_rslora %v, scale %g; want true, 8/√4 = 4", pc.UseRSLoRA, pc.Scale())
	}
	init := "adapter.init=" + filepath.Join(src, "best")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"rslora", append(slices.Clone(rs), init), ""},
		{"without rslora", []string{init, "adapter.r=4", "adapter.alpha=8"}, "is a LoRA of rank 4, alpha 8 (use_rslora) on [q_proj v_proj], but the config says adapter.r 4, adapter.alpha 8, adapter.rslora false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), "output.dir="+filepath.Join(dir, tc.name)), tc.set...)})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAdapterLayersHugeList: a list of a million layer indices with one
// twice is refused at once, naming that layer, in a message of a line: the
// check looked for each index among all those before it (5·10¹¹
// comparisons, minutes), and quoted the whole list (megabytes).
func TestAdapterLayersHugeList(t *testing.T) {
	c := Config{Task: TaskConfig{Name: "sst2"}, Adapter: AdapterConfig{Kind: "lora", R: 8, Alpha: 16, Targets: []string{"q_proj", "v_proj"}}}
	for l := range 1 << 20 {
		c.Adapter.Layers = append(c.Adapter.Layers, l)
	}
	c.Adapter.Layers = append(c.Adapter.Layers, 7)
	done := make(chan error, 1)
	go func() { done <- c.validateAdapter() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "layer 7 is named twice") || len(err.Error()) > 200 {
			t.Errorf("error %.300q (%d bytes), want one line that names layer 7 twice", err, len(fmt.Sprint(err)))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("adapter.layers of a million indices: not checked in 20 s")
	}
}

// TestAdapterLayers: adapter.layers trains LoRA on those layers alone,
// saved with PEFT's layers_to_transform; each step's perturbed points
// start at the first of them (the demo's 2 layers, q = 1: the clean pass's
// layer 0, then layer 1 twice, 3 layer evaluations instead of 4); an
// adapter.init of it must name the same layers.
func TestAdapterLayers(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	src := filepath.Join(dir, "src")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "adapter.layers=[1]", "eval.skip=true", "output.dir="+src)}); err != nil {
		t.Fatal(err)
	}
	pc, err := lora.ReadPEFTConfig(filepath.Join(src, "best", "adapter_config.json"))
	if err != nil || !slices.Equal(pc.Layers, []int{1}) {
		t.Fatalf("saved layers_to_transform %v (%v), want [1]", pc, err)
	}
	for _, line := range readLines(t, filepath.Join(src, "timing.jsonl")) {
		if !strings.Contains(line, `"layer_evals":3,`) {
			t.Errorf("timing %s: want 3 layer evaluations a step", line)
		}
	}
	init := "adapter.init=" + filepath.Join(src, "best")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"the same layers", []string{init, "adapter.layers=[1]"}, ""},
		{"every layer", []string{init}, "adapts layers [1] (layers_to_transform), but adapter.layers is []"},
		{"a layer the model lacks", []string{"adapter.layers=[0,2]"}, "adapter.layers: layer 2 is not one of the model's 2 layers (0 to 1)"},
		{"a layer the model lacks, from adapter.init", []string{init, "adapter.layers=[1,2]"}, "adapter.layers: layer 2 is not one of the model's 2 layers (0 to 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), "train.steps=0", "output.dir="+filepath.Join(dir, tc.name)), tc.set...)})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBatchLargerThanData: a batch larger than the training split runs (the
// sampler repeats examples) and says so.
func TestBatchLargerThanData(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	var log bytes.Buffer
	set := append(slices.Clone(trustSet), "task.max_train=4", "train.batch_size=8", "output.dir="+filepath.Join(dir, "run"))
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "warning: train.batch_size 8 is more than the 4 training examples") {
		t.Errorf("no warning in the log:\n%s", log.String())
	}
}

// TestTokenizerLargerThanModel: a tokenizer with ids past the model's
// embedding is refused when the run starts, not at the first forward that
// meets such a token.
func TestTokenizerLargerThanModel(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	src := filepath.Join(dir, "model")
	c, err := model.LoadConfig(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small")
	c.VocabSize = tok.VocabSize() - 1
	if err := model.WriteRandom(small, c, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, _ := os.ReadFile(filepath.Join(src, f))
		os.WriteFile(filepath.Join(small, f), b, 0o644)
	}
	want := fmt.Sprintf("the tokenizer has ids up to %d but the model's vocab_size is %d", c.VocabSize, c.VocabSize)
	_, err = Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "model.path="+small, "output.dir="+filepath.Join(dir, "run"))})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v", err)
	}
	// meazo-eval task too: before, the evaluation failed at the first
	// batch holding such an id, naming only input_ids, or not at all.
	m, err := model.Load(small)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	big, err := tokenizer.Load(small)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(m, big, EvalOptions{Task: "sst2", Data: filepath.Join(dir, "data", "dev.tsv")})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Evaluate: got %v", err)
	}
}

// TestNoChatTemplate: a model directory without a chat template is refused
// when the model loads, with the fix, before any example is read (it was
// reported as the first training example's fault), by Run and Evaluate.
func TestNoChatTemplate(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	src, bare := filepath.Join(dir, "model"), filepath.Join(dir, "bare")
	if err := os.CopyFS(bare, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	b, _ := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	delete(tc, "chat_template")
	b, _ = json.Marshal(tc)
	if err := os.WriteFile(filepath.Join(bare, "tokenizer_config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "model " + bare + ": the model directory has no chat template"
	_, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "model.path="+bare, "output.dir="+filepath.Join(dir, "run"))})
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "copy chat_template.jinja") {
		t.Errorf("Run: got %v, want %q and the fix", err, want)
	}
	m, err := model.Load(bare)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(m, tok, EvalOptions{Task: "sst2", Data: filepath.Join(dir, "data", "dev.tsv")}); !errors.Is(err, tokenizer.ErrNoChatTemplate) {
		t.Errorf("Evaluate: got %v", err)
	}
}

// TestSetStringIsLiteral: --set (and --out, which is --set output.dir) of a
// string key keeps the text as it is: as YAML, "exp #1" was "exp", "007" 7
// and "1e3" 1000, and the run went to another directory without a word.
func TestSetStringIsLiteral(t *testing.T) {
	_, cfg := demoConfig(t, 1)
	for _, dir := range []string{"exp #1", "007", "1e3", "'q'", "~", "a: b", "[x]"} {
		c, err := Load(cfg, []string{"output.dir=" + dir, "task.train=" + dir})
		if err != nil {
			t.Errorf("--set output.dir=%s: %v", dir, err)
			continue
		}
		if c.Output.Dir != dir || c.Task.Train != dir {
			t.Errorf("--set output.dir=%s: %v, output.dir %q, task.train %q", dir, err, c.Output.Dir, c.Task.Train)
		}
	}
	if c, err := Load(cfg, []string{"adapter.init_text= Positive"}); err != nil || c.Adapter.InitText != " Positive" {
		t.Errorf("--set adapter.init_text= Positive: %v, %q (a leading space is a token's)", err, c.Adapter.InitText)
	}
	if c, err := Load(cfg, []string{"train.steps=007"}); err != nil || c.Train.Steps != 7 {
		t.Errorf("a number key is still read as YAML: %v", err)
	}
	// Leading zeros are decimal (YAML's 010 is octal 8).
	if c, err := Load(cfg, []string{"train.steps=010", "train.seed=010", "optimizer.q=02"}); err != nil || c.Train.Steps != 10 || c.Train.Seed != 10 || c.Optimizer.Q != 2 {
		t.Errorf("--set train.steps=010 train.seed=010 optimizer.q=02: %v, steps %d seed %d q %d", err, c.Train.Steps, c.Train.Seed, c.Optimizer.Q)
	}
}

// TestSetPathDropsName: a config's model.name (a hub name) labels only the
// weights at its own model.path: --set model.path alone clears it (the run
// then records the path), --set model.name with it keeps the given name,
// and other --set keys leave it.
func TestSetPathDropsName(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("model:\n  path: models/Qwen3-0.6B\n  name: Qwen/Qwen3-0.6B\ntask:\n  name: sst2\n  train: t.tsv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set       []string
		name, rec string // model.name, and what adapters and summary.json record
	}{
		{nil, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{[]string{"optimizer.lr=1e-4"}, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{[]string{"model.path=models/random-Qwen3-0.6B"}, "", "models/random-Qwen3-0.6B"},
		{[]string{"model.path=/data/Qwen3-0.6B", "model.name=Qwen/Qwen3-0.6B"}, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{[]string{"model.name=mine", "model.path=x"}, "mine", "mine"},
		{[]string{"model.path=models/Qwen3-0.6B/"}, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"}, // the config's own path
	} {
		c, err := Load(cfg, tc.set)
		if err != nil {
			t.Fatalf("--set %v: %v", tc.set, err)
		}
		if c.Model.Name != tc.name || c.ModelName() != tc.rec {
			t.Errorf("--set %v: model.name %q, recorded %q; want %q, %q", tc.set, c.Model.Name, c.ModelName(), tc.name, tc.rec)
		}
	}
}

// TestThreadsMoreThanCPUs: more threads than the machine has run (results do
// not depend on them) and the log says so.
func TestThreadsMoreThanCPUs(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	var log bytes.Buffer
	n := runtime.NumCPU() + 1
	set := append(slices.Clone(trustSet), fmt.Sprintf("train.threads=%d", n), "output.dir="+filepath.Join(dir, "run"))
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("warning: train.threads %d is more than this machine's %d CPUs", n, n-1); !strings.Contains(log.String(), want) {
		t.Errorf("no %q in the log:\n%s", want, log.String())
	}
}
