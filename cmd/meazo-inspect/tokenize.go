package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("tokenize", cli.Help{
		Summary:  "encode JSON Lines {\"text\"} with a model's tokenizer",
		Synopsis: "--model DIR < lines.jsonl",
		Does:     "Encodes text with a model's tokenizer, as transformers' tokenizer(text) does: to check the ids a run trains on.",
		Reads:    `--model DIR: tokenizer.json and tokenizer_config.json; lines.jsonl on stdin, one {"text": "..."} a line.`,
		Prints: `one JSON line per input line: {"ids": [...], "ids_with_special": [...]} (without and with the
added special tokens).`,
		Example: `echo '{"text": "Hello world"}' | meazo-inspect tokenize --model models/Llama-3.2-1B`,
	}, runTokenize)
}

// runTokenize reads {"text": ...} lines and writes
// {"ids": [...], "ids_with_special": [...]} for each, in order.
func runTokenize(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := commands.Flags("tokenize")
	dir := fs.String("model", "", "model directory with tokenizer.json and tokenizer_config.json")
	tk, err := loadModelFlag(fs, args, dir)
	if err != nil {
		return err
	}
	return eachJSONLine(stdin, stdout, func(line []byte) (any, error) {
		var in struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(line, &in); err != nil {
			return nil, err
		}
		if in.Text == nil {
			return nil, errors.New(`field "text": missing or null`)
		}
		return struct {
			IDs            []int `json:"ids"`
			IDsWithSpecial []int `json:"ids_with_special"`
		}{tk.Encode(*in.Text, false), tk.Encode(*in.Text, true)}, nil
	})
}

// loadModelFlag parses a subcommand's flags and loads the tokenizer that
// --model names.
func loadModelFlag(fs *flag.FlagSet, args []string, dir *string) (*tokenizer.Tokenizer, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return nil, cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *dir == "" {
		return nil, cli.Usage(errors.New("--model DIR is required"))
	}
	if what := train.NotAModelDir(*dir); what != "" {
		return nil, fmt.Errorf("--model %s: %s", *dir, what)
	}
	return tokenizer.Load(*dir)
}

// maxLineBytes bounds one line of JSON Lines that chat, tokenize and
// generate --messages read from a stream: a conversation or a text fits in
// it many times over (64 MiB is millions of tokens), and input without
// newlines is an error there instead of all of the machine's memory. A
// variable, for the tests.
var maxLineBytes = 64 << 20

// eachJSONLine calls handle for every non-blank line of in and writes each
// result as one JSON line. Errors name the input line.
func eachJSONLine(in io.Reader, out io.Writer, handle func(line []byte) (any, error)) error {
	r := bufio.NewReaderSize(in, 1<<16)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, err := inputfile.ReadLine(r, maxLineBytes)
		if n == 1 {
			line = inputfile.TrimBOM(line) // as the data files allow
		}
		if errors.Is(err, inputfile.ErrLongLine) {
			w.Flush()
			return fmt.Errorf("stdin line %d: over %s without a newline: not a line of JSON Lines", n, bytesize.String(int64(maxLineBytes)))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			v, herr := handle(line)
			if herr != nil {
				w.Flush()
				return fmt.Errorf("stdin line %d: %w", n, herr)
			}
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
