package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/suggest"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/train"
)

// runTask evaluates a base model, or a saved adapter (LoRA or prompt
// tuning, PEFT format) on it, on a task's test file, and prints the metrics
// as one JSON object.
func runTask(args []string, stdout, log io.Writer) error {
	fs := commands.Flags("task")
	modelDir := fs.String("model", "", "HF model directory (weights, config.json and tokenizer files)")
	adapter := fs.String("adapter", "", "saved adapter directory (PEFT LoRA or PROMPT_TUNING), e.g. RUN_DIR/best; empty: the base model. "+
		"A run's best/, last/ or checkpoint/ (the step it checkpointed: a run still training) (or, as --model, a full-parameter run's) is scored as the run scored it: the flags left out take the run's values (RUN_DIR/config.yaml), and the log says which")
	merge := fs.Bool("merge", false, "LoRA: merge the adapter into a copy of the weights first (faster generation, as eval.merge; pets: the same accuracy without the low-rank terms; prompt tuning: no effect)")
	task := fs.String("task", "", "sst2, squad, xsum, pets (a ViT image classifier), or your own data's classification or generation (as task.name)")
	dataPath := fs.String("data", "", "test file (.tsv, .json, .jsonl or .parquet; pets: the Hub's Parquet; classification, generation: .jsonl)")
	labels := fs.String("labels", "", "classification: its labels, as the run's task.labels, a YAML list: '[negative, positive]'")
	instruction := fs.String("instruction", "", "classification, generation: the run's task.instruction (the system turn; empty: none)")
	maxExamples := fs.Int("max-examples", 0, "evaluate the first N examples (0: all)")
	batch := fs.Int("batch-size", 8, "sequences (pets: images) per forward / generation batch")
	maxNew := fs.Int("max-new-tokens", 0, "generation cap (0: SQuAD 50, XSum and generation 100)")
	maxLen := fs.Int("max-length", data.DefaultMaxTokens, "skip, counted and named on stderr, the examples whose evaluation takes more tokens (the prompt and the new tokens; SST-2: the rendered answer), as task.max_length; 0: none")
	threads := fs.Int("threads", 0, "CPU worker threads, and pets' image decoders (0: all cores)")
	backend := fs.String("backend", "auto", backends.Usage)
	date := fs.String("date-string", "", "Llama-3.x chat template date_string (default 26 Jul 2024); use the run's model.date_string")
	stem := fs.Bool("rouge-stem", false, "XSum, generation: Porter-stem ROUGE tokens (default off, as HF evaluate)")
	cli.Alias(fs, "max-test", "max-examples") // the config's task.max_test
	cli.Alias(fs, "stem", "rouge-stem")       // meazo-eval score's spelling
	bf16 := fs.Bool("bf16-weights", false, "keep BF16 checkpoint matrices in bfloat16 in memory (half the memory, identical results)")
	bf16Products := fs.Bool("bf16-products", false, "with --bf16-weights, multiply those matrices in bfloat16 on a GPU's tensor cores, as model.bf16_products "+
		"(as PyTorch runs a bfloat16 model: much faster, not float32's numbers; no effect on the CPU)")
	strict := fs.Bool("strict", false, "stop at the first malformed data row instead of reporting and skipping it (as task.strict)")
	predsPath := fs.String("predictions", "", "write each example's answer to this file, one JSON line per example in the data's order (written atomically): its id and input, the generated text, references and own metrics (0-1), or the predicted and gold labels")
	format := fs.String("format", "chat", "how examples become text (as task.format): chat (the model's chat template) or mezo (MeZO's SST-2 template, for models without one: OPT; SST-2 only)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0)))
	}
	if err := backends.CheckName(*backend); err != nil {
		return cli.Usage(fmt.Errorf("--backend: %w", err))
	}
	for _, f := range []struct{ flag, dir string }{{"--adapter", *adapter}, {"--model", *modelDir}} {
		if err := notARunDir(f.flag, f.dir); err != nil {
			return err
		}
		if err := notARunResult(f.flag, f.dir); err != nil {
			return err
		}
	}
	onCmdline := cli.Given(fs) // before fromRun sets the run's values
	runData, err := fromRun(fs, *adapter, *modelDir, log)
	if err != nil {
		return err
	}
	if *modelDir == "" || *task == "" || *dataPath == "" {
		return cli.Usage(missingRequired(map[string]string{"model": *modelDir, "task": *task, "data": *dataPath}))
	}
	if *bf16Products && !*bf16 && data.Task(*task) != data.Pets { // pets refuses both below
		if !onCmdline["bf16-products"] { // the run's model.bf16_products, taken by fromRun
			return cli.Usage(fmt.Errorf("--bf16-weights=false, but the run's model.bf16_products (taken as --bf16-products) multiplies the weights that --bf16-weights keeps in bfloat16: " +
				"give --bf16-products=false too, or leave out --bf16-weights=false"))
		}
		return cli.Usage(fmt.Errorf("--bf16-products multiplies the weights that --bf16-weights keeps in bfloat16: add --bf16-weights"))
	}
	for _, f := range []struct {
		name     string
		value, m int
	}{{"max-examples", *maxExamples, 0}, {"batch-size", *batch, 1}, {"max-new-tokens", *maxNew, 0}, {"max-length", *maxLen, 0}, {"threads", *threads, 0}} {
		if f.value < f.m {
			return cli.Usage(fmt.Errorf("--%s must be at least %d, got %d", f.name, f.m, f.value))
		}
	}
	if _, err := data.ParseFormat(*format); err != nil { // as meazo-inspect example: before the model loads
		return cli.Usage(fmt.Errorf("--format: %w", err))
	}
	var labelList []string
	if *labels != "" {
		var err error
		if labelList, err = train.ParseLabels(*labels); err != nil {
			return cli.Usage(err)
		}
	}
	opts := train.EvalOptions{Adapter: *adapter, Merge: *merge, Task: *task, Data: *dataPath, MaxExamples: *maxExamples,
		BatchSize: *batch, MaxNewTokens: *maxNew, DateString: *date, RougeStem: *stem, Strict: *strict, MaxLength: *maxLen, Format: *format,
		Labels: labelList, Instruction: *instruction, Log: log}
	if err := opts.CheckTask(); err != nil && data.Task(*task) != data.Pets {
		if _, perr := data.ParseTask(*task); perr != nil { // data's list is the text tasks': add the image task
			tasks := []string{"sst2", "squad", "xsum", "pets", "classification", "generation"}
			hint := ""
			if c := suggest.Closest(strings.ToLower(*task), tasks); suggest.Distance(strings.ToLower(*task), c) <= 2 {
				hint = fmt.Sprintf("; did you mean %q?", c) // as meazo-train's task.name
			}
			return cli.Usage(fmt.Errorf("--task: unknown task %q (want sst2, squad, xsum, pets, classification or generation%s)", *task, hint))
		}
		return cli.Usage(err)
	}
	if err := checkTaskPaths(*modelDir, *dataPath, *adapter); err != nil {
		return err
	}
	preds, err := newPredictions(*predsPath, append([]string{*dataPath, *modelDir, *adapter}, runData...)...)
	if err != nil {
		return err
	}
	opts.OnPrediction = preds.record()
	if data.Task(*task) == data.Pets {
		return runImageTask(fs, imageTask{model: *modelDir, adapter: *adapter, data: *dataPath, backend: *backend, merge: *merge,
			maxExamples: *maxExamples, batch: *batch, threads: *threads, preds: preds}, stdout, log)
	}
	res, err := evaluateText(*modelDir, *backend, tensor.Options{Threads: *threads, BF16Products: *bf16Products}, *bf16, opts, log)
	if err != nil {
		return err
	}
	return report(stdout, log, res, preds)
}

// checkTaskPaths checks that what the flags name is there (and that a run
// directory is not given as the model), before a backend opens or a weight
// loads.
func checkTaskPaths(modelDir, dataPath, adapter string) error {
	for _, f := range []struct{ flag, path string }{{"--model", modelDir}, {"--data", dataPath}, {"--adapter", adapter}} {
		if _, err := os.Stat(f.path); f.path != "" && err != nil {
			return fmt.Errorf("%s %s: %w", f.flag, f.path, errors.Unwrap(err))
		}
	}
	if st, err := os.Stat(dataPath); dataPath != "" && err == nil && st.IsDir() { // a dataset's download directory, say
		return fmt.Errorf("--data %s: a directory, not a file (name the data file in it: .parquet, .tsv, .json or .jsonl)", dataPath)
	}
	if what := train.RunDirAsModel(modelDir); what != "" {
		return fmt.Errorf("--model %s: %s", modelDir, what)
	}
	return nil
}

// evaluateText loads the decoder in modelDir on the backend (opened with
// bo: the threads, --bf16-products) and its tokenizer, and evaluates it
// (with opts' adapter) as opts say.
func evaluateText(modelDir, backend string, bo tensor.Options, bf16 bool, opts train.EvalOptions, log io.Writer) (map[string]float64, error) {
	be, err := backends.OpenWith(backend, bo, log)
	if err != nil {
		return nil, err
	}
	defer be.Close()
	if note := train.BF16ProductsNote(be, bo.BF16Products, "--bf16-products"); note != "" {
		fmt.Fprintln(log, note)
	}
	m, err := model.LoadWith(modelDir, model.LoadOptions{BF16Weights: bf16, Backend: be})
	if err != nil {
		return nil, err
	}
	if note := train.BF16WeightsNote(m, modelDir, bf16, "--bf16-weights"); note != "" {
		fmt.Fprintln(log, note)
	}
	defer m.Free()
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		return nil, err
	}
	res, err := train.Evaluate(m, tok, opts)
	if errors.Is(err, tokenizer.ErrNoChatTemplate) {
		return nil, fmt.Errorf("--model %s: %w", modelDir, err)
	}
	return res, err
}

// report prints the metrics, then writes the --predictions file if one
// was asked for (so that a file that cannot be written loses no metric)
// and says on log what it wrote.
func report(stdout, log io.Writer, res map[string]float64, preds *predictions) error {
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return err
	}
	return preds.write(log)
}

// textOnlyFlags are runTask's flags that an image task has no use for.
var textOnlyFlags = []string{"max-new-tokens", "max-length", "date-string", "rouge-stem", "bf16-weights", "bf16-products", "strict", "format", "labels", "instruction"}

// imageTask is what runImageTask takes from runTask's flags.
type imageTask struct {
	model, adapter, data, backend string
	merge                         bool // --merge: the adapter merged into a copy of the weights
	maxExamples, batch, threads   int
	preds                         *predictions // --predictions; nil: none
}

// runImageTask is runTask for an image task (pets): a ViT image classifier
// (ViTForImageClassification, or a ViTModel with the adapter's classifier),
// its saved LoRA adapter if one is named, scored by accuracy on the Parquet
// file's images as meazo-train scores a run's test split. fs is the parsed
// flag set, to refuse the flags only text tasks take.
func runImageTask(fs *flag.FlagSet, o imageTask, stdout, log io.Writer) error {
	var bad []string
	given := cli.Given(fs) // --stem is --rouge-stem
	fs.Visit(func(f *flag.Flag) {
		if slices.ContainsFunc(textOnlyFlags, func(n string) bool { return given[n] && fs.Lookup(n).Value == f.Value }) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return cli.Usage(fmt.Errorf("%s: not for an image task (pets)", strings.Join(bad, ", ")))
	}
	cfg, err := model.LoadViTConfig(filepath.Join(o.model, "config.json"))
	if err != nil {
		return err
	}
	if cfg.Headless && o.adapter == "" {
		return fmt.Errorf("%s is a ViTModel, without a classifier: evaluate it with a saved adapter (--adapter RUN_DIR/best), which holds the trained one", o.model)
	}
	proc, err := imageproc.LoadConfig(filepath.Join(o.model, "preprocessor_config.json"))
	if err != nil {
		return err
	}
	if err := proc.CheckSide(cfg.ImageSize); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(o.model, "preprocessor_config.json"), err)
	}
	be, err := backends.Open(o.backend, o.threads, log)
	if err != nil {
		return err
	}
	defer be.Close()
	m, err := model.LoadViTWith(o.model, model.ViTLoadOptions{Backend: be, NumLabels: data.PetsClasses})
	if err != nil {
		return err
	}
	defer m.Free()
	res, err := train.EvaluateImages(m, proc, train.EvalOptions{Adapter: o.adapter, Merge: o.merge, Task: string(data.Pets), Data: o.data,
		MaxExamples: o.maxExamples, BatchSize: o.batch, Threads: o.threads, Log: log, OnPrediction: o.preds.record()})
	if err != nil {
		return err
	}
	return report(stdout, log, res, o.preds)
}

// missingRequired names the required flags left empty, of --model, --task
// and --data: only those, so that a user who gave one knows what is left.
func missingRequired(values map[string]string) error {
	var missing []string
	for _, f := range []string{"model", "task", "data"} {
		if values[f] == "" {
			missing = append(missing, "--"+f)
		}
	}
	what := missing[0] + " is required"
	if n := len(missing); n > 1 {
		what = strings.Join(missing[:n-1], ", ") + " and " + missing[n-1] + " are required"
	}
	return fmt.Errorf("%s (an --adapter saved by a run takes --model, --task and --data from the run)", what)
}
