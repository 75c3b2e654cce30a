package results

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
	"github.com/meazo-go/meazo/zo"
)

// MomentStats are the statistics of the paper's Table 4 over every
// coordinate of a second-moment vector v: its smallest and largest value,
// mean, standard deviation (population, n in the denominator) and excess
// kurtosis (Fisher's: 0 for a normal distribution, as scipy.stats.kurtosis;
// Pearson's is 3 more). A large kurtosis means a few coordinates carry most
// of v: the heterogeneity that per-coordinate adaptivity would exploit.
type MomentStats struct {
	N                         int
	Min, Max, Mean, Std, Kurt float64
}

// Moments computes MomentStats over the values of every slice, in float64
// and in a fixed order (so the same v gives the same digits). A vector
// without spread has a NaN kurtosis.
func Moments(vs ...[]float32) MomentStats {
	a := newMomentSums()
	for _, v := range vs {
		a.first(v)
	}
	a.center()
	for _, v := range vs {
		a.second(v)
	}
	return a.stats()
}

// momentSums accumulates MomentStats in two passes over the same values in
// the same order (first, then center, then second), so that a vector too
// large to hold (a full-parameter run's v, read a tensor at a time) gives
// the digits Moments gives for it whole.
type momentSums struct {
	s           MomentStats
	sum, m2, m4 float64
}

func newMomentSums() *momentSums {
	return &momentSums{s: MomentStats{Min: math.Inf(1), Max: math.Inf(-1)}}
}

func (a *momentSums) first(v []float32) {
	for _, x := range v {
		f := float64(x)
		a.s.N++
		a.sum += f
		a.s.Min, a.s.Max = math.Min(a.s.Min, f), math.Max(a.s.Max, f)
	}
}

func (a *momentSums) center() {
	if a.s.N > 0 {
		a.s.Mean = a.sum / float64(a.s.N)
	}
}

func (a *momentSums) second(v []float32) {
	for _, x := range v {
		d := float64(x) - a.s.Mean
		a.m2 += d * d
		a.m4 += d * d * d * d
	}
}

func (a *momentSums) stats() MomentStats {
	s := a.s
	if s.N == 0 {
		return MomentStats{Min: math.NaN(), Max: math.NaN(), Mean: math.NaN(), Std: math.NaN(), Kurt: math.NaN()}
	}
	m2, m4 := a.m2/float64(s.N), a.m4/float64(s.N)
	s.Std = math.Sqrt(m2)
	s.Kurt = math.NaN()
	if m2 > 0 {
		s.Kurt = m4/(m2*m2) - 3
	}
	return s
}

// SecondMoment is one run's column of the table: ZO-Adam's or R-AdaZO's v
// at the step its checkpoint holds.
type SecondMoment struct {
	Dir       string // the run (or checkpoint) directory given
	Optimizer string
	Step      int // the checkpoint's step
	Steps     int // the run's steps, from summary.json; 0 when unknown
	Groups    int
	Stats     MomentStats
}

// ReadSecondMoment reads v from dir's checkpoint (dir is a run directory, or
// a checkpoint directory itself) without a model: the optimizer state in
// optimizer.bin holds it whole, or, for a full-parameter run, whose engine
// leaves the moments beside the weights, optimizer_state.safetensors. A run
// that finished checkpointed its last step; one that did not is read where it
// stopped, and the table says which step that is.
func ReadSecondMoment(dir string) (SecondMoment, error) {
	ckpt := filepath.Join(dir, rundir.CheckpointDir)
	if _, err := os.Stat(filepath.Join(dir, rundir.OptimizerFile)); err == nil {
		ckpt = dir
	}
	path := filepath.Join(ckpt, rundir.OptimizerFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		// A run's best/, last/ or checkpoint/ given: the run's summary says
		// whether it kept a checkpoint to give instead.
		run, what := rundir.OfRun(dir)
		who, of := "the run", dir
		if run != "" {
			who, of = "the run "+run, run
		}
		if s, serr := rundir.ReadSummary(of); serr == nil && s.WeightsKept != "" {
			return SecondMoment{}, fmt.Errorf("%s: no checkpoint: %s is %s and kept no checkpoint (output.keep_weights: %s), so its optimizer's v is gone", dir, who, s.Status, s.WeightsKept)
		}
		if run != "" {
			return SecondMoment{}, fmt.Errorf("%s: no checkpoint (no %s): it is %s's %s: give %s or its %s/", dir, rundir.OptimizerFile, run, what, run, rundir.CheckpointDir)
		}
		return SecondMoment{}, fmt.Errorf("%s: no checkpoint (no %s): give a run directory or its checkpoint/", dir, rundir.OptimizerFile)
	}
	if err != nil {
		return SecondMoment{}, err
	}
	st, err := zo.ReadSavedState(b)
	if err != nil {
		return SecondMoment{}, fmt.Errorf("%s: %w", path, err)
	}
	sm := SecondMoment{Dir: dir, Optimizer: st.Optimizer, Step: st.Step, Groups: len(st.Dims)}
	v, err := st.SecondMoments()
	switch {
	case errors.Is(err, zo.ErrExternalMoments):
		if sm.Stats, err = fullSecondMoment(ckpt, st); err != nil {
			return SecondMoment{}, err
		}
	case err != nil:
		return SecondMoment{}, fmt.Errorf("%s: %w", path, err)
	default:
		sm.Stats = Moments(v...)
	}
	if s, err := rundir.ReadSummary(dir); err == nil {
		sm.Steps = s.Steps
	}
	return sm, nil
}

// fullSecondMoment reads v from a full-parameter checkpoint, whose engine
// (st, from optimizer.bin) leaves the moments to the model's weights: the
// checkpoint's optimizer_state.safetensors holds every trained tensor's v,
// read twice a tensor at a time (the mean, then the spread). Before the
// first update there is no such file, and v is zero, as the optimizer
// starts it.
func fullSecondMoment(ckpt string, st *zo.SavedState) (MomentStats, error) {
	path := filepath.Join(ckpt, fullparam.StateFile)
	want := 0
	for _, d := range st.Dims {
		want += d
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && st.Step == 0 && want > 0 {
		return MomentStats{N: want, Kurt: math.NaN()}, nil // every coordinate 0: no spread
	}
	a := newMomentSums()
	n := 0
	if err := fullparam.ReadSecondMoments(path, func(_ string, v []float32) error {
		n += len(v)
		a.first(v)
		return nil
	}); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return MomentStats{}, fmt.Errorf("%s: missing: a full-parameter %s run keeps its v there (optimizer.bin holds none), and its checkpoint of step %d has none", path, st.Optimizer, st.Step)
		}
		return MomentStats{}, err
	}
	if n != want {
		return MomentStats{}, fmt.Errorf("%s: v of %d coordinates, but optimizer.bin's %d groups train %d", path, n, len(st.Dims), want)
	}
	a.center()
	if err := fullparam.ReadSecondMoments(path, func(_ string, v []float32) error {
		a.second(v)
		return nil
	}); err != nil {
		return MomentStats{}, err
	}
	return a.stats(), nil
}

// SecondMomentTable is the paper's Table 4 for the runs given, one column
// each, and the FO-Adam column the paper sets beside them, which this
// project cannot fill: FO-Adam's v comes from back-propagated gradients, and
// meazo-go runs forward passes only.
func SecondMomentTable(cols []SecondMoment) string {
	var b strings.Builder
	b.WriteString("# Second moment v_t of the per-coordinate adaptive optimizers (the paper's Table 4)\n\n")
	b.WriteString("| statistic |")
	for _, c := range cols {
		step := fmt.Sprintf("step %d", c.Step)
		if c.Steps > 0 {
			step = fmt.Sprintf("step %d of %d", c.Step, c.Steps)
		}
		fmt.Fprintf(&b, " %s, %s (%s) |", sweep.Method{Optimizer: c.Optimizer}, runLabel(c.Dir), step)
	}
	b.WriteString(" FO-Adam |\n|---|" + strings.Repeat("---|", len(cols)+1) + "\n")
	rows := []struct {
		name string
		val  func(MomentStats) float64
	}{
		{"min", func(s MomentStats) float64 { return s.Min }},
		{"max", func(s MomentStats) float64 { return s.Max }},
		{"mean", func(s MomentStats) float64 { return s.Mean }},
		{"std", func(s MomentStats) float64 { return s.Std }},
		{"kurtosis (excess)", func(s MomentStats) float64 { return s.Kurt }},
	}
	fmt.Fprintf(&b, "| coordinates |")
	for _, c := range cols {
		groups := "groups"
		if c.Groups == 1 {
			groups = "group"
		}
		fmt.Fprintf(&b, " %d in %d %s |", c.Stats.N, c.Groups, groups)
	}
	b.WriteString(" – |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r.name)
		for _, c := range cols {
			fmt.Fprintf(&b, " %.4g |", r.val(c.Stats))
		}
		b.WriteString(" – |\n")
	}
	b.WriteString("\nv_t: the optimizer's exponential average of the squared gradient estimate, per coordinate, as the last update\n" +
		"left it (uncorrected; ZO-Adam divides by √(v/(1−β2^t)), R-AdaZO without bias correction by √v), read from the\n" +
		"checkpoint's optimizer.bin (a full-parameter run's: optimizer_state.safetensors). std: population (n in the\n" +
		"denominator); kurtosis: excess (Fisher, 0 for a normal distribution; Pearson's is 3 more).\n" +
		"FO-Adam: not available. Its v_t comes from first-order (back-propagated) gradients, and meazo-go computes\n" +
		"forward passes only; the paper's FO-Adam column needs a back-propagation trainer (e.g. PyTorch) on the same run.\n")
	return b.String()
}
