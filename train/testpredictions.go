package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// testAnswers are the Prediction records of the test evaluation under way
// (eval.predictions), one JSON line each in the data's order, held in
// memory until the evaluation ends and its predictions file is written
// whole: a run stopped or killed during the test leaves no half file. A
// stop's checkpoint keeps the records so far (PartialPredictionsFile), and
// resume goes on from them. A nil *testAnswers records nothing.
type testAnswers struct {
	buf bytes.Buffer
	n   int   // records in buf
	err error // the first record that did not encode
}

// recorder is the evaluator's record function for a, nil for no records.
func (a *testAnswers) recorder() func(Prediction) {
	if a == nil {
		return nil
	}
	enc := json.NewEncoder(&a.buf)
	enc.SetEscapeHTML(false) // the texts as they are: "<", not "\u003c"
	return func(p Prediction) {
		if err := enc.Encode(p); err != nil && a.err == nil {
			a.err = fmt.Errorf("test example %q: its answer's record: %w", p.ID, err)
		}
		a.n++
	}
}

// write writes the records to path, replacing it atomically.
func (a *testAnswers) write(path string) error {
	if a.err != nil {
		return a.err
	}
	return atomicfile.WriteFile(path, a.buf.Bytes())
}

// removeTestAnswers removes the answer files of the run in dir, if any:
// those of an earlier test evaluation, which a finished run resumed with
// other settings (more steps, another test file, without eval.base) would
// otherwise keep beside its new results.
func removeTestAnswers(dir string) error {
	for _, name := range predictionsFiles() {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the answers of the earlier test evaluation: %w", err)
		}
	}
	return nil
}

// loadTestAnswers reads the records a stop's checkpoint (dir) kept of the
// evaluation it cut short after done examples. It returns nil (start that
// evaluation over) where the checkpoint has none: one written without
// eval.predictions, or by a version that did not keep them.
func loadTestAnswers(dir string, done int) (*testAnswers, error) {
	path := filepath.Join(dir, rundir.PartialPredictionsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := bytes.Count(b, []byte{'\n'})
	if n != done || (len(b) > 0 && b[len(b)-1] != '\n') {
		return nil, corrupted("%s holds %d answers, state.json says the test evaluation had done %d", path, n, done)
	}
	a := &testAnswers{n: n}
	a.buf.Write(b)
	return a, nil
}

// restoreTestAnswers takes back the answers of the test evaluation that a
// stop cut short (checkpoint dir), for it to go on. Where the checkpoint
// has none although answers are to be written (one of a version that did
// not keep them), that evaluation starts over from its first example, so
// that its file is whole; so does a finished one whose file is missing.
func (r *run) restoreTestAnswers(dir string) error {
	tp := r.state.Test
	if tp == nil || !r.cfg.Eval.Predictions {
		return nil
	}
	for _, name := range rundir.TestEvaluations {
		if _, done := tp.Finished[name]; !done {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.dir, rundir.PredictionsFile(name))); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(r.out, "the test evaluation of %s runs again: its answers are not in %s (eval.predictions)\n", name, rundir.PredictionsFile(name))
			delete(tp.Finished, name)
		}
	}
	if tp.Current == "" {
		return nil
	}
	a, err := loadTestAnswers(dir, tp.Partial.Done)
	if err != nil {
		return err
	}
	if a == nil && tp.Partial.Done > 0 {
		fmt.Fprintf(r.out, "the test evaluation of %s starts again from its first example: the checkpoint has not kept the answers of the %d before (eval.predictions)\n", tp.Current, tp.Partial.Done)
		tp.Partial = evalPartial{}
	}
	r.answers = a
	return nil
}

// sameParams says whether test evaluation name (best or last) scores the
// same parameters as one already finished (twin): the best validation loss
// was the last step's, so the best adapter (or weights) and the last are
// the same numbers, and a backend gives the same bits for them.
func (r *run) sameParams(name string) (twin string, same bool) {
	switch {
	case r.opts.testTwins:
		return "", false
	case name == "best":
		twin = "last"
	case name == "last":
		twin = "best"
	default:
		return "", false
	}
	_, done := r.state.Test.Finished[twin]
	return twin, done && r.state.BestStep == r.state.Step && !math.IsInf(r.state.BestValLoss, 1)
}

// reuseTest takes test evaluation name's results (and answers) from twin's,
// which scored the same parameters (sameParams), instead of running it
// again: a third to a half of the test's time.
func (r *run) reuseTest(name, twin string) error {
	tp := r.state.Test
	fmt.Fprintf(r.out, "test (%s): the same parameters as %s's (the best validation loss is the last step's): its results\n", name, twin)
	if r.cfg.Eval.Predictions {
		b, err := os.ReadFile(filepath.Join(r.dir, rundir.PredictionsFile(twin)))
		if err != nil {
			return fmt.Errorf("test evaluation (%s): %w", name, err)
		}
		if err := atomicfile.WriteFile(filepath.Join(r.dir, rundir.PredictionsFile(name)), b); err != nil {
			return fmt.Errorf("test evaluation (%s): %w", name, err)
		}
	}
	tp.Finished[name] = tp.Finished[twin]
	r.summary.Test[name] = tp.Finished[twin]
	if tp.Current == name { // cut short by a stop (a checkpoint of an earlier version)
		tp.Current, tp.Partial, r.answers = "", evalPartial{}, nil
	}
	return nil
}
