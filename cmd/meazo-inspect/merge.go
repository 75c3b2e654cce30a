package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("merge", cli.Help{
		Summary:  "merge a LoRA adapter into its base model's weights and write a plain model (PEFT's merge_and_unload)",
		Synopsis: "--model DIR --adapter DIR --out DIR [--dtype checkpoint|float32] [--backend B]",
		Does: `Merges a saved LoRA adapter into the weights it adapts, W' = W + scale·B·A (scale lora_alpha/r, or
lora_alpha/√r with use_rslora), as PEFT's merge_and_unload does: the delta in float32, added in float32 and
rounded once to the weight's dtype; it prints how much of the adapter's change that rounding took (a bfloat16
checkpoint's spacing is coarse: most of a small ZO adapter's change can be lost), and --dtype float32 writes
the merged weights in float32 instead, keeping the merge whole. The result is a model like any other: meazo-eval, meazo-inspect, meazo-train
and transformers' from_pretrained load it without the adapter, and it runs without the low-rank terms. A
prompt-tuning adapter has no weights to merge, and a full-parameter run's best/ is a whole model already: both
are refused, as are adapters with settings the LoRA loader does not apply (DoRA, fan_in_fan_out, biases,
targets outside the decoder layers' projections). A ViT image classifier's adapter (LoRA on its encoder's linear
layers, the classifier in modules_to_save) is merged into a ViTForImageClassification, as merge_and_unload leaves it:
the adapted weights merged, the classifier the adapter's; a ViTModel base (google/vit-base-patch16-224-in21k) becomes
a ViTForImageClassification with the adapter's classes (LABEL_0…).`,
		Reads: `--model DIR: the base model (config.json, safetensors weights, tokenizer files; a ViT's
preprocessor_config.json); --adapter DIR: a saved LoRA adapter (adapter_config.json, adapter_model.safetensors: a
LoRA run's best/ or last/, or PEFT's).`,
		Prints: `into --out (new, or an empty directory) config.json, the weights in the dtype the base model stores
(bfloat16, float16 or float32; with --dtype float32 the language model's, or a ViT's every weight, in float32), sharded with an index as save_pretrained shards,
and the base model's tokenizer and generation files (a ViT: its preprocessor_config.json); on stdout what it merged and wrote; on stderr a line as each
phase (loading, merging, writing) starts.`,
		Example: "meazo-inspect merge --model models/Llama-3.2-1B --adapter runs/squad-lora/best --out models/llama-squad",
	}, runMerge)
}

func runMerge(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("merge")
	backend := fs.String("backend", "auto", backends.Usage)
	opts := train.MergeOptions{}
	fs.StringVar(&opts.Model, "model", "", "the base model's HF directory (config.json + safetensors)")
	fs.StringVar(&opts.Adapter, "adapter", "", "saved LoRA adapter directory (PEFT format)")
	fs.StringVar(&opts.Out, "out", "", "directory to write the merged model into (new or empty)")
	dtype := fs.String("dtype", "checkpoint", "the merged model's weights: checkpoint (the dtype the base model stores, as PEFT's merge_and_unload leaves them) or float32 (the merge kept whole, twice a bfloat16 checkpoint's size)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := backends.CheckName(*backend); err != nil {
		return cli.Usage(fmt.Errorf("--backend: %w", err))
	}
	if opts.Model == "" || opts.Adapter == "" || opts.Out == "" {
		return cli.Usage(fmt.Errorf("--model, --adapter and --out are required"))
	}
	switch *dtype {
	case "checkpoint":
	case "float32":
		opts.Float32 = true
	default:
		return cli.Usage(fmt.Errorf("--dtype %q: want checkpoint or float32", *dtype))
	}
	if err := opts.Check(); err != nil {
		return err
	}
	be, err := backends.Open(*backend, 0, os.Stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	opts.Backend, opts.Log = be, os.Stderr
	stop := removeTempOnSignal(&opts)
	defer stop()
	what, err := train.MergeLoRA(opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, what)
	return nil
}

// removeTempOnSignal makes SIGINT or SIGTERM (Ctrl-C) remove the temporary
// directory the merge is writing (opts.OnTemp), as large as the model and
// hidden beside --out, then exit 130; stop undoes it.
func removeTempOnSignal(opts *train.MergeOptions) (stop func()) {
	var mu sync.Mutex
	cur := ""
	opts.OnTemp = func(dir string) {
		mu.Lock()
		cur = dir
		mu.Unlock()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopsig.Stop()...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			mu.Lock() // held until exit: the merge cannot rename it meanwhile
			if cur != "" {
				os.RemoveAll(cur)
				fmt.Fprintf(os.Stderr, "meazo-inspect merge: %s: stopped; removed the partly written %s (nothing written to %s)\n", stopsig.Name(s), cur, opts.Out)
			} else {
				fmt.Fprintf(os.Stderr, "meazo-inspect merge: %s: stopped\n", stopsig.Name(s))
			}
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
