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
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/strictyaml"
	"github.com/meazo-go/meazo/rundir"
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
	Exclude       []string `mapstructure:"exclude" yaml:"exclude" doc:"full: glob patterns of tensor names that do not train even if included, e.g. [model.embed_tokens.weight] (OPT: [model.decoder.embed_tokens.weight]; MeZO's fine-tuning without the embeddings; tied embeddings are the LM head too). A pattern that matches none of the model's tensors, or none of those adapter.include selects, is an error; quote one that starts with * (YAML reads it as an alias): ['*norm*']"`
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
	WeightDecay float64 `mapstructure:"weight_decay" yaml:"weight_decay" doc:"zo-sgd weight decay λ (>= 0); never on a bias or a norm weight, as MeZO's update"`
	BiasCorrect bool    `mapstructure:"bias_correction" yaml:"bias_correction" doc:"radazo: apply Adam's bias correction (the reference code does not)"`
	Schedule    string  `mapstructure:"schedule" yaml:"schedule" doc:"learning-rate schedule over train.steps: constant (the paper's), linear or cosine (reaching 0 at train.steps, so the last step's rate is small but not 0); the rates of HF transformers' get_*_schedule_with_warmup"`
	WarmupSteps int     `mapstructure:"warmup_steps" yaml:"warmup_steps" doc:"steps of linear warmup from 0 to optimizer.lr before the schedule (HF's num_warmup_steps: step 0's rate is 0, as there; metrics.jsonl numbers that step 1, with lr 0)"`
}

// TrainConfig is the config's train section: steps, batch, seed, and how
// often to validate, checkpoint and log.
type TrainConfig struct {
	Steps           int    `mapstructure:"steps" yaml:"steps" doc:"number of ZO steps T (paper: 10,000 LoRA, 20,000 prompt tuning; 0 trains nothing: the starting weights are validated and tested, a baseline)"`
	BatchSize       int    `mapstructure:"batch_size" yaml:"batch_size" doc:"training examples per step; a batch (times 2q, or q+1, and with the virtual tokens) whose step cannot fit in this machine's memory is refused before the run writes anything"`
	Seed            uint64 `mapstructure:"seed" yaml:"seed" doc:"run seed: noise, sampler order and adapter initialisation"`
	EvalEvery       int    `mapstructure:"eval_every" yaml:"eval_every" doc:"compute the validation loss every N steps (and at the end)"`
	CheckpointEvery int    `mapstructure:"checkpoint_every" yaml:"checkpoint_every" doc:"write a resumable checkpoint every N steps (0: only at the end)"`
	Threads         int    `mapstructure:"threads" yaml:"threads" doc:"worker threads for the kernels and for encoding the data (0: all cores); results do not depend on it"`
	LogEvery        int    `mapstructure:"log_every" yaml:"log_every" doc:"print a progress line every N steps when not on a terminal (0: every step)"`
	Objective       string `mapstructure:"objective" yaml:"objective" doc:"what each perturbed variant's loss is: loss (the mini-batch's cross-entropy), f1 (tasks squad and generation, adapter.kind lora or prompt: minus the mean SQuAD F1, 0-1, of the answers generated greedily for the mini-batch as the test evaluation generates them, eval.max_new_tokens and eval.batch_size included; a step costs up to eval.max_new_tokens forwards per variant) or accuracy (tasks sst2 and classification, adapter.kind lora or prompt: minus the fraction of the mini-batch whose label the test evaluation's rule predicts right, every label candidate scored as the test evaluation scores them (labels of one token each, SST-2's included: all of an example's from one forward of its prompt; else a forward per candidate), eval.batch_size sequences a forward; task pets, LoRA: minus the fraction whose class, the highest logit as the test evaluation takes it, is the label, the mini-batch in one forward per variant); MeZO's non-differentiable objectives, docs/ALGORITHMS.md. The validation loss, best/ and train.patience stay on the cross-entropy; metrics.jsonl's train loss is then -F1 or -accuracy"`
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
	// ValidationMetrics also scores the validation split by the test
	// evaluation's metric at every validation (step.go: run.validate).
	ValidationMetrics bool `mapstructure:"validation_metrics" yaml:"validation_metrics" doc:"also score the validation split by the task's metric (the test evaluation's rules: accuracy by label candidates or by argmax for pets, exact_match and f1 or ROUGE by greedy generation up to eval.max_new_tokens) at every validation, step 0's included, with the parameters of that step (attached as for the validation loss: eval.merge is the test evaluation's), into metrics.jsonl's val line (val_metrics), the progress line and summary.json (best_val_metrics, last_val_metrics). Off by default: the paper selects by the validation loss, and most metrics cost extra forwards (SST-2's accuracy, and a classification's whose labels are one token each, is free: the loss's own forwards score the label candidates where the answer's label token is, on the CPU the same bits as a pass of its own; Pets' is free too, read from the logits of the loss's forwards; a classification whose labels are several tokens long takes a forward per label more; SQuAD and XSum generate, much more). best/ and train.patience stay on the validation loss; the metric's examples are the validation split's that the test evaluation's length rule (task.max_length) and ROUGE's cap let be scored"`
	Predictions       bool `mapstructure:"predictions" yaml:"predictions" doc:"write each test example's answer, one JSON line each, into predictions_best.jsonl, predictions_last.jsonl (and predictions_base.jsonl) in the run directory: the generated text or the predicted label, the reference and the example's own scores, with the example's input (docs/RUNDIR.md): about 1 KB a SQuAD example, 2-3 KB an XSum one; false in a large sweep that does not need them"`
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
	if what := foreignConfig(b); what != "" {
		return nil, fmt.Errorf("config %s: %s", path, what)
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
