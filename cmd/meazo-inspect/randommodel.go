package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
)

func init() {
	register("random-model", "write a model with random weights in HF format from a config.json (benchmarks, memory reports)", runRandomModel)
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

func runRandomModel(args []string, _ io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("random-model", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "an HF config.json (e.g. a published one)")
	out := fs.String("out", "", "directory to write config.json and model.safetensors into")
	dtype := fs.String("dtype", "f32", "how model.safetensors stores the weights: f32, or bf16 (as the published checkpoints; values rounded to bfloat16)")
	seed := fs.Uint64("seed", 1, "random seed")
	std := fs.Float64("std", 0.02, "standard deviation of the weight matrices")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *cfgPath == "" || *out == "" {
		return cli.Usage(fmt.Errorf("--config and --out are required"))
	}
	if !(*std > 0) || math.IsInf(*std, 0) {
		return cli.Usage(fmt.Errorf("--std must be positive and finite, got %g", *std))
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := checkNoModel(*out); err != nil {
		return err
	}
	if err := outpath.Check("--out", *out, *cfgPath); err != nil {
		return err
	}
	cfg, err := model.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	write := model.WriteRandom
	switch *dtype {
	case "f32":
	case "bf16":
		write = model.WriteRandomBF16
	default:
		return fmt.Errorf("--dtype: %q is not f32 or bf16", *dtype)
	}
	if _, err := write(*out, cfg, *seed, *std); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a random %s (%d layers, hidden %d, vocab %d, %s) to %s\n", cfg.Architecture, cfg.NumLayers, cfg.HiddenSize, cfg.VocabSize, *dtype, *out)
	return nil
}
