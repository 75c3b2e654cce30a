package train

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/rundir"
)

// removeTestAnswers removes the answer files of the run in dir, if any:
// those of an earlier test evaluation, which a finished run resumed with
// other settings (more steps, another test file, without eval.base) would
// otherwise keep beside its new results.
func removeTestAnswers(dir string) error {
	for _, name := range rundir.PredictionsFiles() {
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
func loadTestAnswers(dir string, done int) (*Answers, error) {
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
	a := &Answers{n: n}
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
