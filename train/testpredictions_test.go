package train

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestRestoreTestAnswers: a resume goes on with the answers a stop's
// checkpoint kept when they are as many as the examples done; starts the
// evaluation over, saying so, when the checkpoint kept none; and refuses a
// file that disagrees with state.json.
func TestRestoreTestAnswers(t *testing.T) {
	kept := "{\"id\":\"0\"}\n{\"id\":\"1\"}\n"
	for _, c := range []struct {
		name, file string // file "": none in the checkpoint
		done       int
		wantN      int // answers taken back (−1: none, the evaluation starts over)
		wantErr    string
		wantLog    string
	}{
		{"goes on", kept, 2, 2, "", ""},
		{"none kept", "", 2, -1, "", "the test evaluation of best starts again from its first example"},
		{"none kept, none done", "", 0, -1, "", ""},
		{"too few", kept, 3, 0, "holds 2 answers, state.json says the test evaluation had done 3", ""},
		{"cut line", kept + `{"id":"2"`, 2, 0, "holds 2 answers", ""},
	} {
		dir := t.TempDir()
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, rundir.PartialPredictionsFile), []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var log bytes.Buffer
		r := &run{cfg: &Config{Eval: EvalConfig{Predictions: true}}, out: newRunLog(&log)}
		r.state.Test = &testProgress{Current: "best", Partial: evalPartial{Done: c.done, Sums: []float64{1}}}
		err := r.restoreTestAnswers(dir)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.wantErr)
			}
			continue
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.wantN < 0 {
			if r.answers != nil || r.state.Test.Partial.Done != 0 {
				t.Errorf("%s: answers %v, %d examples done; want the evaluation started over", c.name, r.answers, r.state.Test.Partial.Done)
			}
		} else if r.answers == nil || r.answers.n != c.wantN || r.answers.buf.String() != kept || r.state.Test.Partial.Done != c.done {
			t.Errorf("%s: answers %+v, %d done; want the %d kept", c.name, r.answers, r.state.Test.Partial.Done, c.wantN)
		}
		if !strings.Contains(log.String(), c.wantLog) || (c.wantLog == "" && log.Len() > 0) {
			t.Errorf("%s: log %q, want %q", c.name, log.String(), c.wantLog)
		}
	}
}
