package sweep

import "fmt"

// studyProgress is how far a study has got, as its sweeps were last read:
// per sweep the runs known (stage 1, and stage 2 once stage 1 is settled)
// and those with a result (done or diverged), and whether a stage 2 is
// still to come. meazo-sweep run says it after each run ("12 of 36 runs
// have a result"), so that a study of hours shows where it is.
type studyProgress struct {
	known         []int
	results       []map[string]bool // the runs with a result, by directory
	stage2Unknown []bool
}

func newStudyProgress(sweeps int) *studyProgress {
	p := &studyProgress{known: make([]int, sweeps), results: make([]map[string]bool, sweeps), stage2Unknown: make([]bool, sweeps)}
	for i := range p.results {
		p.results[i] = map[string]bool{}
	}
	return p
}

// update records sweep i's state as just read.
func (p *studyProgress) update(i int, sp *SweepPlan, ss *StageState) {
	runs := ss.Runs()
	p.known[i] = len(runs)
	for _, r := range runs {
		if s := ss.States[r.Dir].Status; s == StatusDone || s == StatusDiverged {
			p.results[i][r.Dir] = true
		}
	}
	p.stage2Unknown[i] = !ss.Stage2Known && *sp.Exp.Fine
}

// result records that run dir of sweep i has a result now (until the sweep
// is read again).
func (p *studyProgress) result(i int, dir string) { p.results[i][dir] = true }

// complete says whether every run known has a result and no stage 2 is
// still to come.
func (p *studyProgress) complete() bool {
	for i := range p.known {
		if len(p.results[i]) < p.known[i] || p.stage2Unknown[i] {
			return false
		}
	}
	return true
}

func (p *studyProgress) String() string {
	known, results, later := 0, 0, 0
	for i := range p.known {
		known += p.known[i]
		results += len(p.results[i])
		if p.stage2Unknown[i] {
			later++
		}
	}
	s := fmt.Sprintf("%d of %d runs have a result", results, known)
	if later > 0 {
		s += fmt.Sprintf("; stage 2 of %s still to come", Plural(later, "sweep"))
	}
	return s
}

// Plural is "1 seed", "2 seeds": a count and its noun, for messages and
// captions.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
