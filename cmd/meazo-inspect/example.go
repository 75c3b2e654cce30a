package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("example", cli.Help{
		Summary:  "show one training example: rendered text, token ids, supervised tokens",
		Synopsis: "--model DIR --task sst2|squad|xsum|classification|generation --data PATH [--labels LIST] [--instruction TEXT] [--format chat|mezo] [--index N]",
		Does: `Shows exactly what training sees of one example of a data file: the text the model's chat template renders,
every token id, and which tokens the loss supervises (the assistant's answer and its end of turn). With --format
mezo (a run's task.format mezo: OPT, which has no chat template), MeZO's SST-2 template instead: the sentence,
" It was" and the label word, the tokenizer's BOS first, the label word's tokens supervised.`,
		Reads: `--model DIR: tokenizer.json, tokenizer_config.json (and chat_template.jinja); --data PATH: the task's data
file (.parquet from the Hub, .tsv of GLUE, .json of the official SQuAD, or .jsonl; classification and
generation, on your own data: .jsonl, with --labels LIST and --instruction TEXT as the run's task.labels, a YAML
list such as '[negative, positive]', and task.instruction).`,
		Prints: `the example's id and token counts, the rendered text, a line per token (* supervised: position,
id, text), the supervised text.`,
		Example: `meazo-inspect example --model models/Llama-3.2-1B --task squad --data data/squad/train-v1.1.json --index 3
meazo-inspect example --model models/opt-1.3b --task sst2 --format mezo --data data/sst2/data/train-00000-of-00001.parquet`,
	}, runExample)
}

// runExample loads one example of a data file, renders it with the model's
// chat template and prints exactly what training sees: the text, every token
// id with its text, and which tokens the loss supervises.
func runExample(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("example")
	model := fs.String("model", "", "model directory with tokenizer.json, tokenizer_config.json [and chat_template.jinja]")
	taskName := fs.String("task", "", "sst2, squad, xsum, classification or generation")
	path := fs.String("data", "", "data file: .parquet (HF hub), .tsv (GLUE), .json (official SQuAD) or .jsonl (classification and generation: .jsonl only)")
	labels := fs.String("labels", "", "classification: its labels, as task.labels, a YAML list: '[negative, positive]'")
	instruction := fs.String("instruction", "", "classification, generation: task.instruction (the system turn; empty: none)")
	index := fs.Int("index", 0, "which example (0-based, among the file's well-formed rows)")
	date := fs.String("date-string", "", "Llama-3.x chat template date_string (default 26 Jul 2024), as model.date_string and meazo-eval task's --date-string")
	fs.StringVar(date, "date", "", "the same as --date-string (its older name)")
	formatName := fs.String("format", "chat", "how examples become text (as task.format): chat (the model's chat template) or mezo (MeZO's SST-2 template, for models without one: OPT; SST-2 only)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *model == "" || *path == "" {
		return cli.Usage(errors.New("--model and --data are required"))
	}
	if *taskName == "" {
		return cli.Usage(errors.New("--task is required: sst2, squad, xsum, classification or generation"))
	}
	task, err := data.ParseTask(*taskName)
	if err != nil {
		return cli.Usage(fmt.Errorf("--task: %w", err))
	}
	var own *data.OwnTask
	if task.OwnData() {
		own = &data.OwnTask{Instruction: *instruction}
		if *labels != "" {
			if own.Labels, err = train.ParseLabels(*labels); err != nil {
				return cli.Usage(err)
			}
		}
	} else if *labels != "" || *instruction != "" {
		return cli.Usage(fmt.Errorf("--labels and --instruction are for tasks classification and generation"))
	}
	format, err := data.ParseFormat(*formatName)
	if err != nil {
		return cli.Usage(fmt.Errorf("--format: %w", err))
	}
	if format == data.FormatMeZO && task != data.SST2 { // as task.format: not at the example, named as if it were at fault
		return cli.Usage(fmt.Errorf("--format mezo has only SST-2's template (MeZO's), not task %s: use --format chat with a model that has a chat template", task))
	}
	if *index < 0 {
		return cli.Usage(fmt.Errorf("--index %d is negative", *index))
	}
	if what := train.NotAModelDir(*model); what != "" {
		return fmt.Errorf("--model %s: %s", *model, what)
	}
	tok, err := tokenizer.Load(*model)
	if err != nil {
		return err
	}
	if format == data.FormatChat && !tok.HasChatTemplate() {
		if task != data.SST2 {
			return fmt.Errorf("--model %s: %w (task %s is rendered with it: a model without one, such as OPT, runs only SST-2, with --format mezo)", *model, tokenizer.ErrNoChatTemplate, task)
		}
		return fmt.Errorf("--model %s: %w (a model without one, such as OPT, takes --format mezo: MeZO's SST-2 template)", *model, tokenizer.ErrNoChatTemplate)
	}
	var firstBad *data.RowError
	exs, st, err := data.ReadAll(*path, task, data.ReadOptions{Limit: *index + 1, Own: own, OnSkip: func(e *data.RowError) {
		if firstBad == nil {
			firstBad = e
		}
	}})
	if err != nil {
		return err
	}
	if *index >= len(exs) {
		why := ""
		if firstBad != nil { // else the user sees no reason for a file of bad rows
			why = fmt.Sprintf(" (and %d malformed rows, the first: %v)", st.Skipped, firstBad)
		}
		return fmt.Errorf("%s: --index %d, but the file has %d well-formed examples%s", *path, *index, len(exs), why)
	}
	enc := &data.Encoder{Tok: tok, DateString: *date, Format: format}
	e, err := enc.Encode(exs[*index])
	if err != nil {
		return err
	}
	start, end := e.Supervised()
	fmt.Fprintf(stdout, "example %d (id %s) of %s, task %s, model %s\n", *index, exs[*index].ID, *path, task, *model)
	what := "assistant content + end-of-turn"
	if format == data.FormatMeZO {
		what = "the label word"
	}
	fmt.Fprintf(stdout, "tokens: %d; prompt: %d; supervised: %d (positions %d..%d: %s)\n\n",
		len(e.IDs), e.PromptLen, end-start, start, end-1, what)
	fmt.Fprintln(stdout, "--- rendered text ---")
	fmt.Fprintln(stdout, e.Text)
	fmt.Fprintln(stdout, "--- tokens (* = supervised: label = id; others label -100) ---")
	for i, id := range e.IDs {
		mark := " "
		if e.Labels[i] != data.IgnoreIndex {
			mark = "*"
		}
		fmt.Fprintf(stdout, "%s %5d %7d %q\n", mark, i, id, tok.Decode([]int{id}, false))
	}
	fmt.Fprintln(stdout, "--- supervised text ---")
	fmt.Fprintln(stdout, tok.Decode(e.IDs[start:end], false))
	return nil
}

// exampleSupervised returns the supervised text section of runExample output.
func exampleSupervised(out string) string {
	_, after, _ := strings.Cut(out, "--- supervised text ---\n")
	return strings.TrimSuffix(after, "\n")
}
