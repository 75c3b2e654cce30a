package train

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// progress shows training progress: a bar redrawn in place on a terminal,
// or a plain line every `every` steps otherwise (logs, CI, nohup). Its
// s/step is the run's mean time of a step alone; its ETA the wall-clock
// rate since begin, validations and checkpoints included, so that it holds.
type progress struct {
	w        *runLog
	terminal bool
	total    int
	every    int
	start    time.Time
	first    int           // the step this invocation began after (a resume's)
	memory   func() string // the peak memory so far, for the line's end ("": none known)
	mem      string        // memory's last answer, asked again at most once a second
	memAt    time.Time
	// lossName names the training loss in the lines: "loss", or "-F1"
	// and "-accuracy" for train.objective f1 and accuracy, whose loss is
	// minus the answers' F1 or the predicted labels' accuracy.
	lossName string
	// valMetrics are the last validation's metric (eval.validation_metrics;
	// nil: off), shown after its loss (a terminal's bar: barMetric's); a
	// line is printed at each step that validates with it, whatever
	// train.log_every.
	valMetrics map[string]float64
}

func newProgress(w *runLog, terminal bool, total, every int, memory func() string) *progress {
	return &progress{w: w, terminal: terminal, total: total, every: max(every, 1), start: time.Now(), memory: memory, lossName: "loss"}
}

// begin starts the clock before the first step after step.
func (p *progress) begin(step int) {
	p.first, p.start = step, time.Now()
}

// update shows step's training loss and the run's mean seconds per step,
// with the last validation loss (NaN: none yet) and, where it is older, the
// step it was measured at (valStep < 0: not known).
func (p *progress) update(step int, loss, stepSecs, valLoss float64, valStep int) {
	done := step - p.first
	rate := float64(done) / time.Since(p.start).Seconds()
	eta := time.Duration(float64(p.total-step) / rate * float64(time.Second)).Round(time.Second)
	val := ""
	if !math.IsNaN(valLoss) {
		val = fmt.Sprintf(" val %.4f", valLoss)
		if p.valMetrics != nil && p.terminal {
			val += " (" + FormatMetrics(barMetric(p.valMetrics)) + ")"
		} else if p.valMetrics != nil {
			val += " (" + FormatMetrics(p.valMetrics) + ")"
		}
		if valStep >= 0 && valStep != step {
			val += fmt.Sprintf(" (step %d)", valStep)
		}
	}
	mem := p.memoryNote()
	if p.terminal {
		const width = 30
		fill := width * step / max(p.total, 1)
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s %.4f%s  %s  ETA %s%s ", strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
			step, p.total, p.lossName, loss, val, perStep(stepSecs), eta, mem)
		return
	}
	if step%p.every == 0 || step == p.total || p.valMetrics != nil && valStep == step {
		fmt.Fprintf(p.w, "step %d/%d %s %.4f%s, %s, ETA %s%s\n", step, p.total, p.lossName, loss, val, perStep(stepSecs), eta, mem)
	}
}

// barMetric is the one of a validation's metrics that the terminal's bar
// shows: the task's own, as meazo-plot's tables take it (accuracy; ROUGE-L
// for XSum and generation; SQuAD's F1). The bar is redrawn in place with
// a carriage return, and a line wider than the terminal (all six of
// generation's metrics made it some 200 columns) wraps, leaving a line
// behind at every step. The log's lines (not a terminal) show them all.
func barMetric(m map[string]float64) map[string]float64 {
	for _, k := range []string{"accuracy", "rougeL", "f1"} {
		if v, ok := m[k]; ok {
			return map[string]float64{k: v}
		}
	}
	return m
}

// memoryNote is ", " and the peak memory for a line's end (or ""): read
// from the process at most once a second, since a terminal's bar is drawn
// at every step (a tiny model's take milliseconds).
func (p *progress) memoryNote() string {
	if p.memory != nil && time.Since(p.memAt) >= time.Second {
		p.mem, p.memAt = p.memory(), time.Now()
	}
	if p.mem == "" {
		return ""
	}
	return ", " + p.mem
}

// perStep is a step's time, in milliseconds below a tenth of a second (a
// tiny model's: "0.00 s/step" said nothing).
func perStep(secs float64) string {
	if secs < 0.1 {
		return fmt.Sprintf("%.1f ms/step", secs*1000)
	}
	return fmt.Sprintf("%.2f s/step", secs)
}

// done ends the bar's line.
func (p *progress) done() { p.w.endLine() }
