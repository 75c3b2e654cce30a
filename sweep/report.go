package sweep

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/meazo-go/meazo/internal/shell"
)

// quietStatuses are the states Status counts without listing each run
// (verbose lists them too): the normal course of a study of thousands of
// runs, where a line each would bury the few that need a look.
var quietStatuses = []string{StatusNew, StatusQueued, StatusDone, StatusDiverged}

// Status prints every sweep's runs and their state, from the run
// directories only: the counts per sweep, and the runs that need a look
// (running, failed, interrupted, unfinished; verbose: every run).
func (st *Study) Status(w io.Writer, verbose bool) error {
	total := map[string]int{}
	quiet := 0
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return err
		}
		counts := map[string]int{}
		all := ss.Runs()
		for _, r := range all {
			counts[ss.States[r.Dir].Status]++
			total[ss.States[r.Dir].Status]++
		}
		stage := "stage 1 (coarse)"
		switch {
		case ss.Complete() && ss.Note == "":
			stage = "complete"
			if sw, err := Summarize(sp.Dir, sp.Results(all, ss.States), sp.Exp.Seeds, sp.Exp.Coarse); err == nil {
				stage += ", η* = " + LRString(sw.EtaStar)
			}
		case ss.Stage2Known && ss.Note == "":
			stage = fmt.Sprintf("stage 2 (fine, around coarse η* = %s)", LRString(ss.CoarseEta))
		case ss.Note != "":
			stage = ss.Note
		}
		fmt.Fprintf(w, "%s: %d runs: %s; %s\n", sp.Name, len(all), countString(counts), stage)
		for _, r := range all {
			s := ss.States[r.Dir]
			if !verbose && slices.Contains(quietStatuses, s.Status) {
				quiet++
				continue
			}
			line := fmt.Sprintf("  %-11s %s", s.Status, r.Dir)
			if s.Detail != "" {
				line += "  (" + s.Detail + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintf(w, "total: %s\n", countString(total))
	if quiet > 0 {
		fmt.Fprintf(w, "(%d new, queued, done or diverged runs counted, not listed: -v lists every run)\n", quiet)
	}
	return nil
}

func countString(c map[string]int) string {
	var keys []string
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// planLine prints a run's stage, status and the meazo-train command that
// run or resume would give it; a finished or diverged run gets none (its
// meazo-train --resume would be refused: nothing left to do), nor does one
// training now or waiting in Slurm's queue (run and resume leave it be).
func planLine(w io.Writer, stage string, s RunState, trainer string, r RunSpec) {
	switch s.Status {
	case StatusDone, StatusDiverged:
		fmt.Fprintf(w, "%s %-10s %s (nothing to run)\n", stage, s.Status, r.Dir)
		return
	case StatusRunning:
		fmt.Fprintf(w, "%s %-10s %s (training now: %s)\n", stage, s.Status, r.Dir, s.Detail)
		return
	case StatusQueued:
		fmt.Fprintf(w, "%s %-10s %s (queued: %s)\n", stage, s.Status, r.Dir, s.Detail)
		return
	}
	fmt.Fprintf(w, "%s %-10s %s %s\n", stage, s.Status, trainer, shellJoin(r.TrainArgs()))
}

// Plan prints every run the study makes (stage 2 as far as it is known) and
// the meazo-train command of each, once every sweep's config loads.
func (st *Study) Plan(w io.Writer, trainer string) error {
	if err := st.CheckConfigs(); err != nil {
		return err
	}
	n := 0
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "# sweep %s: %s, optimizer %s\n", sp.Name, sp.Config(), sp.Optimizer)
		for _, r := range ss.Stage1 {
			planLine(w, "stage1", ss.States[r.Dir], trainer, r)
			n++
		}
		switch {
		case ss.Stage2Known && ss.Note != "":
			fmt.Fprintf(w, "# %s\n", ss.Note)
		case ss.Stage2Known:
			for _, r := range ss.Stage2 {
				planLine(w, "stage2", ss.States[r.Dir], trainer, r)
				n++
			}
		case *sp.Exp.Fine:
			fmt.Fprintf(w, "# stage 2: the fine grid around the coarse η*, known once stage 1 is settled (up to %d rates × %d seeds)\n",
				maxFine(sp.Exp.Coarse), len(sp.Exp.Seeds))
		}
	}
	fmt.Fprintf(w, "# %d runs known now (meazo-sweep check times one run of each sweep here and says what they would take)\n", n)
	return nil
}

// maxFine is the largest fine grid any coarse η* can give.
func maxFine(coarse []float64) int {
	m := 0
	for _, c := range coarse {
		f, _ := FineGrid(coarse, c)
		m = max(m, len(f))
	}
	return m
}

// shellJoin quotes arguments for a POSIX shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shell.Quote(a)
	}
	return strings.Join(q, " ")
}

// lastError is the error meazo-train ended its log with (its last line
// that starts "meazo-train: " and the lines after it, at most 8), so that
// a failed run says why where meazo-sweep reports it; "" when the log has
// none (a crash) or cannot be read. Only what follows offset from is read:
// the attempt that failed, not an earlier attempt's error or signal line
// (a resumed run's log holds every attempt's output).
func lastError(log string, from int64) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 16 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if from = max(from, st.Size()-tail); from > 0 {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tail))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "meazo-train: ") {
			return strings.Join(lines[i:min(len(lines), i+8)], "\n")
		}
	}
	return ""
}

// indented is text after a colon, each of its lines indented ("" for none).
func indented(text string) string {
	if text == "" {
		return ""
	}
	return ":\n    " + strings.ReplaceAll(text, "\n", "\n    ")
}
