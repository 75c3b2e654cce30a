package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/diskspace"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("random-model", cli.Help{
		Summary:  "write a model with random weights in HF format, by name (each model of the paper: " + publishedShort() + ") or from a config.json, with a tokenizer",
		Synopsis: "(--model NAME | --config config.json) --out DIR [flags]",
		Does:     strings.TrimSpace(randomModelHelp),
		Reads: `--model NAME: nothing (the built-in shapes); --config: an HF config.json; --tokenizer DIR: the
tokenizer files of a model there (tokenizer.json or OPT's vocab.json and merges.txt, tokenizer_config.json,
chat_template.jinja).`,
		Prints: `into DIR config.json, model.safetensors and the tokenizer (a ViT: preprocessor_config.json instead);
a line saying what it wrote.`,
		Example: "meazo-inspect random-model --model llama1b --out models/random-llama1b\nmeazo-inspect random-model --config scripts/gpu/vit-b16-pets-config.json --out models/random-vit",
	}, runRandomModel)
}

// publishedShort lists the built-in models' short names.
func publishedShort() string {
	var names []string
	for _, p := range model.PublishedModels() {
		names = append(names, p.Short)
	}
	return strings.Join(names, ", ")
}

// checkNoModel refuses an output directory that holds a model already
// (config.json, safetensors weights or their index): random weights would
// replace it, or be shadowed by a sharded model's index. An easy mistake is
// --config DIR/config.json --out DIR.
func checkNoModel(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // missing: it is made; anything else, the write says
	}
	for _, e := range ents {
		if n := e.Name(); n == "config.json" || strings.HasSuffix(n, ".safetensors") || n == "model.safetensors.index.json" {
			return fmt.Errorf("--out %s already holds a model (%s): random weights would replace it; choose a new or empty directory (tokenizer files may be there)", dir, n)
		}
	}
	return nil
}

const randomModelHelp = `
A model with random weights runs exactly as the real one does, step for step: use it to see what a
run costs on this machine before downloading (docs/PERFORMANCE.md), or to test a set-up. The tokenizer
(--tokenizer): "demo" (the default) writes the built-in demo's byte-level tokenizer (ChatML template),
which encodes any text, so meazo-train runs on the result at once; a directory copies the tokenizer of
a model there (tokenizer.json or OPT's vocab.json and merges.txt, tokenizer_config.json,
chat_template.jinja); "none" writes none. Without --tokenizer, a tokenizer already in --out is kept.

A ViT image classifier's config.json (--config, ViTForImageClassification with its classes, e.g.
scripts/gpu/vit-b16-pets-config.json: ViT-B/16 with Pets' 37) gives a random ViT in float32 and a
preprocessor_config.json of ViTImageProcessor's defaults at its image size, instead of a tokenizer.
`

// randomModelFlags are random-model's settings.
type randomModelFlags struct {
	name, cfgPath, out, dtype, tok string
	layers                         int
	seed                           uint64
	std                            float64
}

func runRandomModel(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("random-model")
	var f randomModelFlags
	fs.StringVar(&f.name, "model", "", "a built-in published model: "+model.PublishedNames()+" (or its hub id, or the configs' short name)")
	fs.StringVar(&f.cfgPath, "config", "", "an HF config.json instead of --model")
	fs.StringVar(&f.out, "out", "", "directory to write config.json, model.safetensors and the tokenizer into")
	fs.StringVar(&f.dtype, "dtype", "f32", "how model.safetensors stores the weights: f32, or bf16 (as the published checkpoints; values rounded to bfloat16)")
	fs.StringVar(&f.tok, "tokenizer", "", `"demo", a model directory to copy the tokenizer from, or "none" (see above)`)
	fs.IntVar(&f.layers, "layers", 0, "keep only the first N decoder layers (0: all): the full width and vocabulary in less memory and time")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.Float64Var(&f.std, "std", 0.02, "standard deviation of the weight matrices")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := f.checkFlags(fs); err != nil {
		return err
	}
	if f.cfgPath != "" && model.IsViTConfig(f.cfgPath) {
		return runRandomViT(fs, &f, stdout)
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if err := checkNoModel(f.out); err != nil {
		return err
	}
	if err := outpath.Check("--out", f.out, f.inputs()...); err != nil {
		return err
	}
	tok, err := planTokenizer(f.out, f.tok, cfg.VocabSize)
	if err != nil {
		return err
	}
	if err := checkDisk(f.out, cfg, f.dtype == "bf16"); err != nil {
		return err
	}
	// A random-model stopped while writing (Ctrl-C) leaves its hidden
	// temporary weights file, as large as the model: remove it.
	if err := atomicfile.RemoveLeftovers(f.out, "model.safetensors", "config.json"); err != nil {
		return err
	}
	write := model.WriteRandom
	if f.dtype == "bf16" {
		write = model.WriteRandomBF16
	}
	if err := write(f.out, cfg, f.seed, f.std); err != nil {
		return err
	}
	if f.cfgPath != "" {
		if err := keepConfigKeys(f.out, f.cfgPath); err != nil {
			return err
		}
	}
	n, _ := cfg.Params()
	fmt.Fprintf(stdout, "wrote a random %s (%s, hidden %d, vocab %d, %s parameters, %s) to %s\n",
		cfg.Architecture, layers(cfg.NumLayers), cfg.HiddenSize, cfg.VocabSize, paramCount(n), f.dtype, f.out)
	what, err := tok.write(f.out)
	if err != nil {
		return fmt.Errorf("--tokenizer %s: %w", tok.choice, err)
	}
	fmt.Fprintln(stdout, what)
	return nil
}

// inputs are the files and directories random-model reads: --config, and
// the model directory --tokenizer copies from.
func (f *randomModelFlags) inputs() []string {
	var in []string
	if f.cfgPath != "" {
		in = append(in, f.cfgPath)
	}
	if f.tok != "" && f.tok != "demo" && f.tok != "none" {
		in = append(in, f.tok)
	}
	return in
}

// check validates the flags and returns a decoder's config (checkFlags,
// then config).
func (f *randomModelFlags) check(fs *flag.FlagSet) (*model.Config, error) {
	if err := f.checkFlags(fs); err != nil {
		return nil, err
	}
	return f.config()
}

// checkFlags validates the flags every kind of model takes.
func (f *randomModelFlags) checkFlags(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case (f.name == "") == (f.cfgPath == ""):
		return cli.Usage(fmt.Errorf("give one of --model (%s) and --config", model.PublishedNames()))
	case f.out == "":
		return cli.Usage(fmt.Errorf("--out is required"))
	case !(f.std >= 1e-30 && f.std <= 1e30):
		// The weights are float32 (or bfloat16, of the same range): past
		// these they were all infinite, or all zero.
		return cli.Usage(fmt.Errorf("--std must be between 1e-30 and 1e30, got %g", f.std))
	case f.dtype != "f32" && f.dtype != "bf16":
		return cli.Usage(fmt.Errorf("--dtype: %q is not f32 or bf16", f.dtype))
	case f.layers < 0:
		return cli.Usage(fmt.Errorf("--layers must be 0 (all) or positive, got %d", f.layers))
	}
	return nil
}

// config returns a decoder's config: the built-in one of --model or
// --config's, cut to --layers.
func (f *randomModelFlags) config() (*model.Config, error) {
	var cfg *model.Config
	if f.name != "" {
		p, ok := model.LookupPublished(f.name)
		if !ok {
			return nil, cli.Usage(fmt.Errorf("--model %q is not built in (have %s); for another model, pass its config.json with --config", f.name, model.PublishedNames()))
		}
		c, err := p.Config()
		if err != nil {
			return nil, err
		}
		cfg = c
	} else {
		c, err := model.LoadConfig(f.cfgPath)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if f.layers > 0 && f.layers < cfg.NumLayers {
		cfg.NumLayers = f.layers
	}
	return cfg, nil
}

// tokenizerPlan is the tokenizer random-model writes, checked before any
// weight is drawn.
type tokenizerPlan struct {
	choice string // "demo", "none", "keep" or the directory to copy from
	vocab  int    // the ids it has (0: none written)
}

// planTokenizer checks --tokenizer against out and the model's vocabulary:
// a tokenizer file there is never written over (without --tokenizer it is
// kept), and a tokenizer with ids past the vocabulary is refused.
func planTokenizer(out, choice string, vocab int) (tokenizerPlan, error) {
	held := ""
	for _, name := range tokenizer.Files {
		if _, err := os.Lstat(filepath.Join(out, name)); err == nil && held == "" {
			held = name
		}
	}
	var p tokenizerPlan
	switch {
	case choice == "none":
		return tokenizerPlan{choice: "none"}, nil
	case choice == "" && held != "":
		return tokenizerPlan{choice: "keep"}, nil
	case held != "":
		return p, fmt.Errorf("--out %s already holds %s: --tokenizer %s would write over it (leave --tokenizer out to keep it)", out, held, choice)
	case choice == "" || choice == "demo":
		p = tokenizerPlan{choice: "demo", vocab: train.DemoTokenizerVocab()}
	default:
		tok, err := tokenizer.Load(choice)
		if err != nil {
			return p, cli.Usage(fmt.Errorf(`--tokenizer %s: not "demo", "none" or a model directory with a tokenizer: %w`, choice, err))
		}
		p = tokenizerPlan{choice: choice, vocab: tok.VocabSize()}
	}
	if p.vocab > vocab {
		return p, fmt.Errorf("--tokenizer %s has ids up to %d, past the model's vocab_size %d: choose another tokenizer", p.choice, p.vocab-1, vocab)
	}
	return p, nil
}

// write writes the planned tokenizer into out and says what it did.
func (p tokenizerPlan) write(out string) (string, error) {
	switch p.choice {
	case "none":
		return "no tokenizer written (--tokenizer none): meazo-train needs one in " + out, nil
	case "keep":
		return "kept the tokenizer already in " + out, nil
	case "demo":
		return "with the demo's byte-level tokenizer (ChatML template)", train.WriteDemoTokenizer(out)
	}
	_, err := tokenizer.CopyFiles(p.choice, out)
	return "with the tokenizer of " + p.choice, err
}

// checkDisk refuses a model that would not fit on the disk of dir: the
// weights are drawn as they are written, in a few megabytes of memory, so
// the disk is the one limit (a 14B model in float32 is 52 GiB).
func checkDisk(dir string, cfg *model.Config, bf16 bool) error {
	free, ok := diskspace.Free(diskspace.Nearest(dir))
	if !ok {
		return nil
	}
	perParam := int64(4)
	if bf16 {
		perParam = 2
	}
	n, nonEmbed := cfg.Params()
	if need := perParam * n; need > int64(min(free, math.MaxInt64)) {
		return fmt.Errorf("the weights take %.1f GiB and %s has %.1f GiB free: cut the model to fewer layers with --layers N (each layer is about %.2f GiB), or write it elsewhere",
			gib(need), dir, gib(int64(min(free, math.MaxInt64))), gib(perParam*nonEmbed/int64(max(cfg.NumLayers, 1))))
	}
	return nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// layers is "1 layer" or "N layers".
func layers(n int) string {
	if n == 1 {
		return "1 layer"
	}
	return fmt.Sprintf("%d layers", n)
}

// paramCount writes a parameter count in billions, in millions below one
// billion, and whole below one million (a small config's "0.00B" and a
// tiny test model's "0.0M" said nothing).
func paramCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprint(n)
}

// keepConfigKeys adds to the config.json random-model wrote in out the keys
// of the user's config.json (src) it does not write (initializer_range,
// use_cache, transformers_version, …: what the model does not read) and the
// class names (namesKept), so that
// the random model's config is the user's but for what random-model set (the
// shapes it drew, num_hidden_layers cut by --layers, torch_dtype). Where
// the written model is another class than src names (a multimodal
// checkpoint's language model), src's keys describe another model and none
// is added.
func keepConfigKeys(out, src string) error {
	path := filepath.Join(out, "config.json")
	var wrote, user map[string]json.RawMessage
	for _, f := range []struct {
		path string
		to   *map[string]json.RawMessage
	}{{path, &wrote}, {src, &user}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, f.to); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
	}
	if !bytes.Equal(compactJSON(wrote["architectures"]), compactJSON(user["architectures"])) {
		return nil
	}
	added := false
	for k, v := range user {
		if _, ok := wrote[k]; !ok || slices.Contains(namesKept, k) {
			wrote[k], added = v, true
		}
	}
	if !added {
		return nil
	}
	b, err := json.MarshalIndent(wrote, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}

// namesKept are the keys of the user's config.json that replace what
// random-model writes: a classifier's class names (random-model draws as
// many classes as they name, and would name them LABEL_0, …).
var namesKept = []string{"id2label", "label2id"}

// compactJSON is v without insignificant space (nil if v is not JSON).
func compactJSON(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return nil
	}
	return b.Bytes()
}
