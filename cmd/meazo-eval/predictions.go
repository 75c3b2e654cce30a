package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/train"
)

// predictions is meazo-eval task's --predictions file: the per-example
// records (train.Prediction) that the evaluation hands over, one JSON line
// each in the data's order, held in memory and written atomically once the
// evaluation is done, so that a failed or interrupted one leaves no file
// and no half of one. A nil *predictions (no --predictions) takes nothing.
type predictions struct {
	path    string
	answers train.Answers
}

// newPredictions checks, before any model loads, that path can be written
// without replacing what the evaluation reads (inputs: the --data file, the
// model's and the adapter's directories) or going into a model's or a run's
// directory, and that its directory takes a new file; "" is no file (nil).
func newPredictions(path string, inputs ...string) (*predictions, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return nil, fmt.Errorf("--predictions -: name a file (stdout has the metrics)")
	}
	if err := outpath.CheckFile("--predictions", path, inputs...); err != nil {
		return nil, err
	}
	if err := checkReplaceable(path); err != nil {
		return nil, err
	}
	// The file is written at the end: find out now, not after an hour of
	// generation, that its directory is missing or read-only.
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("--predictions %s: cannot write there: %w", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return &predictions{path: path}, nil
}

// checkReplaceable refuses an existing file that is not an earlier
// predictions file (empty, or its first line a JSON object with an "id"):
// --predictions data/train.tsv or --predictions config.yaml, a slip of
// the flags, would replace the user's file with the answers.
func checkReplaceable(path string) error {
	return checkOurLines("--predictions", path, "a predictions file", "id")
}

// checkOurLines refuses an existing file at path (given as flag) unless
// it is empty or its first line is a JSON object with one of keys: a file
// of ours (what) that writing may replace.
func checkOurLines(flag, path, what string, keys ...string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // missing (or unreadable: the write says)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	if !sc.Scan() {
		if sc.Err() == nil {
			return nil // empty
		}
		// A first line over 64 MiB (a file of one long line) is no file
		// of ours; it was taken for an empty one and replaced.
	} else {
		var rec map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			for _, k := range keys {
				if _, ok := rec[k]; ok {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%s %s exists and is not %s (its first line is not a JSON object with %s): writing would replace it; name a new file, or remove it first",
		flag, path, what, quotedOr(keys))
}

// quotedOr lists keys for a message: `an "a"`, `"a" or "b"`, `"a", "b" or "c"`.
func quotedOr(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	if len(q) == 1 {
		return "an " + q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// record is the evaluation's train.EvalOptions.OnPrediction; nil for no
// file.
func (p *predictions) record() func(train.Prediction) {
	if p == nil {
		return nil
	}
	return p.answers.Recorder()
}

// write writes the records to the file, replacing it atomically, and
// says so on log.
func (p *predictions) write(log io.Writer) error {
	if p == nil {
		return nil
	}
	if err := p.answers.WriteFile(p.path); err != nil {
		return fmt.Errorf("--predictions: %w", err)
	}
	fmt.Fprintf(log, "wrote %d answers (one JSON line each) to %s\n", p.answers.Len(), p.path)
	return nil
}
