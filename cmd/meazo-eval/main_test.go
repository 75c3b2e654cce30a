package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/cli"
)

func TestScoreSquad(t *testing.T) {
	in := `{"prediction": "Denver Broncos", "ground_truths": ["Denver Broncos", "Broncos"]}
{"prediction": "Denver", "ground_truths": ["Denver Broncos"]}
`
	var out bytes.Buffer
	if err := runScore([]string{"--metric", "squad"}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 2 scores + aggregate:\n%s", len(lines), out.String())
	}
	var agg struct {
		Aggregate  bool
		Count      int
		ExactMatch float64 `json:"exact_match"`
		F1         float64 `json:"f1"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &agg); err != nil {
		t.Fatal(err)
	}
	wantF1 := 100 * (1 + 2*0.5/1.5) / 2
	if !agg.Aggregate || agg.Count != 2 || agg.ExactMatch != 50 || math.Abs(agg.F1-wantF1) > 1e-12 {
		t.Errorf("aggregate line = %s, want EM 50, F1 %v", lines[2], wantF1)
	}
}

func TestScoreRougeFileOut(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "p.jsonl")
	os.WriteFile(in, []byte(`{"prediction": "the cats sat", "reference": "the cat sat on the mat"}`+"\n"), 0o644)
	outPath := filepath.Join(dir, "s.jsonl")
	if err := runScore([]string{"--metric", "rouge", "--stem", "--in", in, "--out", outPath}, nil, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var first map[string]map[string]float64
	json.Unmarshal(bytes.SplitN(data, []byte("\n"), 2)[0], &first)
	if first["rouge1"]["precision"] != 1 || first["rougeL"]["recall"] != 0.5 {
		t.Errorf("first line = %v (stemming should match cats/cat)", first)
	}
	// --rouge-stem, meazo-eval task's spelling, is --stem; --input,
	// meazo-inspect's, is --in.
	outAlias := filepath.Join(dir, "s2.jsonl")
	if err := runScore([]string{"--metric", "rouge", "--rouge-stem", "--input", in, "--out", outAlias}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if alias, _ := os.ReadFile(outAlias); !bytes.Equal(alias, data) {
		t.Errorf("--rouge-stem scored\n%s\n--stem\n%s", alias, data)
	}
	// The scores never replace the predictions (the same file by another
	// name too), nor go to a directory.
	before, _ := os.ReadFile(in)
	for _, out := range []string{in, filepath.Join(dir, ".", "p.jsonl"), dir} {
		if err := runScore([]string{"--metric", "rouge", "--in", in, "--out", out}, nil, nil); err == nil {
			t.Errorf("--out %s was accepted", out)
		}
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, before) {
		t.Error("the predictions file changed")
	}
	// Nor another file of the user's (a data file, a slip of the flags);
	// an earlier scores file is replaced.
	data2 := filepath.Join(dir, "data.jsonl")
	os.WriteFile(data2, []byte(`{"document": "d", "summary": "s"}`+"\n"), 0o644)
	if err := runScore([]string{"--metric", "rouge", "--in", in, "--out", data2}, nil, nil); err == nil || !strings.Contains(err.Error(), "exists and is not scores") {
		t.Errorf("--out over a data file: %v, want a refusal", err)
	}
	if err := runScore([]string{"--metric", "rouge", "--in", in, "--out", outPath}, nil, nil); err != nil {
		t.Errorf("--out over earlier scores: %v", err)
	}
	// Nor replace a link to a device (/dev/stdout is one) by a file.
	devLink := filepath.Join(dir, "stdout")
	if err := os.Symlink(os.DevNull, devLink); err != nil {
		t.Skipf("no symbolic links here (%v): the rest of the checks need one", err)
	}
	if err := runScore([]string{"--metric", "rouge", "--in", in, "--out", devLink}, nil, nil); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("--out %s: %v, want a refusal", devLink, err)
	}
	if target, err := os.Readlink(devLink); err != nil || target != os.DevNull {
		t.Errorf("the link to %s became %q (%v)", os.DevNull, target, err)
	}
	// Nor go into a model's directory (over its config.json) or a run's.
	model, run := filepath.Join(dir, "model"), filepath.Join(dir, "run")
	for _, f := range []string{filepath.Join(model, "config.json"), filepath.Join(model, "model.safetensors"), filepath.Join(run, "run.lock")} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte("{}"), 0o644)
	}
	for out, want := range map[string]string{filepath.Join(model, "config.json"): "is inside the model directory " + model,
		filepath.Join(run, "scores.jsonl"): "is inside the run directory " + run} {
		err := runScore([]string{"--metric", "rouge", "--in", in, "--out", out}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--out %s: %v, want %q", out, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(model, "config.json")); string(b) != "{}" {
		t.Error("the model's config.json changed")
	}
}

// TestScoreLongLine: input without a newline is an error at maxLineBytes,
// not read into memory to its end (an endless stream would take all of it);
// a line at the cap is read whole.
func TestScoreLongLine(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 1 << 16
	line := `{"prediction": "a", "reference": "` + strings.Repeat("a ", 3<<15) + "\"}\n"
	endless := io.MultiReader(strings.NewReader(`{"prediction": "`), zeros{})
	err := runScore([]string{"--metric", "squad"}, endless, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "<stdin>:1: over 64.0 KiB without a newline") {
		t.Errorf("an endless line: %v", err)
	}
	if err := runScore([]string{"--metric", "rouge"}, strings.NewReader(line), io.Discard); err == nil || !strings.Contains(err.Error(), "<stdin>:1: over") {
		t.Errorf("a line over the cap: %v", err)
	}
	maxLineBytes = len(line)
	if err := runScore([]string{"--metric", "rouge"}, strings.NewReader(line+line), io.Discard); err != nil {
		t.Errorf("lines at the cap: %v", err)
	}
}

// zeros is an endless stream of zero bytes, as /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestScoreKeysAsPython: a field is read by its exact key, as the official
// scripts' Python dicts read it; a key in another case is another key
// (encoding/json's struct decoding would take the last of either).
func TestScoreKeysAsPython(t *testing.T) {
	for _, c := range []struct{ metric, in, want string }{
		{"squad", `{"prediction": "Paris", "ground_truths": ["Lyon"], "Ground_Truths": ["Paris"]}`, `{"exact_match":0,"f1":0}`},
		{"squad", `{"prediction": "Lyon", "PREDICTION": "Paris", "ground_truths": ["Lyon"]}`, `{"exact_match":1,"f1":1}`},
		{"rouge", `{"prediction": "a b", "Reference": "c d", "reference": "a b"}`, `"rouge1":{"precision":1,"recall":1,"fmeasure":1}`},
	} {
		var out bytes.Buffer
		if err := runScore([]string{"--metric", c.metric}, strings.NewReader(c.in), &out); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); !strings.Contains(first, c.want) {
			t.Errorf("%s: scores %s, want %s", c.in, first, c.want)
		}
	}
}

func TestScoreErrorsNameLineAndField(t *testing.T) {
	for _, c := range []struct{ metric, in, want string }{
		{"squad", "{\"prediction\": \"x\", \"ground_truths\": [\"x\"]}\n{\"prediction\": \"x\"}\n", `<stdin>:2: field "ground_truths" is missing`},
		{"squad", `{"prediction": 3, "ground_truths": []}`, `<stdin>:1: field "prediction"`},
		{"rouge", `not json`, `<stdin>:1: not a JSON object`},
		{"squad", `{"prediction": "x", "ground_truths": null}`, `<stdin>:1: field "ground_truths" is null`},
		{"squad", `{"prediction": "x", "ground_truths": []}`, `<stdin>:1: field "ground_truths" is empty`},
		{"squad", `{"prediction": null, "ground_truths": ["x"]}`, `<stdin>:1: field "prediction" is null`},
		{"rouge", `{"prediction": "x", "reference": null}`, `<stdin>:1: field "reference" is null`},
		{"squad", `{"prediction": "", "ground_truths": ["Paris", null]}`, `<stdin>:1: field "ground_truths": answer 1 is null`},
		{"squad", "{\"prediction\": \"caf\xe9\", \"ground_truths\": [\"caf\xe8\"]}", `<stdin>:1: not UTF-8 text`},
		{"squad", `{"prediction": "x", "ground_truths": ["x", 3]}`, `<stdin>:1: field "ground_truths": want a string, got JSON number`},
		{"rouge", `{"prediction": "x", "reference": ["x"]}`, `<stdin>:1: field "reference": want a string, got JSON array`},
		{"squad", `{"Prediction": "x", "ground_truths": ["x"]}`, `<stdin>:1: field "prediction" is missing`},
		{"squad", "", `<stdin>: no predictions to score`},
		// A run's predictions file (predictions_best.jsonl) says how to score it here.
		{"squad", `{"id":"q1","question":"Q?","context":"C","generated":"in France","references":["France"],"scores":{"f1":0.5}}`,
			`<stdin>:1: field "prediction" is missing: this line is one of meazo-train's or meazo-eval task's predictions (scored already: its "scores"); ` +
				`to score them here, rename the fields: jq -c '{prediction: .generated, ground_truths: .references}' (squad), ` +
				`jq -c '{prediction: .generated, reference: .references[0]}' (rouge)`},
		{"rouge", "\n  \n", `<stdin>: no predictions to score`},
		{"rouge", `{"prediction": "a", "reference": "` + strings.Repeat("a ", 200001) + `"}`, `<stdin>:1: rouge: the reference has 200001 tokens`},
	} {
		err := runScore([]string{"--metric", c.metric}, strings.NewReader(c.in), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error = %v, want it to contain %q", err, c.want)
		}
	}
	// A wrong flag value is a usage error (exit 2), as meazo-eval task's are.
	for _, args := range [][]string{{"--metric", "bleu"}, {"--metric", ""}, {"--metric", "squad", "--stem"}} {
		var ue *cli.UsageError
		if err := runScore(args, strings.NewReader(""), &bytes.Buffer{}); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	// A file named as an argument is not read from stdin in its place.
	err := runScore([]string{"--metric", "squad", "preds.jsonl"}, strings.NewReader(""), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `unexpected argument "preds.jsonl" (the input is --in FILE, or stdin)`) {
		t.Errorf("argument: %v", err)
	}
}

// TestHelp: every command's -h says what it does, what it reads, what it
// prints and an example (cli.CheckHelp); task's names the files of --model.
func TestHelp(t *testing.T) {
	if err := commands.CheckHelp(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if status := commands.Exec([]string{"task", "-h"}, nil, io.Discard, &stderr); status != 0 ||
		!strings.Contains(stderr.String(), "Reads:    --model: an HF model directory (config.json, safetensors weights, tokenizer.json") {
		t.Errorf("task -h: status %d\n%s", status, stderr.String())
	}
}

// Python's json.loads keeps "\ud800" and "\udc00" as two different
// characters, so evaluate-v1.1.py scores this line EM 0, F1 0; Go's decoder
// made both U+FFFD and scored it EM 1, F1 1: such a field is refused.
func TestScoreSquadLoneSurrogates(t *testing.T) {
	in := `{"prediction": "\ud800", "ground_truths": ["\udc00"]}` + "\n"
	var out bytes.Buffer
	err := runScore([]string{"--metric", "squad"}, strings.NewReader(in), &out)
	if want := `<stdin>:1: field "prediction" holds a lone UTF-16 surrogate escape`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("two different lone surrogates: %v (output %s), want %q", err, out.String(), want)
	}
	// A pair is one character, and an escaped backslash is no escape.
	in = `{"prediction": "\ud83d\ude00 \\ud800", "ground_truths": ["\ud83d\ude00"]}` + "\n"
	if err := runScore([]string{"--metric", "squad"}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
}
