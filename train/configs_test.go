package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// paperInitText are the prompt-tuning initialisation texts of the paper
// (its appendix), by task.
var paperInitText = map[string]string{
	"sst2":  "Sentiment task: classify text as positive or negative. Output only positive or negative.",
	"squad": "Extract answer from passage only using exact text span answering the question precisely and concisely.",
	"xsum":  "Summarize the article into one concise sentence capturing the main event, key facts, and essential context clearly.",
}

// TestShippedConfigsLoad loads every file in configs/ and checks the paper's
// protocol values, prompt tuning's initialisation text included, and
// MeZO's full-parameter setting for the full-parameter configs.
func TestShippedConfigsLoad(t *testing.T) {
	paths, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(paths) < 90 {
		t.Fatalf("found %d configs (%v)", len(paths), err)
	}
	for _, p := range paths {
		c, err := Load(p, nil)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if c.Adapter.Kind == "full" {
			if c.Optimizer.Eps != 1e-3 || c.Train.BatchSize != 16 || c.Train.Steps != 20000 || c.Task.Name != "sst2" ||
				c.Optimizer.Name == "fzoo" && (c.Optimizer.Q != 8 || c.Optimizer.LR != 1e-5) {
				t.Errorf("%s: eps %g, batch %d, %d steps, q %d, lr %g; want MeZO's full-parameter SST-2 setting (1e-3, 16, 20000; FZOO q 8, lr 1e-5)",
					p, c.Optimizer.Eps, c.Train.BatchSize, c.Train.Steps, c.Optimizer.Q, c.Optimizer.LR)
			}
			if strings.HasPrefix(filepath.Base(p), "opt1.3b_") && c.Task.Format != "mezo" { // OPT has no chat template
				t.Errorf("%s: task.format %s, want mezo (MeZO's SST-2 template, as FZOO's code)", p, c.Task.Format)
			}
			continue
		}
		if c.Optimizer.Eps != 1e-6 || c.Train.BatchSize != 8 || c.Optimizer.Beta2 != 0.999 {
			t.Errorf("%s: eps %g, batch %d, beta2 %g; want the paper's 1e-6, 8, 0.999", p, c.Optimizer.Eps, c.Train.BatchSize, c.Optimizer.Beta2)
		}
		wantSteps := 10000
		if c.Adapter.Kind == "prompt" {
			wantSteps = 20000
			if want := paperInitText[c.Task.Name]; c.Adapter.InitText != want {
				t.Errorf("%s: adapter.init_text %q, want the paper's %q", p, c.Adapter.InitText, want)
			}
		}
		if c.Train.Steps != wantSteps {
			t.Errorf("%s: %d steps, want %d", p, c.Train.Steps, wantSteps)
		}
		if strings.Contains(p, "grouped") != c.Adapter.Grouped {
			t.Errorf("%s: grouped = %v", p, c.Adapter.Grouped)
		}
		if strings.HasPrefix(filepath.Base(p), "qwen3-8b_") && (!c.Model.BF16 || c.Adapter.Kind != "lora") {
			t.Errorf("%s: bf16_weights %v, adapter %s; want Qwen3-8B's LoRA with its weights in bfloat16", p, c.Model.BF16, c.Adapter.Kind)
		}
		if strings.Contains(p, "ministral") {
			checkMinistral(t, p, c)
		}
	}
	// The paper's Table 1 runs Qwen3-8B's LoRA on every task with every optimizer.
	for _, task := range []string{"sst2", "squad", "xsum"} {
		for _, opt := range []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"} {
			p := fmt.Sprintf("../configs/qwen3-8b_%s_lora_%s.yaml", task, opt)
			if c, err := Load(p, nil); err != nil || c.Optimizer.Name != opt || c.Task.Name != task {
				t.Errorf("%s: %v (want %s on %s)", p, err, opt, task)
			}
		}
	}
}

// checkMinistral checks a Ministral-3 config is the paper's appendix
// setting: the BF16 checkpoint run in bf16 (its weights kept in bfloat16
// and multiplied in bfloat16, as PyTorch runs it), SQuAD, LoRA r = 16 on
// q/v.
func checkMinistral(t *testing.T, p string, c *Config) {
	t.Helper()
	a := c.Adapter
	if !c.Model.BF16Products {
		t.Errorf("%s: bf16_products false; the paper ran Ministral in bfloat16 (model.bf16_products: true)", p)
	}
	if !c.Model.BF16 || !strings.HasSuffix(c.Model.Path, "Ministral-3-14B-Instruct-2512-BF16") || c.Task.Name != "squad" ||
		a.Kind != "lora" || a.R != 16 || !slices.Equal(a.Targets, []string{"q_proj", "v_proj"}) {
		t.Errorf("%s: bf16 %v, path %s, task %s, adapter %s r %d on %v; want the BF16 checkpoint in bf16, squad, LoRA r 16 on q_proj/v_proj",
			p, c.Model.BF16, c.Model.Path, c.Task.Name, a.Kind, a.R, a.Targets)
	}
}

// --config given another command's file (a model's config.json, a study)
// says what it is and where it goes, instead of naming its first key
// unknown or its first null a missing value.
func TestForeignConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"config.json", `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "rope_scaling": null}`, "a model's config.json"},
		{"study.yaml", "out: runs\ncoarse: [1e-3]\nexperiments:\n  - {name: e, config: c.yaml, optimizers: [meazo]}\n", "a meazo-sweep study file"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it named %q", tc.name, err, tc.want)
		}
	}
}
