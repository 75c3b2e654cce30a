package train

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meazo-go/meazo/tensor"
)

// TestRunLogHeartbeat: the heartbeat speaks only when the log has been
// silent for its interval during a phase, names the phase and how long it
// has run, and never writes into the progress bar's open line.
func TestRunLogHeartbeat(t *testing.T) {
	var b strings.Builder
	l := newRunLog(&b)
	start := l.last
	l.beat(start.Add(time.Hour), time.Second)
	if b.Len() != 0 {
		t.Errorf("a heartbeat with no phase: %q", b.String())
	}
	l.begin("validation of step 0", "validation of step 0: 64 examples")
	l.Write([]byte("\r[===   ] 3/10")) // the bar: an open line
	l.beat(time.Now().Add(10*time.Second), 30*time.Second)
	if strings.Contains(b.String(), "…") {
		t.Errorf("a heartbeat 10 s after a write: %q", b.String())
	}
	l.beat(time.Now().Add(90*time.Second), 30*time.Second)
	want := "validation of step 0: 64 examples\n\r[===   ] 3/10\n… validation of step 0: 1m 30s so far\n"
	if got := b.String(); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	l.endLine() // closed already: nothing
	if got := b.String(); got != want {
		t.Errorf("endLine after a heartbeat wrote %q", strings.TrimPrefix(got, want))
	}
}

// slowBackend makes each matrix product wait, so that a tiny run has long
// silences.
type slowBackend struct {
	tensor.Backend
	wait time.Duration
	n    *atomic.Int64
}

func (s slowBackend) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	s.n.Add(1)
	time.Sleep(s.wait)
	s.Backend.MatMul(y, x, rows, w)
}

// TestPhasesAndHeartbeat: a run prints a line as each phase starts, the
// projection after its first step, and a heartbeat naming what runs when a
// phase is silent for longer than the interval.
func TestPhasesAndHeartbeat(t *testing.T) {
	defer func(e time.Duration) { heartbeatEvery = e }(heartbeatEvery)
	heartbeatEvery = 50 * time.Millisecond
	dir, cfg := demoConfig(t, 3)
	var log syncBuilder
	var n atomic.Int64
	_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + dir + "/r", "task.max_validation=8",
		"task.max_test=8", "train.eval_every=2", "eval.batch_size=8", "model.backend=cpu"},
		wrapBackend: func(b tensor.Backend) tensor.Backend { return slowBackend{b, 10 * time.Millisecond, &n} }})
	if err != nil {
		t.Fatal(err)
	}
	got := log.String()
	for _, want := range []string{
		"validation of step 0: 8 examples\n",
		"writing the checkpoint of step 0\n",
		"training: steps 1 to 3, batch 8; validation every 2 steps, checkpoint every 200 steps\n",
		"first step ",
		"the rest takes about ",
		"training ", "(2 steps) + validation ", "(2 × ", "as step 0's) + test evaluation ", "(3 × 8 examples)",
		"test evaluation: the best and the last adapter, and the base model, on 8 examples of ",
		"… step ", " so far\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log does not say %q:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "validation of step 0:"), strings.Index(got, "training: steps"); i < 0 || j < i {
		t.Errorf("the phases are out of order:\n%s", got)
	}
}

// syncBuilder is a strings.Builder safe for the heartbeat's goroutine.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFmtDuration: waits as people read them.
func TestFmtDuration(t *testing.T) {
	for secs, want := range map[float64]string{0.04: "0.0s", 0.4: "0.4s", 12: "12s", 200: "3m 20s", 4020: "1h 07m", 489600: "5d 16h"} {
		if got := fmtDuration(secs); got != want {
			t.Errorf("fmtDuration(%g) = %q, want %q", secs, got, want)
		}
	}
}
