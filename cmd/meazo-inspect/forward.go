package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("forward", cli.Help{
		Summary:  "run a batch (of tokens; a ViT: of images) through a checkpoint and write logits and losses (safetensors)",
		Synopsis: "--model DIR [--adapter DIR] (--input batch.json | --images a.png,b.jpg) --out out.safetensors",
		Does: `Runs one batch through a model, with a saved adapter if one is named, as training evaluates it: to compare its
logits and loss with transformers' on the same batch.`,
		Reads: `--model DIR: an HF model directory (config.json, safetensors weights); --adapter DIR: a saved adapter (LoRA
or prompt tuning, PEFT format); --input: the batch as JSON ({"input_ids", "attention_mask", "position_ids",
"labels"}; a ViT's {"pixel_values"} or {"images"}); a ViT's --images: PNG, JPEG or GIF files.`,
		Prints: `out.safetensors (--out): logits, and loss and loss_per_seq where labels are given (a ViT: pixel_values too;
--hidden-states); on stdout the loss and what was written.`,
		Example: "meazo-inspect forward --model models/Llama-3.2-1B --input batch.json --out logits.safetensors",
	}, runForward)
}

// batchJSON is the input file of forward and generate.
type batchJSON struct {
	InputIDs      [][]int `json:"input_ids"`
	AttentionMask [][]int `json:"attention_mask"`
	PositionIDs   [][]int `json:"position_ids"`
	Labels        [][]int `json:"labels"`
}

// readBatch reads IN.json into a model.Input (and labels, if present).
func readBatch(path string) (model.Input, []int, error) {
	var in model.Input
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return in, nil, err
	}
	var j batchJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt "attention_masks" was dropped, the logits those of no mask
	if err := dec.Decode(&j); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return in, nil, fmt.Errorf("%s: %s: the keys are input_ids, attention_mask, position_ids and labels", path, strings.TrimPrefix(err.Error(), "json: "))
		}
		return in, nil, fmt.Errorf("%s: invalid JSON: %w", path, err)
	}
	if dec.More() {
		return in, nil, fmt.Errorf("%s: more after the batch's JSON object", path)
	}
	if len(j.InputIDs) == 0 || len(j.InputIDs[0]) == 0 {
		return in, nil, fmt.Errorf(`%s: "input_ids" must be a non-empty [B][T] array`, path)
	}
	in.B, in.T = len(j.InputIDs), len(j.InputIDs[0])
	flat := func(key string, rows [][]int) ([]int, error) {
		if rows == nil {
			return nil, nil
		}
		if len(rows) != in.B {
			return nil, fmt.Errorf("%s: %q has %d rows, input_ids has %d", path, key, len(rows), in.B)
		}
		out := make([]int, 0, in.B*in.T)
		for r, row := range rows {
			if len(row) != in.T {
				return nil, fmt.Errorf("%s: %q row %d has %d entries, want %d (rows must be padded to one length)", path, key, r, len(row), in.T)
			}
			out = append(out, row...)
		}
		return out, nil
	}
	if in.Tokens, err = flat("input_ids", j.InputIDs); err != nil {
		return in, nil, err
	}
	if in.Mask, err = flat("attention_mask", j.AttentionMask); err != nil {
		return in, nil, err
	}
	if in.Positions, err = flat("position_ids", j.PositionIDs); err != nil {
		return in, nil, err
	}
	labels, err := flat("labels", j.Labels)
	return in, labels, err
}

// checkModelDir refuses a missing --model and a run directory given as one.
func checkModelDir(modelDir string) error {
	if modelDir == "" {
		return cli.Usage(fmt.Errorf("--model is required"))
	}
	if what := train.NotAModelDir(modelDir); what != "" {
		return fmt.Errorf("--model %s: %s", modelDir, what)
	}
	return nil
}

// loadFlags are how forward and generate load a model: --backend,
// --threads and --bf16-weights, spelt and meant as meazo-eval task's.
type loadFlags struct {
	backend string
	threads int
	bf16    bool
}

// define defines the flags on fs.
func (l *loadFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&l.backend, "backend", "auto", backends.Usage)
	fs.IntVar(&l.threads, "threads", 0, "CPU worker threads (0: all cores); results do not depend on it")
	fs.BoolVar(&l.bf16, "bf16-weights", false, "keep BF16 checkpoint matrices in bfloat16 in memory (half the memory, identical results), as model.bf16_weights")
}

// check refuses, as a bad command line, a backend that does not exist and
// negative threads.
func (l *loadFlags) check() error {
	if err := backends.CheckName(l.backend); err != nil {
		return cli.Usage(fmt.Errorf("--backend: %w", err))
	}
	if l.threads < 0 {
		return cli.Usage(fmt.Errorf("--threads must be at least 0, got %d", l.threads))
	}
	return nil
}

// loadModel loads a checkpoint on the backend lf names and, if adapterDir
// is set, a saved adapter (LoRA or prompt tuning). The backend's one-line
// description goes to stderr, and so does a note when --bf16-weights has no
// BF16 weight to keep.
func loadModel(modelDir, adapterDir string, lf loadFlags) (*model.Model, error) {
	if err := checkModelDir(modelDir); err != nil {
		return nil, err
	}
	be, err := backends.Open(lf.backend, lf.threads, os.Stderr)
	if err != nil {
		return nil, err
	}
	m, err := model.LoadWith(modelDir, model.LoadOptions{Backend: be, BF16Weights: lf.bf16})
	if err != nil {
		return nil, err
	}
	if note := train.BF16WeightsNote(m, modelDir, lf.bf16, "--bf16-weights"); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	if adapterDir != "" {
		if err := train.AttachAdapter(adapterDir, m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func runForward(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("forward")
	var lf loadFlags
	lf.define(fs)
	modelDir := fs.String("model", "", "HF model directory (config.json + safetensors)")
	adapter := fs.String("adapter", "", "saved adapter directory, LoRA or prompt tuning (optional)")
	input := fs.String("input", "", `input JSON: {"input_ids": [[...]], "attention_mask", "position_ids", "labels"} (all but input_ids optional); a ViT's: {"pixel_values": [B][C][H][W]} or {"images": [paths]}, "labels" [B] optional`)
	outPath := fs.String("out", "", "output safetensors: logits F32 [B,T,V]; loss F32 [1] and loss_per_seq F32 [B] when labels are given (a ViT: logits [B,classes], loss, pixel_values)")
	images := fs.String("images", "", "a ViT: comma-separated image files (PNG, JPEG or GIF) instead of --input, preprocessed as the checkpoint's preprocessor_config.json says")
	hidden := fs.Bool("hidden-states", false, "a ViT: also write hidden_states F32 [layers+1,B,tokens,hidden] (HF's output_hidden_states)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := lf.check(); err != nil {
		return err
	}
	vit := model.IsViT(*modelDir)
	switch {
	case !vit && (*images != "" || *hidden):
		return cli.Usage(fmt.Errorf("--images and --hidden-states are for a ViT image classifier; %s is not one", *modelDir))
	case vit && lf.bf16:
		return cli.Usage(fmt.Errorf("--bf16-weights is for a decoder's checkpoint; a ViT (%s) is held in float32", *modelDir))
	case *outPath == "" || *input == "" && *images == "":
		return cli.Usage(fmt.Errorf("--input (a ViT: or --images) and --out are required"))
	}
	inputs := append([]string{*input, *modelDir, *adapter}, strings.Split(*images, ",")...)
	if err := outpath.CheckFile("--out", *outPath, inputs...); err != nil {
		return err
	}
	if err := checkSafetensorsOut(*outPath); err != nil {
		return err
	}
	if vit {
		return runForwardViT(vitForward{model: *modelDir, adapter: *adapter, backend: lf.backend, threads: lf.threads, input: *input,
			images: *images, out: *outPath, hiddenStates: *hidden}, stdout)
	}
	in, labels, err := readBatch(*input)
	if err != nil {
		return err
	}
	m, err := loadModel(*modelDir, *adapter, lf)
	if err != nil {
		return err
	}
	out, err := m.Forward(in, model.Options{Logits: true, Labels: labels})
	if err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	if err := finiteOutput(out, in.T+out.VirtualTokens, m.VocabSize); err != nil {
		return fmt.Errorf("%s: %w; nothing written", *input, err)
	}
	// With prompt tuning, each sequence's logits begin with its virtual
	// tokens' rows, as PEFT's forward returns them.
	rowsPerSeq := in.T + out.VirtualTokens
	tensors := []safetensors.Tensor{safetensors.F32Tensor("logits", []int{in.B, rowsPerSeq, m.VocabSize}, out.Logits)}
	if labels != nil {
		perSeq := make([]float32, in.B)
		for i, v := range out.LossPerSeq {
			perSeq[i] = float32(v)
		}
		tensors = append(tensors,
			safetensors.F32Tensor("loss", []int{1}, []float32{float32(out.Loss)}),
			safetensors.F32Tensor("loss_per_seq", []int{in.B}, perSeq))
		fmt.Fprintf(stdout, "loss %.7g over %d supervised tokens\n", out.Loss, out.Tokens)
	}
	if err := safetensors.WriteFile(*outPath, tensors, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (logits [%d,%d,%d])\n", *outPath, in.B, rowsPerSeq, m.VocabSize)
	if out.VirtualTokens > 0 {
		fmt.Fprintf(stdout, "the prompt's %d virtual tokens are positions 0-%d of each sequence's logits; the input's %d tokens are positions %d-%d\n",
			out.VirtualTokens, out.VirtualTokens-1, in.T, out.VirtualTokens, rowsPerSeq-1)
	}
	return nil
}

// finiteOutput refuses logits or losses that are NaN or infinite (a loss
// of a sequence with no supervised token is NaN by definition, and is
// left out): the model's weights or config then make its arithmetic
// meaningless, and nothing it printed would mean anything.
func finiteOutput(out *model.Output, rows, vocab int) error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	for i, v := range out.Logits {
		if bad(float64(v)) {
			return fmt.Errorf("the logits are not finite (%v at sequence %d, position %d, vocabulary entry %d): the model's weights or config.json hold values that make its arithmetic meaningless",
				v, i/vocab/rows, i/vocab%rows, i%vocab)
		}
	}
	if out.Tokens > 0 && bad(out.Loss) {
		return fmt.Errorf("the loss is not finite (%v): the model's weights or config.json hold values that make its arithmetic meaningless", out.Loss)
	}
	return nil
}

// checkSafetensorsOut refuses an existing --out that is neither empty nor a
// safetensors file: --out config.json or --out train.tsv, a slip of the
// flags, would be replaced by the logits. An earlier output is replaced.
func checkSafetensorsOut(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return nil // missing (or unreadable: the write says), or empty
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("--out %s exists and is not a safetensors file: writing would replace it; name a new file, or remove it first", path)
	}
	return f.Close()
}
