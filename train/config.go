// Package train runs zeroth-order fine-tuning: it assembles the model,
// tokenizer, data, adapter, ZO engine and metrics into a training run that
// logs every step, validates, keeps the best adapter, checkpoints, resumes
// bit-identically and evaluates on the task's test split.
package train

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/strictyaml"
	"github.com/meazo-go/meazo/internal/suggest"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/zo"
)

// Config is a whole experiment. Every field's `doc` tag is its documentation;
// docs/CONFIG.md is generated from it (go run ./cmd/meazo-train -config-doc),
// and a test checks the file is current.
type Config struct {
	Model     ModelConfig     `mapstructure:"model" yaml:"model"`
	Task      TaskConfig      `mapstructure:"task" yaml:"task"`
	Adapter   AdapterConfig   `mapstructure:"adapter" yaml:"adapter"`
	Optimizer OptimizerConfig `mapstructure:"optimizer" yaml:"optimizer"`
	Train     TrainConfig     `mapstructure:"train" yaml:"train"`
	Eval      EvalConfig      `mapstructure:"eval" yaml:"eval"`
	Output    OutputConfig    `mapstructure:"output" yaml:"output"`
}

// ModelConfig is the config's model section: which checkpoint, where it runs.
type ModelConfig struct {
	Path         string `mapstructure:"path" yaml:"path" doc:"HF model directory: config.json, safetensors weights (one file or sharded), tokenizer.json, tokenizer_config.json [, chat_template.jinja]; for task pets a ViT's: config.json (ViTForImageClassification, or ViTModel such as google/vit-base-patch16-224-in21k, which gets a fresh classifier drawn from train.seed), safetensors weights, preprocessor_config.json"`
	Name         string `mapstructure:"name" yaml:"name" doc:"base_model_name_or_path written into saved adapters and the model's name in summary.json (default: path). A --set model.path to another directory without --set model.name drops the config's name: the run records the weights it used, not a published model they may not be (a resume that points model.path at the same files moved elsewhere keeps it)"`
	DateString   string `mapstructure:"date_string" yaml:"date_string" doc:"Llama-3.x chat template date_string, pinned for reproducibility"`
	BF16         bool   `mapstructure:"bf16_weights" yaml:"bf16_weights" doc:"keep matrices stored as BF16 in the checkpoint in bfloat16 in memory: half the memory, bit-identical results (LoRA, prompt tuning, evaluation: the weights are frozen; adapter.kind full trains them in bfloat16, each update rounded stochastically, and saves best/ and last/ in bfloat16: not the float32 run's numbers, docs/ALGORITHMS.md, so such a run keeps the setting it started with on resume; without it a BF16 checkpoint trains and is saved in float32; on a checkpoint with no BF16 weight, such as OPT's float16 one, it has no effect, which the run's log says: float16 is not rounded to bfloat16); on the CPU within a few % of float32 at large batches and faster when decoding (half the bytes to stream)"`
	BF16Products bool   `mapstructure:"bf16_products" yaml:"bf16_products" doc:"with model.bf16_weights, have a GPU multiply the weights kept in bfloat16 on its tensor cores, the activations rounded to bfloat16 and the products summed in float32 (cublasGemmEx), as PyTorch runs a bfloat16 model: much faster (Ministral-3 14B's LoRA step on an H200 took 0.28 s instead of 2.43 s, docs/bench/2026-11-30-h200/), but not float32's numbers, so a run keeps the setting it started with on resume. Refused without model.bf16_weights, and with adapter.kind full (a full-parameter run's perturbed products stay float32: its clean and perturbed passes would multiply differently). The CPU backend has no such products: there it has no effect, which the run's log says"`
	Backend      string `mapstructure:"backend" yaml:"backend" doc:"where the forward passes run: auto (CUDA when an NVIDIA GPU and its libraries load, else the CPU; the log says which), cpu or cuda. Each backend is bit-identical to itself run to run; CPU and CUDA agree to float32 rounding, not bit for bit, so resume a run on the backend it started on"`
}

// TaskConfig is the config's task section: the task, its files and how
// many examples of each split are used.
type TaskConfig struct {
	Name          string   `mapstructure:"name" yaml:"name" doc:"sst2, squad or xsum (text, on a decoder); pets (Oxford-IIIT Pets' 37 breeds on a ViT image classifier: LoRA on linear layers of its encoder, query/value as the paper, and the classifier, scored by accuracy); classification or generation: your own data on a decoder, in JSON Lines (README.md, \"Your own data\"): classification rows {\"text\", \"label\"} with task.labels, scored by accuracy as SST-2 (the label whose answer is likeliest); generation rows {\"prompt\", \"completion\"[, \"references\"]}, scored by greedy generation with SQuAD's exact_match and f1 and XSum's ROUGE against the completion and references"`
	Labels        []string `mapstructure:"labels" yaml:"labels,omitempty" doc:"classification: its classes, the assistant's answer for each (at least 2, distinct, e.g. [negative, positive]); required for it, refused for other tasks"`
	Instruction   string   `mapstructure:"instruction" yaml:"instruction,omitempty" doc:"classification, generation: the system turn of every conversation, where the paper's tasks have their instructions (data/chat.go); empty: none (the row's text or prompt is the user turn alone); refused for other tasks, whose instructions are the paper's"`
	Train         string   `mapstructure:"train" yaml:"train" doc:"training data file (.tsv GLUE, .json official SQuAD, .jsonl, .parquet HF hub; classification and generation: .jsonl only); pets: the HF hub's Parquet (timm/oxford-iiit-pet: image.bytes, label, image_id)"`
	Validation    string   `mapstructure:"validation" yaml:"validation" doc:"validation file; empty: SST-2, SQuAD, Pets, classification and generation hold out 5% of train (paper split), XSum requires it"`
	Test          string   `mapstructure:"test" yaml:"test" doc:"test file (SST-2: GLUE dev; SQuAD: dev-v1.1.json; XSum: test; Pets: test; classification, generation: a .jsonl of their rows)"`
	DataSeed      uint64   `mapstructure:"data_seed" yaml:"data_seed" doc:"seed of the 95/5 train/validation permutation (the same for every run, so runs are comparable)"`
	MaxTrain      int      `mapstructure:"max_train" yaml:"max_train" doc:"keep the first N training examples (0: the paper's limit: SQuAD/XSum 50,000, SST-2, classification and generation all)"`
	MaxValidation int      `mapstructure:"max_validation" yaml:"max_validation" doc:"keep the first N validation examples (0: the paper's limit: SQuAD/XSum 1,000, SST-2, classification and generation all)"`
	MaxTest       int      `mapstructure:"max_test" yaml:"max_test" doc:"evaluate on the first N test examples (0: all)"`
	MaxLength     int      `mapstructure:"max_length" yaml:"max_length" doc:"the length rule of every split: training and validation examples longer than this many tokens after chat rendering are dropped, and test examples whose evaluation would take more (SST-2, classification: the longest rendered answer; SQuAD, XSum, generation: the generation prompt plus eval.max_new_tokens) are skipped, the log saying how many and which (the first ids); an evaluation batch's memory is then bounded by it, whatever the data (0: no rule; the paper's filter for XSum; for SST-2 and SQuAD it only guards memory: no example comes near 2,048). An OPT model's learned positions (max_position_embeddings, less prompt tuning's virtual tokens) bound it too, the log saying so: OPT's published models have 2,048, a smaller test model fewer"`
	Strict        bool     `mapstructure:"strict" yaml:"strict" doc:"stop at the first malformed data row instead of reporting and skipping it"`
	Format        string   `mapstructure:"format" yaml:"format" doc:"how examples become text: chat (the conversations in the model's chat template) or mezo (MeZO's prompt templates, for models without a chat template such as OPT: SST-2 only, \"<sentence> It was great|terrible\", the label word supervised)"`
}

// AdapterConfig is the config's adapter section: LoRA or prompt tuning and
// their shapes.
type AdapterConfig struct {
	Kind          string   `mapstructure:"kind" yaml:"kind" doc:"lora, prompt (prompt tuning) or full (every weight of the model, full-parameter ZO: perturbed and updated in place, in the memory of inference)"`
	R             int      `mapstructure:"r" yaml:"r" doc:"LoRA rank"`
	Alpha         float64  `mapstructure:"alpha" yaml:"alpha" doc:"LoRA alpha; the update is scaled by alpha/r (alpha/√r with adapter.rslora)"`
	RSLoRA        bool     `mapstructure:"rslora" yaml:"rslora,omitempty" doc:"LoRA: scale the update by alpha/√r instead of alpha/r, as PEFT's use_rslora (rank-stabilised LoRA); saved in adapter_config.json"`
	Layers        []int    `mapstructure:"layers" yaml:"layers,omitempty" doc:"LoRA: the decoder layers adapted, e.g. [20, 21, 22, 23] (a ViT's encoder layers for task pets; PEFT's layers_to_transform, saved in adapter_config.json; the ViT's classifier is trained whatever they are); empty: every layer. A decoder's step's perturbed points run from the first of them on, over the clean pass's hidden states below it (prefix caching): with q = 1 on the top quarter of the layers a step evaluates about 1.25 forwards' layers instead of 2"`
	Targets       []string `mapstructure:"targets" yaml:"targets" doc:"LoRA target projections, by PEFT's names: one or more of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (OPT: q_proj, k_proj, v_proj, out_proj, fc1, fc2), or all-linear alone for all of them, as PEFT's target_modules=\"all-linear\"; a ViT's (task pets), matched as PEFT matches target_modules (a name adapts each linear layer of every encoder layer whose path ends with it): query, key, value, attention.output.dense, intermediate.dense, output.dense (attention.output.dense too, as in PEFT), dense (all three dense layers), or all-linear alone (every linear layer of the encoder; the classifier is trained whole in any case)"`
	VirtualTokens int      `mapstructure:"virtual_tokens" yaml:"virtual_tokens" doc:"prompt tuning: number of virtual tokens (they take positions before every example: on OPT fewer than max_position_embeddings, or the run is refused)"`
	InitText      string   `mapstructure:"init_text" yaml:"init_text" doc:"prompt tuning: the text whose tokens' embeddings start the virtual tokens (repeated or cut to their number, as PEFT's TEXT init). The shipped configs carry the paper's text for each task; empty: the task's system prompt (data/chat.go), for a task the paper did not run"`
	Grouped       bool     `mapstructure:"grouped" yaml:"grouped" doc:"one parameter group per decoder layer (full: and the embeddings' and the head's), estimated one at a time with prefix caching (paper Alg. 3); LoRA and full"`
	Include       []string `mapstructure:"include" yaml:"include" doc:"full: glob patterns (Go's path.Match) of the HF tensor names that train, e.g. [model.layers.*] (OPT: [model.decoder.layers.*]); empty: every tensor. A pattern that matches none of the model's tensors is an error"`
	Exclude       []string `mapstructure:"exclude" yaml:"exclude" doc:"full: glob patterns of tensor names that do not train even if included, e.g. [model.embed_tokens.weight] (OPT: [model.decoder.embed_tokens.weight]; MeZO's fine-tuning without the embeddings; tied embeddings are the LM head too). A pattern that matches none of the model's tensors is an error; quote one that starts with * (YAML reads it as an alias): ['*norm*']"`
	Init          string   `mapstructure:"init" yaml:"init" doc:"start from this saved adapter directory (PEFT format) instead of a fresh one; its rank, alpha, use_rslora, targets and layers_to_transform (prompt tuning: virtual tokens) must equal adapter.r, adapter.alpha, adapter.rslora, adapter.targets and adapter.layers (adapter.virtual_tokens)"`
}

// OptimizerConfig is the config's optimizer section: the ZO optimizer, its
// hyperparameters and the estimator (ε, q, noise).
type OptimizerConfig struct {
	Name        string  `mapstructure:"name" yaml:"name" doc:"meazo, zo-sgd, zo-adam, radazo or fzoo"`
	LR          float64 `mapstructure:"lr" yaml:"lr" doc:"learning rate η (with a schedule: its rate after the warmup)"`
	Eps         float64 `mapstructure:"eps" yaml:"eps" doc:"perturbation scale ε"`
	Q           int     `mapstructure:"q" yaml:"q" doc:"directions per step (fzoo needs at least 2); a decoder evaluates a step's 2q perturbed points (fzoo: q+1) in one batched forward, so memory grows with q"`
	Dist        string  `mapstructure:"dist" yaml:"dist" doc:"noise: normal, sphere, rademacher or ternary; empty: the optimizer's default (rademacher for fzoo, as its reference; normal otherwise)"`
	Beta1       float64 `mapstructure:"beta1" yaml:"beta1" doc:"zo-adam / radazo first-moment decay, in [0, 1)"`
	Beta2       float64 `mapstructure:"beta2" yaml:"beta2" doc:"zo-adam / radazo second-moment decay, in [0, 1)"`
	Beta        float64 `mapstructure:"beta" yaml:"beta" doc:"meazo second-moment decay, in [0, 1)"`
	Zeta        float64 `mapstructure:"zeta" yaml:"zeta" doc:"meazo denominator constant ζ (positive: keeps the first step finite when v̂ is 0)"`
	Momentum    float64 `mapstructure:"momentum" yaml:"momentum" doc:"zo-sgd momentum, in [0, 1) (0: none)"`
	WeightDecay float64 `mapstructure:"weight_decay" yaml:"weight_decay" doc:"zo-sgd weight decay λ (>= 0)"`
	BiasCorrect bool    `mapstructure:"bias_correction" yaml:"bias_correction" doc:"radazo: apply Adam's bias correction (the reference code does not)"`
	Schedule    string  `mapstructure:"schedule" yaml:"schedule" doc:"learning-rate schedule over train.steps: constant (the paper's), linear or cosine (reaching 0 at train.steps, so the last step's rate is small but not 0); the rates of HF transformers' get_*_schedule_with_warmup"`
	WarmupSteps int     `mapstructure:"warmup_steps" yaml:"warmup_steps" doc:"steps of linear warmup from 0 to optimizer.lr before the schedule (HF's num_warmup_steps: step 0's rate is 0, as there; metrics.jsonl numbers that step 1, with lr 0)"`
}

// TrainConfig is the config's train section: steps, batch, seed, and how
// often to validate, checkpoint and log.
type TrainConfig struct {
	Steps           int    `mapstructure:"steps" yaml:"steps" doc:"number of ZO steps T (paper: 10,000 LoRA, 20,000 prompt tuning)"`
	BatchSize       int    `mapstructure:"batch_size" yaml:"batch_size" doc:"training examples per step; a batch (times 2q, or q+1, and with the virtual tokens) whose step cannot fit in this machine's memory is refused before the run writes anything"`
	Seed            uint64 `mapstructure:"seed" yaml:"seed" doc:"run seed: noise, sampler order and adapter initialisation"`
	EvalEvery       int    `mapstructure:"eval_every" yaml:"eval_every" doc:"compute the validation loss every N steps (and at the end)"`
	CheckpointEvery int    `mapstructure:"checkpoint_every" yaml:"checkpoint_every" doc:"write a resumable checkpoint every N steps (0: only at the end)"`
	Threads         int    `mapstructure:"threads" yaml:"threads" doc:"worker threads for the kernels and for encoding the data (0: all cores); results do not depend on it"`
	LogEvery        int    `mapstructure:"log_every" yaml:"log_every" doc:"print a progress line every N steps when not on a terminal (0: every step)"`
	Objective       string `mapstructure:"objective" yaml:"objective" doc:"what each perturbed variant's loss is: loss (the mini-batch's cross-entropy) or f1 (tasks squad and generation, adapter.kind lora or prompt: minus the mean SQuAD F1, 0-1, of the answers generated greedily for the mini-batch as the test evaluation generates them, eval.max_new_tokens and eval.batch_size included; MeZO's non-differentiable objective, docs/ALGORITHMS.md). The validation loss, best/ and train.patience stay on the cross-entropy; metrics.jsonl's train loss is then -F1. A step costs up to eval.max_new_tokens forwards per variant"`
	Patience        int    `mapstructure:"patience" yaml:"patience" doc:"stop early once this many validations in a row have not lowered the best validation loss (0: never, the paper's protocol): the run ends there as if train.steps were that step (changes.jsonl records it; --resume DIR --set train.steps=N trains on), and tests its best; the count runs during a warmup too, as HF's EarlyStoppingCallback's does"`
}

// EvalConfig is the config's eval section: how the test split is scored.
type EvalConfig struct {
	BatchSize    int  `mapstructure:"batch_size" yaml:"batch_size" doc:"sequences per evaluation forward / generation batch; the validation loss (batch means weighted by their tokens) changes in its last bits with it"`
	MaxNewTokens int  `mapstructure:"max_new_tokens" yaml:"max_new_tokens" doc:"generation cap (0: the task default, SQuAD 50, XSum and generation 100)"`
	Base         bool `mapstructure:"base" yaml:"base" doc:"also evaluate the base model (no adapter) on the test split"`
	Skip         bool `mapstructure:"skip" yaml:"skip" doc:"skip the final test evaluation"`
	Merge        bool `mapstructure:"merge" yaml:"merge" doc:"LoRA: evaluate the test split on a copy of the weights with the adapter merged into them, as PEFT's merge_and_unload (faster generation; a ViT's copy takes the adapter's classifier: the same accuracy without the low-rank terms; the merged copy is float32, so with model.bf16_products its products are float32's, not the run's)"`
	RougeStem    bool `mapstructure:"rouge_stem" yaml:"rouge_stem" doc:"XSum, generation: Porter-stem ROUGE tokens (off: HF evaluate's default, as the paper's metric)"`
	Predictions  bool `mapstructure:"predictions" yaml:"predictions" doc:"write each test example's answer, one JSON line each, into predictions_best.jsonl, predictions_last.jsonl (and predictions_base.jsonl) in the run directory: the generated text or the predicted label, the reference and the example's own scores, with the example's input (docs/RUNDIR.md): about 1 KB a SQuAD example, 2-3 KB an XSum one; false in a large sweep that does not need them"`
}

// OutputConfig is the config's output section: where the run directory is.
type OutputConfig struct {
	Dir string `mapstructure:"dir" yaml:"dir" doc:"run directory (created; see docs/RUNDIR.md)"`
	// KeepWeights is rundir.KeepAll, KeepBest or KeepNone.
	KeepWeights string `mapstructure:"keep_weights" yaml:"keep_weights" doc:"what a finished run (done or diverged) keeps of its weights once its test evaluation is over: all (checkpoint/, best/ and last/: it can be trained further with --resume --set train.steps=N), best (best/ alone; checkpoint/ and last/ removed) or none (no weights: the logs, summary.json and the test answers stay). A full-parameter run's checkpoint is a whole model: a study of them keeps best or none. An interrupted run keeps everything (it resumes)"`
}

// Defaults are the paper's settings where it has one.
func Defaults() Config {
	return Config{
		Model:     ModelConfig{DateString: "26 Jul 2024", Backend: "auto"},
		Task:      TaskConfig{MaxLength: data.DefaultMaxTokens, Format: string(data.FormatChat)},
		Adapter:   AdapterConfig{Kind: "lora", R: 16, Alpha: 16, Targets: []string{"q_proj", "v_proj"}, VirtualTokens: 20},
		Optimizer: OptimizerConfig{Name: "meazo", LR: 2e-4, Eps: 1e-6, Q: 1, Dist: "", Beta1: 0.9, Beta2: 0.999, Beta: 0.999, Zeta: 1e-8, Schedule: "constant"},
		Train:     TrainConfig{Steps: 10000, BatchSize: 8, EvalEvery: 500, CheckpointEvery: 500, LogEvery: 10, Objective: ObjectiveLoss},
		Eval:      EvalConfig{BatchSize: 8, Predictions: true},
		Output:    OutputConfig{Dir: "runs/run", KeepWeights: rundir.KeepAll},
	}
}

// configKey describes one leaf key of Config.
type configKey struct {
	key, doc, kind string
	def            any
}

// keys lists every leaf key of Config with its doc and default, in
// declaration order.
func keys() []configKey {
	var out []configKey
	def := reflect.ValueOf(Defaults())
	t := def.Type()
	for i := range t.NumField() {
		sec := t.Field(i)
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			out = append(out, configKey{
				key:  sec.Tag.Get("mapstructure") + "." + f.Tag.Get("mapstructure"),
				doc:  f.Tag.Get("doc"),
				kind: f.Type.String(),
				def:  def.Field(i).Field(j).Interface(),
			})
		}
	}
	return out
}

// Load reads a YAML config (path may be empty: defaults only) and applies
// "key=value" overrides, whose values are YAML scalars or lists. Unknown keys,
// in the file or the overrides, are errors that suggest the closest key.
func Load(path string, overrides []string) (*Config, error) {
	v := viper.New()
	known := keys()
	for _, k := range known {
		v.SetDefault(k.key, k.def)
	}
	file, err := mergeConfigFile(v, path, known)
	if err != nil {
		return nil, err
	}
	filePath := v.GetString("model.path")
	for _, o := range overrides {
		if err := applyOverride(v, o, known); err != nil {
			return nil, err
		}
	}
	dropNameWithPath(v, overrides, filePath)
	where := "config"
	if path != "" {
		where = "config " + path
	}
	var c Config
	if err := v.UnmarshalExact(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := c.Validate(); err != nil {
		return nil, blame(err, path, file, overrides)
	}
	return &c, nil
}

// mergeConfigFile reads the config file at path ("": none) into v, its
// keys and values checked first, and returns its text (for the lines of
// later messages).
func mergeConfigFile(v *viper.Viper, path string, known []configKey) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w%s", err, nearestConfig(path, err))
	}
	raw, err := parseConfigFile(b)
	if err != nil {
		if what := notAConfig(path, b); what != "" {
			return nil, fmt.Errorf("config %s: does not look like a YAML config (%s): --config takes a .yaml file of sections model:, task:, …, e.g. configs/qwen06b_sst2_lora_meazo.yaml", path, what)
		}
		return nil, fmt.Errorf("config %w", strictyaml.At(path, err))
	}
	if err := checkKeys(raw, "", known); err != nil {
		var ke *keyError
		if errors.As(err, &ke) {
			return nil, fmt.Errorf("config %s: %w", fileLine(path, b, ke.key), ke.err)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	v.SetConfigType("yaml")
	if err := v.MergeConfig(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return b, nil
}

// keyKind is a known key's Go type ("string", "float64", …), "" for others.
func keyKind(key string, known []configKey) string {
	if i := slices.IndexFunc(known, func(c configKey) bool { return c.key == key }); i >= 0 {
		return known[i].kind
	}
	return ""
}

// checkKeys walks a parsed YAML document and rejects keys Config lacks.
func checkKeys(m map[string]any, prefix string, known []configKey) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		full := prefix + k
		isSection := prefix == "" && slices.ContainsFunc(known, func(c configKey) bool { return strings.HasPrefix(c.key, full+".") })
		if _, isMap := m[k].(map[string]any); isSection && !isMap {
			return &keyError{full, fmt.Errorf("%q is a section: give it keys (e.g. %s.%s: …), not a value", full, full, firstKey(full, known))}
		}
		if sub, ok := m[k].(map[string]any); ok && prefix == "" {
			if !slices.ContainsFunc(known, func(c configKey) bool { return strings.HasPrefix(c.key, full+".") }) {
				return &keyError{full, unknownKey(full, known)}
			}
			if err := checkKeys(sub, full+".", known); err != nil {
				return err
			}
			continue
		}
		if err := checkKey(full, known); err != nil {
			return &keyError{full, err}
		}
		if m[k] != nil {
			if err := checkValue(full, m[k]); err != nil {
				return &keyError{full, err}
			}
		}
	}
	return nil
}

// firstKey returns the first key of a section, for messages.
func firstKey(section string, known []configKey) string {
	for _, k := range known {
		if s, leaf, _ := strings.Cut(k.key, "."); s == section {
			return leaf
		}
	}
	return ""
}

func checkKey(key string, known []configKey) error {
	if slices.ContainsFunc(known, func(c configKey) bool { return c.key == key }) {
		return nil
	}
	if first := firstKey(key, known); first != "" { // --set train=5
		return fmt.Errorf("%q is a section: set one of its keys (e.g. %s.%s=…), not the section", key, key, first)
	}
	return unknownKey(key, known)
}

// ModelName is base_model_name_or_path for saved adapters: model.name, or the path.
func (c *Config) ModelName() string {
	if c.Model.Name != "" {
		return c.Model.Name
	}
	return c.Model.Path
}

// Validate checks values that the type system does not: the inputs, the
// adapter, the optimizer, then the run's counts, each part's first error.
func (c *Config) Validate() error {
	if c.Task.Name == string(data.Pets) {
		if err := c.validateImageTask(); err != nil {
			return err
		}
	}
	for _, check := range []func() error{c.validateInputs, c.validateOwnTask, c.validateAdapter, c.validateOptimizer, c.validateRun, c.validateObjective} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateInputs checks the model and the task.
func (c *Config) validateInputs() error {
	switch {
	case c.Model.Path == "":
		return fmt.Errorf("model.path is required")
	case !slices.Contains([]string{"sst2", "squad", "xsum", "pets", "classification", "generation"}, c.Task.Name):
		return choiceError("task.name", c.Task.Name, "sst2", "squad", "xsum", "pets", "classification", "generation")
	case c.Task.Train == "":
		return fmt.Errorf("task.train is required")
	case c.Task.Format != string(data.FormatChat) && c.Task.Format != string(data.FormatMeZO):
		return choiceError("task.format", c.Task.Format, "chat", "mezo")
	case c.Task.Format == string(data.FormatMeZO) && c.Task.Name != "sst2":
		return fmt.Errorf("task.format mezo has only SST-2's template (MeZO's), not task.name %s: use task.format chat with a model that has a chat template", c.Task.Name)
	case !slices.Contains([]string{"auto", "cpu", "cuda"}, c.Model.Backend):
		return fmt.Errorf("model.backend %q: want auto, cpu or cuda (cuda: an NVIDIA GPU)", c.Model.Backend) // no "did you mean": gpu is one edit from cpu
	// adapter.kind full first: adding model.bf16_weights, as the other says, would not help it.
	case c.Model.BF16Products && c.Adapter.Kind == "full":
		return fmt.Errorf("model.bf16_products is for frozen weights (adapter.kind lora or prompt), not adapter.kind full: a full-parameter run's perturbed products stay float32, " +
			"so its clean passes (validation, FZOO's) would multiply otherwise than its perturbed ones; leave it off")
	case c.Model.BF16Products && !c.Model.BF16:
		return fmt.Errorf("model.bf16_products multiplies the weights that model.bf16_weights keeps in bfloat16, and it is off: add model.bf16_weights: true (--set model.bf16_weights=true)")
	}
	return nil
}

// choiceError refuses value for key, which takes one of choices, and names
// the closest choice where the value looks like a typo of it (two edits or
// fewer, case aside: "ful", "zo_sgd", "LoRA").
func choiceError(key, value string, choices ...string) error {
	msg := fmt.Sprintf("%s %q: want %s or %s", key, value, strings.Join(choices[:len(choices)-1], ", "), choices[len(choices)-1])
	v := strings.ToLower(value) // every choice is lower-case
	if c := suggest.Closest(v, choices); c != "" && suggest.Distance(v, c) <= 2 {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	return errors.New(msg)
}

// validateAdapter checks what trains: adapter.*.
func (c *Config) validateAdapter() error {
	switch {
	case c.Adapter.Kind != "lora" && c.Adapter.Kind != "prompt" && c.Adapter.Kind != "full":
		return choiceError("adapter.kind", c.Adapter.Kind, "lora", "prompt", "full")
	case c.Adapter.Kind == "full" && c.Adapter.Init != "":
		return fmt.Errorf("adapter.init %s: a full-parameter run starts from model.path (point model.path at a saved model directory, such as a run's best/)", c.Adapter.Init)
	case c.Adapter.Kind != "full" && (len(c.Adapter.Include) > 0 || len(c.Adapter.Exclude) > 0):
		return c.tensorsNotFull()
	case c.Adapter.Kind == "prompt" && c.Adapter.Grouped:
		return fmt.Errorf("adapter.grouped must be false for prompt tuning (it has a single parameter group)")
	case c.Adapter.Kind == "prompt" && c.Adapter.VirtualTokens <= 0:
		return fmt.Errorf("adapter.virtual_tokens must be positive, got %d", c.Adapter.VirtualTokens)
	case c.Adapter.Kind == "lora" && c.Adapter.R < 1:
		return fmt.Errorf("adapter.r must be at least 1, got %d", c.Adapter.R)
	case c.Adapter.Kind == "lora" && !(c.Adapter.Alpha > 0 && !math.IsInf(c.Adapter.Alpha, 0)):
		return fmt.Errorf("adapter.alpha must be positive and finite, got %g", c.Adapter.Alpha)
	case c.Adapter.Kind == "lora" && c.Task.Name != string(data.Pets) && !validTargets(c.Adapter.Targets, lora.SupportedTargets()):
		return fmt.Errorf("adapter.targets %v: want one or more of %v, each once (%s only alone)", c.Adapter.Targets, lora.SupportedTargets(), lora.AllLinear)
	}
	return checkLayers(c.Adapter.Layers)
}

// checkLayers refuses adapter.layers with an index below 0 or one given
// twice, naming that index alone: sorted, in n log n, as a list of
// millions is read (checked against the model's layers when it is loaded).
func checkLayers(layers []int) error {
	ls := slices.Sorted(slices.Values(layers))
	for i, l := range ls {
		switch {
		case l < 0:
			return fmt.Errorf("adapter.layers: layer %d: want layer indices from 0, each once", l)
		case i > 0 && l == ls[i-1]:
			return fmt.Errorf("adapter.layers: layer %d is named twice: want layer indices from 0, each once", l)
		}
	}
	return nil
}

// tensorsNotFull refuses adapter.include or adapter.exclude (the first
// given) on a run that is not full-parameter; the message starts with its
// key, for blame.
func (c *Config) tensorsNotFull() error {
	key, v := "adapter.include", c.Adapter.Include
	if len(v) == 0 {
		key, v = "adapter.exclude", c.Adapter.Exclude
	}
	return fmt.Errorf("%s %v: chooses tensors of a full-parameter run (adapter.kind full), not of adapter.kind %s", key, v, c.Adapter.Kind)
}

// Optimizers are the values of optimizer.name (and of a study's
// optimizers, meazo-bench's -opt).
var Optimizers = []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"}

// OptimizerChoice checks an optimizer's name against Optimizers, for key
// (the setting or flag that gave it): nil for one of them, else the
// choices, with a did-you-mean, and for mezo (one letter from meazo) that
// MeZO's optimizer is zo-sgd.
func OptimizerChoice(key, name string) error {
	switch {
	case slices.Contains(Optimizers, name):
		return nil
	case strings.EqualFold(name, "mezo"):
		return fmt.Errorf("%s %q: want meazo, zo-sgd, zo-adam, radazo or fzoo (MeZO's optimizer is zo-sgd; meazo is MEAZO)", key, name)
	}
	return choiceError(key, name, Optimizers...)
}

// validateOptimizer checks optimizer.*: its name, rates and decays.
func (c *Config) validateOptimizer() error {
	if err := OptimizerChoice("optimizer.name", c.Optimizer.Name); err != nil {
		return err
	}
	switch {
	case !(c.Optimizer.LR > 0) || math.IsInf(c.Optimizer.LR, 0):
		return fmt.Errorf("optimizer.lr must be positive and finite, got %g", c.Optimizer.LR)
	case !(c.Optimizer.Eps > 0) || math.IsInf(c.Optimizer.Eps, 0):
		return fmt.Errorf("optimizer.eps must be positive and finite, got %g", c.Optimizer.Eps)
	case !(c.Optimizer.Zeta > 0) || math.IsInf(c.Optimizer.Zeta, 0):
		return fmt.Errorf("optimizer.zeta must be positive and finite, got %g", c.Optimizer.Zeta)
	case !(c.Optimizer.WeightDecay >= 0) || math.IsInf(c.Optimizer.WeightDecay, 0):
		return fmt.Errorf("optimizer.weight_decay must be >= 0 and finite, got %g", c.Optimizer.WeightDecay)
	case !slices.Contains([]string{"", "normal", "sphere", "rademacher", "ternary"}, c.Optimizer.Dist):
		return choiceError("optimizer.dist", c.Optimizer.Dist, "normal", "sphere", "rademacher", "ternary")
	case c.Optimizer.Q < 1:
		return fmt.Errorf("optimizer.q must be at least 1, got %d", c.Optimizer.Q)
	case c.Optimizer.Name == "fzoo" && c.Optimizer.Q < 2:
		return fmt.Errorf("optimizer.q must be at least 2 for fzoo (the std of one loss is 0), got %d", c.Optimizer.Q)
	case c.Optimizer.Schedule == "constant_with_warmup":
		return fmt.Errorf("optimizer.schedule %q: HF's constant_with_warmup is constant here, with optimizer.warmup_steps", c.Optimizer.Schedule)
	case !slices.Contains([]string{"constant", "linear", "cosine"}, c.Optimizer.Schedule):
		return choiceError("optimizer.schedule", c.Optimizer.Schedule, "constant", "linear", "cosine")
	case c.Optimizer.WarmupSteps < 0:
		return fmt.Errorf("optimizer.warmup_steps must be at least 0, got %d", c.Optimizer.WarmupSteps)
	case c.Optimizer.Schedule != "constant" && c.Train.Steps == 0:
		return fmt.Errorf("optimizer.schedule %s runs over train.steps, which is 0", c.Optimizer.Schedule)
	}
	// The optimizers' moving averages need decays in [0, 1).
	for _, d := range []struct {
		key string
		v   float64
	}{{"optimizer.beta1", c.Optimizer.Beta1}, {"optimizer.beta2", c.Optimizer.Beta2}, {"optimizer.beta", c.Optimizer.Beta}, {"optimizer.momentum", c.Optimizer.Momentum}} {
		if !(d.v >= 0 && d.v < 1) {
			return fmt.Errorf("%s must be in [0, 1), got %g", d.key, d.v)
		}
	}
	return nil
}

// schedule is the learning-rate schedule of optimizer.schedule and
// optimizer.warmup_steps over train.steps (validated: a known name).
func (c *Config) schedule() zo.Schedule {
	kind, _ := zo.ParseSchedule(c.Optimizer.Schedule)
	return zo.Schedule{Kind: kind, Warmup: c.Optimizer.WarmupSteps, Steps: c.Train.Steps}
}

// validateRun checks the run's counts, batch sizes and output.
func (c *Config) validateRun() error {
	switch {
	case c.Train.EvalEvery < 1:
		return fmt.Errorf("train.eval_every must be at least 1, got %d", c.Train.EvalEvery)
	case c.Train.BatchSize < 1:
		return fmt.Errorf("train.batch_size must be at least 1, got %d", c.Train.BatchSize)
	case c.Eval.BatchSize < 1:
		return fmt.Errorf("eval.batch_size must be at least 1, got %d", c.Eval.BatchSize)
	case c.Output.Dir == "":
		return fmt.Errorf("output.dir is required")
	case !slices.Contains([]string{rundir.KeepAll, rundir.KeepBest, rundir.KeepNone}, c.Output.KeepWeights):
		return fmt.Errorf("output.keep_weights must be %s, %s or %s, got %q", rundir.KeepAll, rundir.KeepBest, rundir.KeepNone, c.Output.KeepWeights)
	}
	// Counts and limits where 0 means none (or the default), and no
	// negative value means anything. Each error starts with its key, so
	// that Load blames a --set value on --set.
	for _, n := range []struct {
		key string
		v   int
	}{{"train.steps", c.Train.Steps}, {"train.checkpoint_every", c.Train.CheckpointEvery}, {"train.threads", c.Train.Threads},
		{"train.log_every", c.Train.LogEvery}, {"train.patience", c.Train.Patience}, {"task.max_train", c.Task.MaxTrain}, {"task.max_validation", c.Task.MaxValidation},
		{"task.max_test", c.Task.MaxTest}, {"task.max_length", c.Task.MaxLength}, {"eval.max_new_tokens", c.Eval.MaxNewTokens}} {
		if n.v < 0 {
			return fmt.Errorf("%s must not be negative, got %d", n.key, n.v)
		}
	}
	return nil
}

// The values of train.objective.
const (
	ObjectiveLoss = "loss" // the mini-batch's cross-entropy
	ObjectiveF1   = "f1"   // minus the mean SQuAD F1 of the generated answers (f1Objective)
)

// validateObjective checks train.objective: f1 needs generated answers
// scored by SQuAD's F1 (tasks squad and generation) and an adapter whose
// variants a generation can take (LoRA, prompt tuning).
func (c *Config) validateObjective() error {
	switch {
	case c.Train.Objective != ObjectiveLoss && c.Train.Objective != ObjectiveF1:
		return choiceError("train.objective", c.Train.Objective, ObjectiveLoss, ObjectiveF1)
	case c.Train.Objective != ObjectiveF1:
		return nil
	case c.Task.Name != string(data.SQuAD) && c.Task.Name != string(data.Generation):
		return fmt.Errorf("train.objective f1 scores generated answers by SQuAD's F1: it takes task.name squad or generation, not %s (train.objective loss trains on the cross-entropy)", c.Task.Name)
	case c.Adapter.Kind == "full":
		return fmt.Errorf("train.objective f1 is not supported with adapter.kind full: generation with perturbed full weights is not built; use adapter.kind lora or prompt, or train.objective loss")
	}
	return nil
}

// validateImageTask checks what an image task (pets) can train: LoRA on a
// ViT's encoder linear layers (lora.SupportedViTTargets; of
// adapter.layers' encoder layers, or all of them; and the classifier,
// always).
func (c *Config) validateImageTask() error {
	switch {
	case c.Adapter.Kind != "lora":
		return fmt.Errorf("adapter.kind %s: task %s trains a LoRA adapter of its ViT (adapter.kind lora)", c.Adapter.Kind, c.Task.Name)
	case !validTargets(c.Adapter.Targets, lora.SupportedViTTargets()):
		return fmt.Errorf("adapter.targets %v: a ViT's LoRA targets one or more of %v, each once (%s only alone), as PEFT's target_modules names them (task %s)", c.Adapter.Targets, lora.SupportedViTTargets(), lora.AllLinear, c.Task.Name)
	}
	return nil
}

// layers is adapter.layers for lora.Options: nil for every layer.
func (a *AdapterConfig) layers() []int {
	if len(a.Layers) == 0 {
		return nil
	}
	return a.Layers
}

// validTargets reports whether ts names one or more of the projections
// supported, none twice, and lora.AllLinear only alone.
func validTargets(ts, supported []string) bool {
	for i, t := range ts {
		if !slices.Contains(supported, t) || slices.Contains(ts[:i], t) || t == lora.AllLinear && len(ts) > 1 {
			return false
		}
	}
	return len(ts) > 0
}

// YAML renders the resolved config (written into the run directory).
func (c *Config) YAML() ([]byte, error) { return yaml.Marshal(c) }

// ConfigDoc renders docs/CONFIG.md: every key, its type, default and meaning.
func ConfigDoc() string {
	var b strings.Builder
	b.WriteString("# Configuration keys\n\n")
	b.WriteString("Generated from `train.Config` by `meazo-train -config-doc`; do not edit by hand.\n")
	b.WriteString("A YAML file sets any of these; `--set key=value` overrides one (the value is YAML: `--set optimizer.lr=2e-4`,\n")
	b.WriteString("`--set adapter.targets=[q_proj,v_proj]`; a string key's value is taken as it is, so that `--out 'exp #1'` or\n")
	b.WriteString("`--set model.path=007` name those paths). Unknown keys are errors, and so are values of the wrong type: an int\n")
	b.WriteString("key takes a whole number (`train.steps: 2.5` is an error, not 2), a uint64 key a non-negative one (`--seed -1` is an\n")
	b.WriteString("error), a float64 key a number, a bool key `true`/`false`; an error names the key and where it was given: the file's line\n")
	b.WriteString("(`config c.yaml:7: train.batch_size must be at least 1, got 0`) or `--set` (`--set train.batch_size: must be at least 1, got 0`).\n")
	b.WriteString("A key written without a value (`lr:` or `lr: ~`) is an error too, not the default: write the value (`\"\"` for an empty\n")
	b.WriteString("string), or leave the key out for its default; so is a second YAML document after a `---` line (one config per file).\n")
	b.WriteString("A run keeps the configuration it was started with: `--resume DIR --set key=value` changes only some keys, and records\n")
	b.WriteString("the change in the run's `changes.jsonl` ([RUNDIR.md](RUNDIR.md)); an edited `config.yaml` in a run directory is refused on resume.\n")
	b.WriteString("Some keys are read only by some runs (`adapter.r` by LoRA, `optimizer.momentum` by zo-sgd, `eval.rouge_stem` by XSum:\n")
	b.WriteString("each one's meaning says whose); a `--set` of such a key that the run does not read starts a `note:` line of its log.\n")
	sec := ""
	for _, k := range keys() {
		s, _, _ := strings.Cut(k.key, ".")
		if s != sec {
			sec = s
			fmt.Fprintf(&b, "\n## %s\n\n| key | type | default | meaning |\n|---|---|---|---|\n", s)
		}
		def := fmt.Sprint(k.def)
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", k.key, k.kind, def, k.doc)
	}
	b.WriteString("\n## From HF's Trainer and MeZO's scripts\n\n")
	b.WriteString("The names their arguments give settings that are keys here under another name (a config or `--set` that uses\n")
	b.WriteString("one is refused with the key to use):\n\n| their name | key here |\n|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(trainerNames)) {
		fmt.Fprintf(&b, "| `%s` | `%s` |\n", name, trainerNames[name])
	}
	b.WriteString("\nHF's `lr_scheduler_type` `constant_with_warmup` is `optimizer.schedule: constant` with `optimizer.warmup_steps`.\n")
	return b.String()
}
