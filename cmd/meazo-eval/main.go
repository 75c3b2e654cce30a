// Command meazo-eval evaluates a model or a saved adapter on a task's test
// split, and scores predictions made by any system with the paper's metrics,
// computed exactly as the official implementations do.
//
//	meazo-eval task --model DIR [--adapter RUN_DIR/best] --task squad --data dev-v1.1.json [--max-examples 200] [--predictions preds.jsonl]
//	meazo-eval task --model VIT_DIR [--adapter RUN_DIR/best] --task pets --data test-00000-of-00001.parquet
//	meazo-eval score --metric squad [--in preds.jsonl] [--out scores.jsonl]
//	meazo-eval score --metric rouge [--stem] [--in preds.jsonl] [--out scores.jsonl]
//
// Input is JSON Lines: {"prediction", "ground_truths": [...]} for squad,
// {"prediction", "reference"} for rouge. Output is one JSON line of scores per
// input line, then one aggregate line: 100 × mean EM and F1 for squad (the
// official script's scale), the mean precision/recall/F of each ROUGE type
// for rouge (0–1 scale, a plain mean, not HF evaluate's bootstrap median).
//
// The subcommands are dispatched by internal/cli: -h after one says what it
// reads and prints, with an example, and its flags; exit status 0 done, 1 the subcommand failed (the error on one
// line), 2 no or an unknown subcommand.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/outpath"
)

var commands = cli.New("meazo-eval", "command")

func init() {
	commands.Register("score", cli.Help{
		Summary:  "score predictions (JSON Lines) with SQuAD's or ROUGE's metric",
		Synopsis: "--metric squad|rouge [--stem] [--in preds.jsonl] [--out scores.jsonl]",
		Does: `Scores predictions made by any system with the paper's metrics, computed as the official implementations do
(the SQuAD v1.1 script's exact match and F1; google-research's rouge_score), so that numbers compare.`,
		Reads: `JSON Lines, one prediction per line (64 MiB at most), from --in (a file) or stdin:
  squad: {"prediction": "...", "ground_truths": ["...", ...]}
  rouge: {"prediction": "...", "reference": "..."}`,
		Prints: `to --out (a file, written atomically) or stdout, one JSON line of scores per input line, then one
aggregate line:
  squad: per line exact_match and f1 in 0-1; the aggregate 100 x their means, as the official SQuAD
         v1.1 script prints them
  rouge: per line precision, recall and fmeasure of rouge1, rouge2, rougeL and rougeLsum in 0-1, as
         google-research's rouge_score gives them; the aggregate their plain means, in 0-1
         (meazo-train's summary.json and meazo-eval task report ROUGE x 100)`,
		Example: "meazo-eval score --metric squad --in preds.jsonl\nmeazo-eval score --metric rouge --stem --in preds.jsonl --out scores.jsonl",
	}, runScore)
	commands.Register("task", cli.Help{
		Summary:  "evaluate a model or a saved adapter on a task's test split",
		Synopsis: "(--model DIR [--adapter RUN_DIR/best] --task sst2|squad|xsum|pets|classification|generation --data FILE | --adapter RUN_DIR/best) [flags]",
		Does: `Evaluates a base model, or a saved adapter on it, on a task's test file, as meazo-train does at the end of a run:
SST-2 and Pets accuracy, SQuAD exact match and F1 (greedy generation), XSum ROUGE; on your own data a
classification's accuracy (with --labels, and --instruction as the run had it) or a generation's exact match,
F1 and ROUGE. It scores a run's best/ or last/ again, another checkpoint, or the base model.`,
		Reads: `--model: an HF model directory (config.json, safetensors weights, tokenizer.json and tokenizer_config.json;
a ViT's preprocessor_config.json), or a full-parameter run's best/ or last/; --adapter: a saved adapter
directory (PEFT LoRA or PROMPT_TUNING: adapter_config.json, adapter_model.safetensors); --data: the test file
(.tsv, .json, .jsonl or .parquet; pets: the Hub's Parquet; classification, generation: .jsonl).`,
		Prints: `one JSON object of the metrics: SST-2's, Pets' and a classification's {"accuracy"} in 0-1, SQuAD's
{"exact_match", "f1"} and XSum's {"rouge1", "rouge2", "rougeL", "rougeLsum"} x 100 (a generation's: all six); the
rows skipped and the backend on stderr.
--predictions FILE: also one JSON line per example evaluated, in the data's order, written atomically once the
evaluation is done (never over --data, a device, a pipe or a link, nor in the model's, the adapter's or a run's directory):
its "id"; its input ("sentence", "question" and "context", "document", "text" or "prompt"; pets: "image", its
0-based row in the file); for SQuAD, XSum and generation the "generated" text as scored, its "references" and its own "scores" in 0-1 under
the metrics' keys (each metric is 100 x their mean); for SST-2, classification and pets the "predicted" and "gold"
label indices, their "predicted_label" and "gold_label" (not pets) and "correct"; stderr says how many it wrote where.`,
		Example: "meazo-eval task --model models/Llama-3.2-1B --adapter runs/squad/best --task squad --data dev-v1.1.json\n" +
			"meazo-eval task --model runs/opt_fzoo/best --task sst2 --format mezo --data validation.parquet\n" +
			"meazo-eval task --model models/Qwen3-0.6B --adapter runs/mine/best --task classification --labels '[negative, positive]' --data test.jsonl --predictions preds.jsonl",
	}, func(args []string, _ io.Reader, stdout io.Writer) error { return runTask(args, stdout, os.Stderr) })
}

func main() { commands.Main() }

// runScore parses the flags, reads the predictions and writes the scores.
func runScore(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := commands.Flags("score")
	metric := fs.String("metric", "", "squad or rouge")
	stem := fs.Bool("stem", false, "rouge: apply NLTK's Porter stemmer to tokens longer than 3 characters")
	in := fs.String("in", "-", "input JSON Lines file (- for stdin)")
	out := fs.String("out", "-", "output JSON Lines file (- for stdout); written atomically")
	cli.Alias(fs, "rouge-stem", "stem") // meazo-eval task's and eval.rouge_stem's spelling
	cli.Alias(fs, "input", "in")        // meazo-inspect's spelling
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if *metric != "squad" && *metric != "rouge" {
		return cli.Usage(fmt.Errorf("--metric must be squad or rouge, got %q", *metric))
	}
	if *stem && *metric != "rouge" {
		return cli.Usage(fmt.Errorf("--stem (--rouge-stem) applies only to --metric rouge"))
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q (the input is --in FILE, or stdin)", fs.Arg(0)))
	}
	if *out != "-" {
		// The scores never replace the predictions, nor a directory or a
		// device, nor go into a model's or a run's directory.
		if err := outpath.CheckFile("--out", *out, *in); err != nil {
			return err
		}
		// Nor a file of the user's (--out data.jsonl, a slip of the flags).
		if err := checkOurLines("--out", *out, "scores", "exact_match", "rouge1", "aggregate"); err != nil {
			return err
		}
	}
	r, name := stdin, "<stdin>"
	if *in != "-" {
		f, err := inputfile.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r, name = f, *in
	}
	var buf bytes.Buffer
	w := io.Writer(&buf)
	if *out == "-" {
		w = stdout
	}
	bw := bufio.NewWriter(w)
	var err error
	if *metric == "squad" {
		err = scoreSquad(r, name, bw)
	} else {
		err = scoreRouge(r, name, *stem, bw)
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if *out != "-" {
		return atomicfile.WriteFile(*out, buf.Bytes())
	}
	return nil
}

// maxLineBytes caps one input line: a prediction and its answers fit in it
// many times over (ROUGE's cap, eval.MaxRougeTokens, is a few megabytes
// of text), and input without newlines (a binary file, /dev/zero piped in)
// is an error there instead of all of the machine's memory. A variable, for
// the tests.
var maxLineBytes = 64 << 20

// forEachLine calls fn with each non-blank line of r (name) and its
// 1-based number.
func forEachLine(r io.Reader, name string, fn func(line []byte, n int) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := inputfile.ReadLine(br, maxLineBytes)
		if n == 1 {
			line = inputfile.TrimBOM(line) // as the data files allow
		}
		if errors.Is(err, inputfile.ErrLongLine) {
			return fmt.Errorf("%s:%d: over %s without a newline: not a line of JSON Lines predictions", name, n, bytesize.String(int64(maxLineBytes)))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(line, n); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lineField is a field of an input line: its exact key, and where its
// value goes.
type lineField struct {
	key string
	dst any
}

// decodeLine decodes the fields of one line, each of which must be present
// and not null, by their exact keys, as the official scripts' Python dicts
// read them: "Prediction" is another key than "prediction". (encoding/json's
// decoding into a struct matches keys whatever their case, the last one
// winning, so {"prediction": "x", "Prediction": "y"} would score "y".)
func decodeLine(line []byte, name string, n int, fields ...lineField) error {
	// JSON is UTF-8; Go's decoder would turn other bytes into U+FFFD, and
	// two different answers could then score as equal.
	if !utf8.Valid(line) {
		return fmt.Errorf("%s:%d: not UTF-8 text", name, n)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return fmt.Errorf("%s:%d: not a JSON object: %v", name, n, err)
	}
	// A lone surrogate escape (\ud800) is a character of Python's str, but
	// Go's decoder makes every one U+FFFD: "\ud800" and "\udc00" would
	// score as equal where the official script scores them as different.
	for _, f := range fields {
		if v, ok := raw[f.key]; ok && loneSurrogate(v) {
			return fmt.Errorf("%s:%d: field %q holds a lone UTF-16 surrogate escape (\\uD800-\\uDFFF not in a pair): not text", name, n, f.key)
		}
	}
	for _, f := range fields {
		v, ok := raw[f.key]
		if !ok {
			return fmt.Errorf("%s:%d: field %q is missing%s", name, n, f.key, predictionsHint(raw))
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return fmt.Errorf("%s:%d: field %q is null", name, n, f.key)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%s:%d: field %q: want %s, got JSON %s", name, n, f.key, jsonKind(te.Type), te.Value)
			}
			return fmt.Errorf("%s:%d: field %q: %v", name, n, f.key, err)
		}
	}
	return nil
}

// predictionsHint is what a line of the predictions files this project
// writes (a run's predictions_best.jsonl, meazo-eval task --predictions)
// needs to be scored here: its fields renamed. "" for any other line.
func predictionsHint(raw map[string]json.RawMessage) string {
	_, generated := raw["generated"]
	_, references := raw["references"]
	if !generated || !references {
		return ""
	}
	return `: this line is one of meazo-train's or meazo-eval task's predictions (scored already: its "scores"); ` +
		`to score them here, rename the fields: jq -c '{prediction: .generated, ground_truths: .references}' (squad), ` +
		`jq -c '{prediction: .generated, reference: .references[0]}' (rouge)`
}

func scoreSquad(r io.Reader, name string, w io.Writer) error {
	enc := json.NewEncoder(w)
	var totals eval.SquadTotals
	err := forEachLine(r, name, func(line []byte, n int) error {
		var rec struct {
			Prediction   string
			GroundTruths []*string
		}
		if err := decodeLine(line, name, n, lineField{"prediction", &rec.Prediction}, lineField{"ground_truths", &rec.GroundTruths}); err != nil {
			return err
		}
		if len(rec.GroundTruths) == 0 {
			return fmt.Errorf("%s:%d: field \"ground_truths\" is empty (SQuAD scores against at least one answer)", name, n)
		}
		truths := make([]string, len(rec.GroundTruths))
		for i, g := range rec.GroundTruths {
			if g == nil {
				return fmt.Errorf("%s:%d: field \"ground_truths\": answer %d is null", name, n, i)
			}
			truths[i] = *g
		}
		em, f1 := eval.SquadScore(rec.Prediction, truths)
		totals.Add(em, f1)
		return enc.Encode(map[string]float64{"exact_match": em, "f1": f1})
	})
	if err != nil {
		return err
	}
	if totals.Count == 0 {
		return fmt.Errorf("%s: no predictions to score (the input is empty)", name)
	}
	em, f1 := totals.Result()
	return enc.Encode(map[string]any{"aggregate": true, "count": totals.Count, "exact_match": em, "f1": f1})
}

func scoreRouge(r io.Reader, name string, stem bool, w io.Writer) error {
	enc := json.NewEncoder(w)
	var sum eval.RougeScores
	count := 0
	add := func(dst *eval.RougeScore, s eval.RougeScore) {
		dst.Precision += s.Precision
		dst.Recall += s.Recall
		dst.FMeasure += s.FMeasure
	}
	err := forEachLine(r, name, func(line []byte, n int) error {
		var rec struct{ Prediction, Reference string }
		if err := decodeLine(line, name, n, lineField{"prediction", &rec.Prediction}, lineField{"reference", &rec.Reference}); err != nil {
			return err
		}
		s, err := eval.Rouge(rec.Reference, rec.Prediction, stem)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		add(&sum.Rouge1, s.Rouge1)
		add(&sum.Rouge2, s.Rouge2)
		add(&sum.RougeL, s.RougeL)
		add(&sum.RougeLsum, s.RougeLsum)
		count++
		return enc.Encode(s)
	})
	if err != nil {
		return err
	}
	if count == 0 {
		return fmt.Errorf("%s: no predictions to score (the input is empty)", name)
	}
	mean := func(s eval.RougeScore) eval.RougeScore {
		if count == 0 {
			return eval.RougeScore{}
		}
		c := float64(count)
		return eval.RougeScore{Precision: s.Precision / c, Recall: s.Recall / c, FMeasure: s.FMeasure / c}
	}
	return enc.Encode(map[string]any{"aggregate": true, "count": count, "stem": stem,
		"rouge1": mean(sum.Rouge1), "rouge2": mean(sum.Rouge2), "rougeL": mean(sum.RougeL), "rougeLsum": mean(sum.RougeLsum)})
}

// loneSurrogate reports whether the valid JSON v holds a \u escape of a
// UTF-16 surrogate that is not part of a high-low pair.
func loneSurrogate(v []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(v) || v[i] != '\\' || v[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range v[i+2 : i+6] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // a two-byte escape: \" \\ \n ...
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		}
		i += 5
	}
	return false
}

// jsonKind is data.JSONKind with a list's elements named ("a list of
// strings", not "a list").
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		return "a list of " + strings.TrimPrefix(data.JSONKind(t.Elem()), "a ") + "s"
	}
	return data.JSONKind(t)
}
