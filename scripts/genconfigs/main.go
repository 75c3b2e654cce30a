// Command genconfigs writes configs/: one YAML per experiment of the paper,
// {llama1b, qwen06b} × {sst2, squad, xsum} × {lora, prompt} × each optimizer,
// the grouped (per-layer) LoRA variants, Qwen3-8B LoRA on each task with
// each optimizer (the paper's Table 1),
// full-parameter SST-2 configs of both models with MEAZO, ZO-SGD and FZOO,
// OPT-1.3B's full-parameter SST-2 configs with the Figure 20 study (opt.go),
// Ministral-3 14B SQuAD LoRA configs in bf16, weights and products (the
// paper's appendix),
// ViT-B/16 LoRA on Oxford-IIIT Pets with the ViT appendix's study (vit.go),
// the examples of a classification and a generation on the user's own
// data (own.go), and Qwen2.5-0.5B-Instruct's LoRA on SST-2 (qwen25.go).
//
//	go run ./scripts/genconfigs        # rewrite configs/
//
// A test (train/configs_test.go) checks that configs/ matches this output and
// that every file loads.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type modelSpec struct {
	short, dir, hub string
}

var models = []modelSpec{
	{"llama1b", "models/Llama-3.2-1B", "meta-llama/Llama-3.2-1B"},
	{"qwen06b", "models/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
}

// qwen3_8b is the paper's larger model (its Table 1): LoRA only, on every
// task with every optimizer, its weights kept in bfloat16 as the checkpoint
// stores them (model.bf16_weights: the same logits in half the memory).
var qwen3_8b = modelSpec{"qwen3-8b", "models/Qwen3-8B", "Qwen/Qwen3-8B"}

// Data files as `hf download` lays them out (README.md).
var tasks = map[string][3]string{ // train, validation ("" = 5% of train), test
	"sst2":  {"data/sst2/data/train-00000-of-00001.parquet", "", "data/sst2/data/validation-00000-of-00001.parquet"},
	"squad": {"data/squad/plain_text/train-00000-of-00001.parquet", "", "data/squad/plain_text/validation-00000-of-00001.parquet"},
	"xsum":  {"data/xsum/default/train/0000.parquet", "data/xsum/default/validation/0000.parquet", "data/xsum/default/test/0000.parquet"},
}

var taskOrder = []string{"sst2", "squad", "xsum"}

// initText are the paper's prompt-tuning initialisation texts, one per task:
// its 20 virtual tokens start as the embeddings of these texts' tokens
// (repeated or cut to 20, as PEFT does). Without adapter.init_text a run starts from the task's system
// prompt (data/chat.go), which is what a task the paper did not run gets.
var initText = map[string]string{
	"sst2":  "Sentiment task: classify text as positive or negative. Output only positive or negative.",
	"squad": "Extract answer from passage only using exact text span answering the question precisely and concisely.",
	"xsum":  "Summarize the article into one concise sentence capturing the main event, key facts, and essential context clearly.",
}

var optimizers = []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"}

// lr are starting points from the paper's reported optimal LoRA step sizes
// (docs/ALGORITHMS.md: ZO-SGD ~1e-4, ZO-Adam and MEAZO ~2e-4..6e-4, R-AdaZO
// ~5e-5..1e-4). FZOO's step is normalised like MEAZO's sign-like first step,
// so it starts at MEAZO's rate. Prompt tuning is not reported: it starts ten
// times higher (its parameters are embeddings of norm ~1) and should be swept.
var lr = map[string]float64{"meazo": 2e-4, "zo-sgd": 1e-4, "zo-adam": 2e-4, "radazo": 5e-5, "fzoo": 2e-4}

const usage = "usage: go run ./scripts/genconfigs [DIR]   writes every generated config and study file into DIR (default configs)"

func main() {
	out, err := outDir(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "genconfigs: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	files := Generate()
	if err := os.MkdirAll(out, 0o755); err != nil {
		fail(err)
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, name)), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), []byte(body), 0o644); err != nil {
			fail(err)
		}
	}
	fmt.Printf("wrote %d configs to %s\n", len(files), out)
}

// outDir is the directory the arguments name: configs by default. A flag
// (-h, --help) is refused, not taken for a directory to write 133 files into.
func outDir(args []string) (string, error) {
	switch {
	case len(args) == 0:
		return "configs", nil
	case len(args) > 1:
		return "", fmt.Errorf("want at most one directory, got %q", args)
	case strings.HasPrefix(args[0], "-"):
		return "", fmt.Errorf("%s: genconfigs takes no flags", args[0])
	}
	return args[0], nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genconfigs:", err)
	os.Exit(1)
}

// Generate returns every config file by name.
func Generate() map[string]string {
	files := map[string]string{}
	for _, m := range models {
		for _, task := range taskOrder {
			for _, adapter := range []string{"lora", "prompt"} {
				for _, opt := range optimizers {
					name := fmt.Sprintf("%s_%s_%s_%s.yaml", m.short, task, adapter, opt)
					files[name] = config(m, task, adapter, opt, false)
					if adapter == "lora" {
						files[fmt.Sprintf("%s_%s_lora-grouped_%s.yaml", m.short, task, opt)] = config(m, task, adapter, opt, true)
					}
				}
			}
		}
	}
	// The headline command: meazo-train --config configs/llama1b_squad.yaml.
	files["llama1b_squad.yaml"] = config(models[0], "squad", "lora", "meazo", false)
	for _, task := range taskOrder {
		for _, opt := range optimizers {
			files[fmt.Sprintf("%s_%s_lora_%s.yaml", qwen3_8b.short, task, opt)] = config(qwen3_8b, task, "lora", opt, false)
		}
	}
	for _, m := range models {
		for _, opt := range fullOptimizers {
			files[fmt.Sprintf("%s_sst2_full_%s.yaml", m.short, opt)] = fullConfig(m, opt)
		}
	}
	for _, opt := range optimizers {
		files[fmt.Sprintf("%s_squad_lora_%s.yaml", ministral.short, opt)] = config(ministral, "squad", "lora", opt, false)
	}
	files["studies/full.yaml"] = fullStudy()
	files["studies/ministral.yaml"] = ministralStudy()
	addOPT(files)
	addViT(files)
	addOwnData(files)
	addQwen25(files)
	files["studies/paper.yaml"] = paperStudy()
	files["studies/demo.yaml"] = demoStudy
	files["studies/zo-adam-beta1.yaml"] = variantStudy("zo-adam-beta1", "zo-adam",
		"ZO-Adam with β1 = 0 (no first moment: RMSProp-like) and the default β1 = 0.9, the paper's Figure 18",
		[]variant{{"beta1=0", "β1 = 0", "optimizer.beta1=0"}, {"beta1=0.9", "β1 = 0.9", "optimizer.beta1=0.9"}})
	files["studies/meazo-noise.yaml"] = variantStudy("meazo-noise", "meazo",
		"MEAZO with the four noise distributions (normal, Rademacher, ternary, uniform on the sphere), the paper's Figure 19.\n"+
			"# At the protocol's eps 1e-6 a unit-sphere direction moves each of Llama-3.2-1B's 1.7 M LoRA weights by about\n"+
			"# eps/√D = 7.7e-10, below float32's rounding of the losses (meazo-train warns); a variant\n"+
			"# {name: sphere-scaled, label: \"sphere, ε·√D\", set: [optimizer.dist=sphere, optimizer.eps=1.3e-3]} moves them as normal\n"+
			"# noise at 1e-6 does",
		[]variant{{"normal", "normal", "optimizer.dist=normal"}, {"rademacher", "Rademacher", "optimizer.dist=rademacher"},
			{"ternary", "ternary", "optimizer.dist=ternary"}, {"sphere", "sphere", "optimizer.dist=sphere"}})
	return files
}

// ministral is Ministral-3 14B Instruct, the paper's appendix model (its
// Tables 7–8, Figures 16–17): LoRA r = 16 on q/v of the language model,
// SQuAD, weights in bf16. The Hub's default repository holds FP8 weights,
// which the loader refuses; the BF16 one is the checkpoint to download
// (docs/MODELS.md). Every optimizer of Table 1 gets a config.
var ministral = modelSpec{"ministral14b", "models/Ministral-3-14B-Instruct-2512-BF16", "mistralai/Ministral-3-14B-Instruct-2512-BF16"}

// ministralStudy is the paper's Ministral appendix: Ministral-3 14B LoRA
// on SQuAD in bf16, every optimizer, the two-stage search with 3 seeds.
func ministralStudy() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# The paper's Ministral appendix (Tables 7–8, Figures 16–17): LoRA r = 16 on q_proj/v_proj of Ministral-3 14B
# Instruct's language model, SQuAD, in bf16 (model.bf16_weights, model.bf16_products), each with MEAZO, ZO-SGD, ZO-Adam, R-AdaZO
# and FZOO: the two-stage learning-rate search (the paper's coarse grid, then the fine grid; seeds 0 1 2).
# Generated by scripts/genconfigs; keys and cost: docs/SWEEPS.md. The checkpoint (docs/MODELS.md):
#   hf download %s --local-dir %s
#   meazo-sweep run configs/studies/ministral.yaml
#   meazo-plot study --out sweeps/ministral/report configs/studies/ministral.yaml
# A run holds 25 GiB of bf16 weights on its GPU (an 80 GB one fits it); adjust executor.slurm to your cluster.
name: ministral
out: sweeps/ministral
seeds: [0, 1, 2]
experiments:
  - name: %s_squad_lora
    config: configs/%s_squad_lora_{optimizer}.yaml
    optimizers: [%s]
`, ministral.hub, ministral.dir, ministral.short, ministral.short, strings.Join(optimizers, ", "))
	b.WriteString(strings.Replace(slurmExecutor, "mem: 32G", "mem: 64G # the 28 GB checkpoint is memory-mapped", 1))
	return b.String()
}

// fullOptimizers are the optimizers of the full-parameter comparison (the
// paper's Figure 20): FZOO against MEAZO and ZO-SGD (MeZO).
var fullOptimizers = []string{"meazo", "zo-sgd", "fzoo"}

// fullLR are the full-parameter starting rates: MeZO's ZO-SGD rate for
// full fine-tuning (its grid is {1e-6, 1e-7}), MEAZO's and FZOO's 1e-5
// (the paper's, and FZOO's default: both steps are normalised).
var fullLR = map[string]float64{"meazo": 1e-5, "zo-sgd": 1e-7, "fzoo": 1e-5}

// fullConfig is full-parameter ZO on SST-2 in MeZO's setting: every weight,
// ε = 1e-3, batch 16, 20,000 steps; FZOO with its defaults (q = 8,
// Rademacher noise).
func fullConfig(m modelSpec, opt string) string {
	q, dist := 1, "normal"
	if opt == "fzoo" {
		q, dist = 8, "rademacher"
	}
	files := tasks["sst2"]
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, sst2, full-parameter (every weight, in place), %s. Generated by scripts/genconfigs; keys: docs/CONFIG.md.\n", m.hub, opt)
	fmt.Fprintf(&b, "# MeZO's full-parameter hyperparameters (batch 16, constant lr, eps 1e-3, 20,000 steps), in float32 on the paper's\n")
	fmt.Fprintf(&b, "# SST-2 split (MeZO's script loads float16 and samples 1,000/500 examples); the model with the lowest validation\n")
	fmt.Fprintf(&b, "# loss is kept (best/, an HF model directory). A checkpoint holds the whole model: checkpoint_every is sparse.\n")
	fmt.Fprintf(&b, "model:\n  path: %s\n  name: %s\n", m.dir, m.hub)
	fmt.Fprintf(&b, "task:\n  name: sst2\n  train: %s\n  test: %s\n", files[0], files[2])
	b.WriteString("adapter:\n  kind: full\n  grouped: false\n")
	fmt.Fprintf(&b, "optimizer:\n  name: %s\n  lr: %g\n  eps: 1e-3\n  q: %d\n  dist: %s\n", opt, fullLR[opt], q, dist)
	if opt == "meazo" {
		b.WriteString("  beta: 0.999\n  zeta: 1e-8\n")
	}
	b.WriteString("train:\n  steps: 20000\n  batch_size: 16\n  seed: 0\n  eval_every: 1000\n  checkpoint_every: 2000\n")
	b.WriteString("eval:\n  batch_size: 16\n")
	fmt.Fprintf(&b, "output:\n  dir: runs/%s_sst2_full_%s\n", m.short, opt)
	return b.String()
}

// fullStudy is the full-parameter comparison on SST-2: MEAZO, ZO-SGD and
// FZOO on every weight of Llama-3.2-1B and Qwen3-0.6B, each with the
// two-stage search over a grid of full fine-tuning's rates.
func fullStudy() string {
	var b strings.Builder
	b.WriteString(`# Full-parameter ZO on SST-2 (every weight of the model, perturbed as it is read and updated in place):
# MEAZO, ZO-SGD (MeZO) and FZOO on Llama-3.2-1B and Qwen3-0.6B, the two-stage learning-rate search with 3 seeds
# over full fine-tuning's rates (ZO-SGD's MeZO grid 1e-7..1e-6, MEAZO's and FZOO's normalised steps about 1e-5).
# Generated by scripts/genconfigs; keys and cost: docs/SWEEPS.md. A checkpoint is a whole model (about 5 GB for
# Llama-3.2-1B in float32) and the study runs up to 378 runs (6 sweeps of 15 coarse and up to 48 fine): once its test
# evaluation is over, each run keeps no weights (output.keep_weights=none below; its numbers, summary.json and test
# answers stay). Its best/ alone would be 1.4 TB for the study. To keep a model, train η*'s run again without it.
#   meazo-sweep plan configs/studies/full.yaml
#   meazo-sweep run configs/studies/full.yaml
#   meazo-plot study --out sweeps/full/report configs/studies/full.yaml
name: full
out: sweeps/full
seeds: [0, 1, 2]
coarse: [1e-8, 1e-7, 1e-6, 1e-5, 1e-4]
set: [output.keep_weights=none]
experiments:
`)
	for _, m := range models {
		fmt.Fprintf(&b, "  - name: %s_sst2_full\n    config: configs/%s_sst2_full_{optimizer}.yaml\n    optimizers: [%s]\n",
			m.short, m.short, strings.Join(fullOptimizers, ", "))
	}
	b.WriteString(slurmExecutor)
	return b.String()
}

// slurmExecutor is the paper studies' executor: one GPU a run on a Slurm
// cluster (adjust to yours).
const slurmExecutor = `executor:
  kind: slurm
  slurm:
    partition: gpu
    time: "24:00:00"
    mem: 32G
    cpus_per_task: 8
    gres: gpu:1
    throttle: 32
    signal_seconds: 600
    setup: ["export PATH=$HOME/go/bin:$PATH"]
`

// variant is one entry of a study's variants: its directory name, label and
// --set line.
type variant struct{ name, label, set string }

// variantStudy is a study of one optimizer in several variants (docs/SWEEPS.md,
// "variants"): Llama-3.2-1B LoRA on each task, the two-stage search with 3
// seeds per variant, each variant its own line in the figures and its own
// column in the table.
func variantStudy(name, opt, what string, vs []variant) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# %s:
# Llama-3.2-1B LoRA on SST-2, SQuAD and XSum, each variant its own two-stage learning-rate search (seeds 0 1 2);
# meazo-plot study draws the variants side by side, labelled, and gives each a column of the table.
# Generated by scripts/genconfigs; keys and cost: docs/SWEEPS.md (a variant costs as much as an optimizer).
#   meazo-sweep plan configs/studies/%s.yaml
#   meazo-sweep run configs/studies/%s.yaml
#   meazo-plot study --out sweeps/%s/report configs/studies/%s.yaml
name: %s
out: sweeps/%s
seeds: [0, 1, 2]
experiments:
`, what, name, name, name, name, name, name)
	for _, task := range taskOrder {
		fmt.Fprintf(&b, "  - name: llama1b_%s_lora\n    config: configs/llama1b_%s_lora_%s.yaml\n    optimizers: [%s]\n    variants:\n",
			task, task, opt, opt)
		for _, v := range vs {
			fmt.Fprintf(&b, "      - {name: %s, label: %q, set: [%s]}\n", v.name, v.label, v.set)
		}
	}
	b.WriteString(slurmExecutor)
	return b.String()
}

// paperStudy is the paper's study for meazo-sweep (docs/SWEEPS.md): LoRA and
// prompt tuning for each model on each task, grouped LoRA on SQuAD and SST-2,
// Qwen3-8B's LoRA on each task (Table 1), every optimizer, the two-stage
// search with 3 seeds.
func paperStudy() string {
	var b strings.Builder
	b.WriteString(`# The paper's study: LoRA and prompt tuning of Llama-3.2-1B and Qwen3-0.6B on SST-2, SQuAD and XSum,
# grouped (per-layer) LoRA on SQuAD and SST-2, and LoRA of Qwen3-8B on the three tasks (Table 1), each with MEAZO,
# ZO-SGD, ZO-Adam, R-AdaZO and FZOO: one two-stage learning-rate search (the paper's coarse grid 1e-6 … 1e-1, then
# the fine grid; seeds 0 1 2) per experiment and optimizer. Generated by scripts/genconfigs; keys and cost:
# docs/SWEEPS.md. Qwen3-8B keeps its weights in bfloat16 (16 GiB on the GPU, model.bf16_weights).
#   meazo-sweep plan configs/studies/paper.yaml     # the sbatch scripts, submits nothing
#   meazo-sweep run configs/studies/paper.yaml      # submits stage 1; stage 2 follows by itself
# Adjust executor.slurm to your cluster (partition, account, gres, setup).
name: paper
out: sweeps/paper
seeds: [0, 1, 2]
experiments:
`)
	for _, m := range models {
		for _, task := range taskOrder {
			adapters := []string{"lora", "prompt"}
			if task != "xsum" {
				adapters = append(adapters, "lora-grouped")
			}
			for _, a := range adapters {
				paperExperiment(&b, m, task, a)
			}
		}
	}
	for _, task := range taskOrder {
		paperExperiment(&b, qwen3_8b, task, "lora")
	}
	b.WriteString(slurmExecutor)
	return b.String()
}

// paperExperiment writes one experiment of the paper's study: model m's
// adapter on task, a sweep per optimizer.
func paperExperiment(b *strings.Builder, m modelSpec, task, adapter string) {
	fmt.Fprintf(b, "  - name: %s_%s_%s\n    config: configs/%s_%s_%s_{optimizer}.yaml\n    optimizers: [%s]\n",
		m.short, task, adapter, m.short, task, adapter, strings.Join(optimizers, ", "))
}

const demoStudy = `# A small study on the built-in demo (a tiny random model and a synthetic sentiment task, written by
# meazo-sweep into demo-data the first time): the two-stage learning-rate search for MEAZO and ZO-SGD with
# 2 seeds, for LoRA, grouped LoRA and prompt tuning, each run scored on the demo's 200 test sentences (the
# base model too, for the figures). It shows the machinery in a few minutes on 2 cores; 40 steps are not
# the demo's 600, so the accuracies are far below what meazo-train --demo reaches, and the coarse grid is
# the demo's narrow one, which the report flags where η* ends at its edge. Generated by
# scripts/genconfigs; keys: docs/SWEEPS.md.
#   make build && bin/meazo-sweep run configs/studies/demo.yaml
#   bin/meazo-plot study --out runs/study-demo/report configs/studies/demo.yaml
name: demo
out: runs/study-demo
demo: runs/study-demo/demo-data
seeds: [0, 1]
coarse: [1e-2, 2e-2, 5e-2]
set: [train.steps=40, train.eval_every=10, train.checkpoint_every=10, task.max_validation=16]
experiments:
  - name: demo_lora
    config: runs/study-demo/demo-data/demo.yaml
    optimizers: [meazo, zo-sgd]
  - name: demo_lora-grouped
    config: runs/study-demo/demo-data/demo.yaml
    optimizers: [meazo, zo-sgd]
    set: [adapter.grouped=true]
  - name: demo_prompt
    config: runs/study-demo/demo-data/demo.yaml
    optimizers: [meazo, zo-sgd]
    set: [adapter.kind=prompt]
executor:
  kind: local
`

// protocolQ is the directions a step of the paper's LoRA and prompt-tuning
// runs, as writeOptimizer sets them, for the configs' headers.
func protocolQ(opt string) string {
	if opt == "fzoo" {
		return "q 2 with Rademacher noise (FZOO needs q >= 2)"
	}
	return "q 1"
}

// writeOptimizer writes the optimizer section of the paper's LoRA and
// prompt-tuning runs: ε 1e-6, q 1 with normal noise (FZOO: q 2, Rademacher
// noise, as its reference; it needs q >= 2), each optimizer's decays.
func writeOptimizer(b *strings.Builder, opt string, rate float64) {
	q, dist := 1, "normal"
	if opt == "fzoo" {
		q, dist = 2, "rademacher"
	}
	fmt.Fprintf(b, "optimizer:\n  name: %s\n  lr: %g\n  eps: 1e-6\n  q: %d\n  dist: %s\n", opt, rate, q, dist)
	switch opt {
	case "meazo":
		b.WriteString("  beta: 0.999\n  zeta: 1e-8\n")
	case "zo-adam", "radazo":
		b.WriteString("  beta1: 0.9\n  beta2: 0.999\n")
	}
}

func config(m modelSpec, task, adapter, opt string, grouped bool) string {
	rate := lr[opt]
	steps := 10000
	if adapter == "prompt" {
		rate *= 10
		steps = 20000
	}
	files := taskFiles(task)
	var b strings.Builder
	kind := adapter
	if grouped {
		kind += ", one parameter group per layer (prefix caching)"
	}
	fmt.Fprintf(&b, "# %s, %s, %s (%s), %s. Generated by scripts/genconfigs; keys: docs/CONFIG.md.\n", m.hub, task, adapter, kind, opt)
	fmt.Fprintf(&b, "# Paper protocol: batch 8, constant lr, eps 1e-6, %s, best adapter by validation loss.\n", protocolQ(opt))
	fmt.Fprintf(&b, "model:\n  path: %s\n  name: %s\n", m.dir, m.hub)
	switch m {
	case qwen3_8b:
		b.WriteString("  bf16_weights: true # 16 GiB of weights instead of 32\n")
	case ministral:
		b.WriteString("  bf16_weights: true # the paper runs Ministral in bf16: 25 GiB of language-model weights\n")
		b.WriteString("  bf16_products: true # and multiplies in bf16, as PyTorch: on a GPU's tensor cores (no effect on the CPU)\n")
	}
	fmt.Fprintf(&b, "task:\n  name: %s\n%s  train: %s\n", task, ownTaskKeys[task], files[0])
	if files[1] != "" {
		fmt.Fprintf(&b, "  validation: %s\n", files[1])
	}
	fmt.Fprintf(&b, "  test: %s\n", files[2])
	if adapter == "lora" {
		fmt.Fprintf(&b, "adapter:\n  kind: lora\n  r: 16\n  alpha: 16\n  targets: [q_proj, v_proj]\n  grouped: %v\n", grouped)
	} else {
		// %q writes a YAML double-quoted string (the texts are ASCII).
		fmt.Fprintf(&b, "adapter:\n  kind: prompt\n  virtual_tokens: 20\n  init_text: %q # the paper's\n", initText[task])
	}
	writeOptimizer(&b, opt, rate)
	fmt.Fprintf(&b, "train:\n  steps: %d\n  batch_size: 8\n  seed: 0\n  eval_every: 500\n  checkpoint_every: 500\n", steps)
	fmt.Fprintf(&b, "eval:\n  batch_size: 8\n")
	name := fmt.Sprintf("%s_%s_%s_%s", m.short, task, adapter, opt)
	if grouped {
		name = fmt.Sprintf("%s_%s_lora-grouped_%s", m.short, task, opt)
	}
	fmt.Fprintf(&b, "output:\n  dir: runs/%s\n", name)
	return b.String()
}
