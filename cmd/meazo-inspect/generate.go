package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("generate", cli.Help{
		Summary:  "greedy generation from text prompts, chat conversations or a (left-padded) batch of token ids",
		Synopsis: "--model DIR [--adapter DIR] (--prompt TEXT... | --messages FILE | --input prompts.json) [--max-new-tokens N] [--stop IDS]",
		Does: `Generates greedily with the KV cache, as evaluation does for SQuAD, XSum and generation tasks: to see what a
model (with an adapter, or merged) answers, or compare with transformers' generate(do_sample=False). Text prompts
(--prompt, repeatable) are encoded as transformers' tokenizer(text) encodes them (special tokens added: Llama's
BOS); conversations (--messages) are rendered with the model's chat template and its generation prompt, without
thinking unless a line asks for it, as evaluation renders a prompt. Both stop at the tokenizer's end-of-turn
tokens and the config's eos_token_id, as evaluation does; token ids (--input) stop at the config's eos_token_id.`,
		Reads: `--model DIR: an HF model directory (config.json, safetensors weights; for text, its tokenizer files);
--adapter DIR: a saved adapter (LoRA or prompt tuning); --messages FILE (- for stdin): JSON Lines, one
conversation a line, as chat reads them ({"messages": [{"role","content"}...], "enable_thinking": bool,
"date_string": "..."}); --input: {"input_ids": [[...]], "attention_mask": [[...]]} (left-padded; mask optional; position_ids as forward's; forward's "labels" are ignored).`,
		Prints: `text: one JSON line per prompt, in order: {"prompt": the text the model read, "prompt_ids": [...], "ids":
the generated ids (with the stop token that ended them), "text": their text without the stop token, decoded as
transformers' decode(skip_special_tokens=True)}. --input: one JSON object {"sequences": [[...]]}, each prompt's
generated ids.`,
		Example: `meazo-inspect generate --model models/Qwen3-0.6B --prompt "The capital of France is" --max-new-tokens 20
meazo-inspect generate --model models/Qwen3-0.6B --adapter runs/squad-lora/best --messages questions.jsonl`,
	}, runGenerate)
}

// generateFlags are generate's settings.
type generateFlags struct {
	loadFlags
	model, adapter, input, messages, stop string
	prompts                               []string
	maxNew, batch                         int
}

func runGenerate(args []string, stdin io.Reader, stdout io.Writer) error {
	f, err := parseGenerateFlags(args)
	if err != nil {
		return err
	}
	stops, err := parseStop(f.stop)
	if err != nil {
		return err
	}
	opts := model.GenerateOptions{MaxNewTokens: f.maxNew, StopIDs: stops}
	if f.input != "" {
		return generateIDs(f, opts, stdout)
	}
	return generateText(f, opts, stdin, stdout)
}

// parseGenerateFlags parses generate's flags and checks that one kind of
// prompt is given.
func parseGenerateFlags(args []string) (*generateFlags, error) {
	fs := commands.Flags("generate")
	f := &generateFlags{}
	f.loadFlags.define(fs)
	fs.StringVar(&f.model, "model", "", "HF model directory (config.json + safetensors; for text, its tokenizer)")
	fs.StringVar(&f.adapter, "adapter", "", "saved adapter directory, LoRA or prompt tuning (optional)")
	fs.Func("prompt", "a text prompt, encoded with the model's tokenizer (repeatable: one generation each)", func(s string) error {
		f.prompts = append(f.prompts, s)
		return nil
	})
	fs.StringVar(&f.messages, "messages", "", `JSON Lines of conversations ({"messages": [...]}), rendered with the chat template and its generation prompt ("-": stdin)`)
	fs.StringVar(&f.input, "input", "", `input JSON: {"input_ids": [[...]], "attention_mask": [[...]]} (left-padded batch; mask optional)`)
	fs.IntVar(&f.maxNew, "max-new-tokens", 32, "number of tokens to generate at most")
	fs.IntVar(&f.batch, "batch-size", 8, "text: prompts generated together, left-padded as evaluation batches them")
	fs.StringVar(&f.stop, "stop", "", "comma-separated stop token ids (default: text, the tokenizer's end-of-turn ids and the config's eos_token_id; --input, the config's eos_token_id; \"none\" disables)")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := f.loadFlags.check(); err != nil {
		return nil, err
	}
	given := 0
	for _, set := range []bool{f.input != "", len(f.prompts) > 0, f.messages != ""} {
		if set {
			given++
		}
	}
	switch {
	case fs.NArg() > 0:
		return nil, cli.Usage(fmt.Errorf("unexpected argument %q (a prompt is given with --prompt)", fs.Arg(0)))
	case given != 1:
		return nil, cli.Usage(errors.New("give the prompts one way: --prompt (repeatable), --messages or --input"))
	case f.batch < 1:
		return nil, cli.Usage(fmt.Errorf("--batch-size must be positive, got %d", f.batch))
	case f.maxNew < 1:
		return nil, cli.Usage(fmt.Errorf("--max-new-tokens must be positive, got %d", f.maxNew))
	}
	return f, nil
}

// parseStop reads --stop: nil for "" (the default stop ids), none for
// "none", else the ids listed.
func parseStop(s string) ([]int, error) {
	switch s {
	case "":
		return nil, nil
	case "none":
		return []int{}, nil
	}
	var ids []int
	for _, part := range strings.Split(s, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, cli.Usage(fmt.Errorf("--stop: %q is not a token id", part))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// generateIDs is generate on --input's batch of token ids.
func generateIDs(f *generateFlags, opts model.GenerateOptions, stdout io.Writer) error {
	in, _, err := readBatch(f.input) // forward's file: its labels are not generate's
	if err != nil {
		return err
	}
	m, err := loadModel(f.model, f.adapter, f.loadFlags)
	if err != nil {
		return err
	}
	seqs, err := m.Generate(in, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", f.input, err)
	}
	return json.NewEncoder(stdout).Encode(map[string][][]int{"sequences": seqs})
}

// textPrompt is a prompt given as text: the text the model reads and its ids.
type textPrompt struct {
	text string
	ids  []int
}

// generateText is generate on --prompt's texts or --messages'
// conversations: their prompts are encoded first (a bad line is found
// before the model loads), then generated in batches of --batch-size.
func generateText(f *generateFlags, opts model.GenerateOptions, stdin io.Reader, stdout io.Writer) error {
	if err := checkModelDir(f.model); err != nil {
		return err
	}
	tok, err := tokenizer.Load(f.model)
	if err != nil {
		return fmt.Errorf("--model %s: text prompts need the model's tokenizer: %w", f.model, err)
	}
	prompts, err := encodePrompts(tok, f, stdin)
	if err != nil {
		return err
	}
	m, err := loadModel(f.model, f.adapter, f.loadFlags)
	if err != nil {
		return err
	}
	if err := train.CheckVocab(tok, m); err != nil {
		return fmt.Errorf("--model %s: %w", f.model, err)
	}
	if opts.StopIDs == nil {
		opts.StopIDs = train.StopIDs(tok, m)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for lo := 0; lo < len(prompts); lo += f.batch {
		chunk := prompts[lo:min(lo+f.batch, len(prompts))]
		if err := generateChunk(m, tok, chunk, opts, enc); err != nil {
			return err
		}
	}
	return nil
}

// generateChunk generates from a batch of prompts, left-padded with the
// tokenizer's pad id as evaluation pads them, and writes a line for each.
func generateChunk(m *model.Model, tok *tokenizer.Tokenizer, chunk []textPrompt, opts model.GenerateOptions, enc *json.Encoder) error {
	ids := make([][]int, len(chunk))
	for i, p := range chunk {
		ids[i] = p.ids
	}
	b := data.GenerateBatch(ids, tok.PadID())
	outs, err := m.Generate(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, opts)
	if err != nil {
		return err
	}
	for i, p := range chunk {
		line := struct {
			Prompt    string `json:"prompt"`
			PromptIDs []int  `json:"prompt_ids"`
			IDs       []int  `json:"ids"`
			Text      string `json:"text"`
		}{p.text, p.ids, outs[i], train.Continuation(tok, outs[i], opts.StopIDs)}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// encodePrompts encodes --prompt's texts as tokenizer(text) does, or
// renders and encodes --messages' conversations with the generation
// prompt.
func encodePrompts(tok *tokenizer.Tokenizer, f *generateFlags, stdin io.Reader) ([]textPrompt, error) {
	var out []textPrompt
	for i, text := range f.prompts {
		ids := tok.Encode(text, true)
		if len(ids) == 0 {
			return nil, fmt.Errorf("--prompt %d (%q) encodes to no tokens: nothing to continue", i+1, text)
		}
		out = append(out, textPrompt{text, ids})
	}
	if f.messages == "" {
		return out, nil
	}
	return readConversations(tok, f.messages, stdin)
}

// readConversations reads --messages' JSON Lines and renders each
// conversation with the chat template and its generation prompt; thinking
// is off unless a line turns it on (evaluation's rendering).
func readConversations(tok *tokenizer.Tokenizer, path string, stdin io.Reader) ([]textPrompt, error) {
	in := stdin
	if path != "-" {
		b, err := inputfile.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--messages: %w", err)
		}
		in = bytes.NewReader(b)
	}
	var out []textPrompt
	r := bufio.NewReader(in)
	for n := 1; ; n++ {
		line, err := inputfile.ReadLine(r, maxLineBytes)
		if n == 1 {
			line = inputfile.TrimBOM(line) // as the data files allow
		}
		if errors.Is(err, inputfile.ErrLongLine) {
			return nil, fmt.Errorf("--messages %s line %d: over %s without a newline: not a line of JSON Lines", path, n, bytesize.String(int64(maxLineBytes)))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			p, perr := renderConversation(tok, line)
			if perr != nil {
				return nil, fmt.Errorf("--messages %s line %d: %w", path, n, perr)
			}
			out = append(out, p)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("--messages %s: %w", path, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--messages %s holds no conversation", path)
	}
	return out, nil
}

// renderConversation renders one --messages line with its generation
// prompt.
func renderConversation(tok *tokenizer.Tokenizer, line []byte) (textPrompt, error) {
	c, err := parseChatLine(line)
	if err != nil {
		return textPrompt{}, err
	}
	if c.AddGenerationPrompt != nil && !*c.AddGenerationPrompt {
		return textPrompt{}, errors.New(`"add_generation_prompt": false, but generate always renders the generation prompt (leave the key out)`)
	}
	opts := c.options()
	opts.AddGenerationPrompt = true
	if opts.EnableThinking == nil {
		off := false
		opts.EnableThinking = &off
	}
	text, ids, err := tok.EncodeChat(c.Messages, opts)
	if err != nil {
		return textPrompt{}, err
	}
	return textPrompt{text, ids}, nil
}
