package train

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// runLog is where a run prints (Options.Log). The training loop and the
// heartbeat both write through it: it serialises their writes, knows when
// the log was last written and whether the progress bar's line is open, and
// what the run is doing (its phase), so that a long silence (a slow step, a
// step-0 validation, a checkpoint, the test evaluation on a CPU) is filled
// by a line that names what is running and for how long, never by nothing.
type runLog struct {
	mu    sync.Mutex
	w     io.Writer
	last  time.Time // the last write
	open  bool      // the last write left its line open (the progress bar)
	phase string    // what the run is doing, for the heartbeat ("" : nothing to say)
	since time.Time // when the phase began
}

// heartbeatEvery is how long the log may stay silent during a phase before
// the heartbeat says what is running (a variable for tests).
var heartbeatEvery = 30 * time.Second

func newRunLog(w io.Writer) *runLog {
	now := time.Now()
	return &runLog{w: w, last: now, since: now}
}

func (l *runLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(p)
}

func (l *runLog) write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.last = time.Now()
	if len(p) > 0 {
		l.open = p[len(p)-1] != '\n'
	}
	return n, err
}

// endLine ends an open line (the progress bar's), so that what is printed
// next starts a line of its own.
func (l *runLog) endLine() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open {
		l.write([]byte("\n"))
	}
}

// begin starts a phase: it ends an open line, prints line (if any) and
// names the phase for the heartbeat.
func (l *runLog) begin(phase, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if line != "" {
		if l.open {
			l.write([]byte("\n"))
		}
		l.write([]byte(line + "\n"))
	}
	l.phase, l.since = phase, time.Now()
}

// doing names the phase without a line (each step, a periodic validation).
func (l *runLog) doing(phase string) { l.begin(phase, "") }

// beat prints the heartbeat's line if the log has been silent for every
// during a phase.
func (l *runLog) beat(now time.Time, every time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.phase == "" || now.Sub(l.last) < every {
		return
	}
	if l.open {
		l.write([]byte("\n"))
	}
	l.write([]byte(fmt.Sprintf("… %s: %s so far\n", l.phase, FormatDuration(now.Sub(l.since).Seconds()))))
}

// heartbeat calls beat once a second until stop is called.
func (l *runLog) heartbeat(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(min(time.Second, every))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				l.beat(now, every)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// FormatDuration writes seconds as people read a wait: "0.4s", "12s",
// "3m 20s", "1h 07m", "5d 16h".
func FormatDuration(secs float64) string {
	switch s := int64(secs + 0.5); {
	case secs < 0.0005:
		return "<1ms"
	case secs < 0.1: // a tiny model's step (the demo's): "0.0s" said nothing
		return fmt.Sprintf("%.0fms", secs*1000)
	case secs < 10:
		return fmt.Sprintf("%.1fs", secs)
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd %02dh", s/86400, s%86400/3600)
	}
}
