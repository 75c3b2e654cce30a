package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/train"
)

// readPredictions reads a --predictions file, one record a line, and
// checks that each line holds only the record's fields.
func readPredictions(t *testing.T, path string) []train.Prediction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []train.Prediction
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p train.Prediction
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("%s line %d %q: %v", path, len(recs)+1, sc.Text(), err)
		}
		recs = append(recs, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestTaskPredictions: --predictions writes a line per example in the
// data's order: for SST-2 the sentence and the predicted and gold labels,
// which give the printed accuracy, and the log says where it wrote how
// many; for generation the prompt, the generated
// text, the references and the example's scores, whose mean × 100 is each
// printed metric.
func TestTaskPredictions(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	mdir := filepath.Join(dir, "model")
	out := filepath.Join(dir, "preds.jsonl")

	var stdout bytes.Buffer
	var log strings.Builder
	args := []string{"--model", mdir, "--task", "sst2", "--data", filepath.Join(dir, "data", "dev.tsv"), "--max-examples", "9", "--batch-size", "4", "--predictions", out}
	if err := runTask(args, &stdout, &log); err != nil {
		t.Fatal(err)
	}
	if want := "wrote 9 answers (one JSON line each) to " + out + "\n"; !strings.HasSuffix(log.String(), want) {
		t.Errorf("the log ends %q, want %q", log.String()[max(0, log.Len()-200):], want)
	}
	var res map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	recs := readPredictions(t, out)
	if len(recs) != 9 {
		t.Fatalf("%d lines, want 9", len(recs))
	}
	dev, _ := os.ReadFile(filepath.Join(dir, "data", "dev.tsv"))
	rows := strings.Split(string(dev), "\n")[1:] // "sentence\tlabel" rows
	right := 0
	for i, r := range recs {
		l := r.Labelled
		fields := strings.Split(rows[i], "\t")
		if l == nil || r.Generated != nil || r.ID != strconv.Itoa(i) || r.Sentence != fields[0] || strconv.Itoa(l.Gold) != fields[1] ||
			l.Correct != (l.Predicted == l.Gold) || l.PredictedLabel == "" || l.GoldLabel == "" {
			t.Errorf("line %d: %+v %+v, the file's row %q", i+1, r, l, rows[i])
			continue
		}
		if l.Correct {
			right++
		}
	}
	if want := float64(right) / 9; res["accuracy"] != want {
		t.Errorf("accuracy %v, want %v (%d of 9 lines right)", res["accuracy"], want, right)
	}

	gen := filepath.Join(dir, "gen.jsonl")
	os.WriteFile(gen, []byte(`{"prompt":"the film is dull","completion":"terrible","references":["bad"]}`+"\n"+
		`{"id":"g2","prompt":"a <superb> cast","completion":"great","references":["painful film"]}`+"\n"+
		`{"prompt":"the plot is great","completion":"moving painful"}`+"\n"), 0o644)
	stdout.Reset()
	if err := runTask([]string{"--model", mdir, "--task", "generation", "--data", gen, "--max-new-tokens", "4", "--batch-size", "2", "--predictions", out}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	res = nil
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	recs = readPredictions(t, out) // replaces the SST-2 file
	raw, _ := os.ReadFile(out)
	if len(recs) != 3 || recs[0].ID != "line 1" || recs[1].ID != "g2" || recs[2].ID != "line 3" || recs[1].Prompt != "a <superb> cast" ||
		!strings.Contains(string(raw), `"prompt":"a <superb> cast"`) {
		t.Fatalf("lines %+v:\n%s", recs, raw)
	}
	sums := map[string]float64{}
	for i, r := range recs {
		if r.Generated == nil || r.Labelled != nil || len(r.References) == 0 || len(r.Scores) != 6 {
			t.Fatalf("line %d: %+v", i+1, r)
		}
		for k, s := range r.Scores {
			sums[k] += s
		}
	}
	if len(res) != 6 {
		t.Errorf("metrics %v", res)
	}
	for k, v := range res {
		if mean := 100 * sums[k] / 3; v != mean {
			t.Errorf("%s: printed %v, 100 × the lines' mean %v", k, v, mean)
		}
	}
}

// TestTaskPredictionsRefused: --predictions never writes over what the
// evaluation reads (the data file, the model's or the adapter's
// directory), nor into a directory that cannot take it, and says so before
// a model loads; a failed evaluation leaves the file as it was.
func TestTaskPredictionsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(dir, 1); err != nil {
		t.Fatal(err)
	}
	mdir, dev := filepath.Join(dir, "model"), filepath.Join(dir, "data", "dev.tsv")
	adapter := filepath.Join(dir, "adapter")
	os.Mkdir(adapter, 0o755)
	// A link to a device, as /dev/stdout is: the atomic rename would
	// replace the link (as root, /dev/stdout itself), not write into it.
	devLink := filepath.Join(dir, "stdout")
	if err := os.Symlink(os.DevNull, devLink); err != nil {
		t.Skipf("no symbolic links here (%v): the rest of the checks need one", err)
	}
	before, _ := os.ReadFile(dev)
	for _, c := range []struct {
		preds string
		more  []string
		want  string
	}{
		{dev, nil, "--predictions " + dev + " is the input " + dev},
		{filepath.Join(mdir, "preds.jsonl"), nil, "is inside the input " + mdir},
		{filepath.Join(adapter, "preds.jsonl"), []string{"--adapter", adapter}, "is inside the input " + adapter},
		{filepath.Join(dir, "data"), nil, "--predictions " + filepath.Join(dir, "data") + " is a directory; name a file"},
		{devLink, nil, "--predictions " + devLink + " is a symbolic link"},
		{filepath.Join(dir, "nope", "preds.jsonl"), nil, "cannot write there"},
		{"-", nil, "--predictions -: name a file"},
	} {
		var log strings.Builder
		args := append([]string{"--model", mdir, "--task", "sst2", "--data", dev, "--predictions", c.preds}, c.more...)
		err := runTask(args, io.Discard, &log)
		if err == nil || !strings.Contains(err.Error(), c.want) || log.Len() > 0 {
			t.Errorf("--predictions %s: %v (log %q), want an error with %q before the model loads", c.preds, err, log.String(), c.want)
		}
	}
	if after, _ := os.ReadFile(dev); !bytes.Equal(after, before) {
		t.Error("the data file changed")
	}
	if target, err := os.Readlink(devLink); err != nil || target != os.DevNull {
		t.Errorf("the link to %s became %q (%v)", os.DevNull, target, err)
	}
	// An evaluation that fails (no usable row) leaves an earlier file whole.
	out := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(out, []byte("earlier\n"), 0o644)
	if err := runTask([]string{"--model", mdir, "--task", "generation", "--data", dev, "--predictions", out}, io.Discard, io.Discard); err == nil {
		t.Fatal("an SST-2 file evaluated as generation")
	}
	if b, _ := os.ReadFile(out); string(b) != "earlier\n" {
		t.Errorf("after a failed evaluation the file holds %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".preds.jsonl.tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// --predictions replaces an earlier predictions file (a JSON object with
// an "id" on its first line) or an empty one, and refuses any other file:
// --predictions data/train.tsv, a slip of the flags, replaced the data.
func TestPredictionsReplaceOnlyPredictions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"preds.jsonl", `{"id": 3, "generated": "x"}` + "\n", true},
		{"empty.jsonl", "", true},
		{"train.tsv", "sentence\tlabel\nfine\t1\n", false},
		{"demo.yaml", "model:\n  path: m\n", false},
		{"other.jsonl", `{"prompt": "p"}` + "\n", false},
		{"oneline.json", `{"x": "` + strings.Repeat("a", 65<<20) + `"}`, false}, // read as empty, and replaced

	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkReplaceable(p); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if err := checkReplaceable(filepath.Join(dir, "new.jsonl")); err != nil {
		t.Errorf("a new file: %v", err)
	}
}

// A predictions file written by a Windows editor (a byte-order mark before
// its first line) is scored, as the data files are read.
func TestScoreBOM(t *testing.T) {
	in := "\xef\xbb\xbf" + `{"prediction": "Paris", "ground_truths": ["Paris"]}` + "\n"
	var out bytes.Buffer
	if err := runScore([]string{"--metric", "squad"}, strings.NewReader(in), &out); err != nil || !strings.Contains(out.String(), `"exact_match":100`) {
		t.Errorf("%v: %s", err, out.String())
	}
}
