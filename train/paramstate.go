package train

import (
	"fmt"
	"path/filepath"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/zo"
)

// paramState is what a run trains, in one place: an adapter's parameters in
// host memory (adapterState; visionState, a ViT's) or the model's own
// weights on its backend (fullState, full-parameter ZO). The loop, the
// checkpoints and the test evaluation reach the parameters only through it.
// A decoder's (adapterState, fullState) is also the objective's viewer.
type paramState interface {
	// count is the number of trained parameters.
	count() int64
	// stateBytes is the optimizer state kept beside the parameters, not by
	// the optimizer itself (a model's weights' moments, on its device).
	stateBytes() int64
	// newEngine makes the ZO engine over the parameters.
	newEngine(opt zo.Optimizer, cfg zo.Config) (*zo.Engine, error)
	// attach makes the model's Forward use the current parameters, detach
	// takes them away again (validation).
	attach()
	detach()

	// snapshot keeps what a checkpoint of the current parameters needs
	// after they move on (an adapter's copy); ok is false where no copy is
	// kept (a model's weights): a stop in the next validation then
	// checkpoints the state after the step, with that validation pending.
	snapshot() (snap any, ok bool)
	// save writes the parameters (snap's, when not nil) and what a resume
	// needs besides them (optimizer moments, the best adapter) into the
	// checkpoint directory dir being written, at step.
	save(dir string, snap any, step int, hasBest bool) error
	// committed says that the checkpoint directory save last wrote is now
	// the run's checkpoint/ (renamed into place).
	committed()
	// restore reads back what save wrote into the checkpoint directory dir;
	// restored then puts the run directory runDir in agreement with it,
	// once nothing can refuse the resume.
	restore(dir string, hasBest bool) error
	restored(runDir string, hasBest bool) error
	// newBest makes the current parameters the run's best/. A fullState's
	// best/ is its checkpoint's weights (bestNeedsCheckpoint), written
	// first, so that best/ is never newer than the checkpoint.
	newBest(runDir string) error
	bestNeedsCheckpoint() bool
	// saveLast writes the final parameters into last/.
	saveLast(runDir string) error
	// tests lists the test evaluations of a finished run, in order: the
	// best, the last and, with base, the untrained model's parameters.
	tests(base bool) []testEval
}

// viewer is what the objective needs of the trained parameters: the
// model's view of an engine variant (joining the forward at decoder layer
// from) and of θ0, and where each group acts.
type viewer interface {
	variant(v zo.Variant, from int) model.Variant
	baseOf(base [][]float32) model.Variant
	// groupLayer is the first decoder layer where group g acts (prefix
	// caching when grouped).
	groupLayer(g int) int
}

// adapterView is an adapter's viewer: the model's view of any point of its
// parameters.
type adapterView struct{ a trainable }

func (v adapterView) variant(zv zo.Variant, from int) model.Variant {
	return v.a.Variant(zv.Params, from)
}
func (v adapterView) baseOf(base [][]float32) model.Variant { return v.a.Variant(base, 0) }
func (v adapterView) groupLayer(g int) int                  { return v.a.GroupLayer(g) }

// testEval is one test evaluation: its name (best, last, base) and how to
// run fn on the model with those parameters.
type testEval struct {
	name string
	with func(fn func(*model.Model) error) error
}

// adapterState is a decoder's adapter (LoRA or prompt tuning) trained on
// the host: its live parameters and a copy of the best ones.
type adapterState struct {
	adapterView
	adapterCopies
	m     *model.Model
	a     trainable
	merge bool // evaluate with LoRA merged into the weights (eval.merge)
}

func newAdapterState(m *model.Model, a trainable, merge bool) *adapterState {
	return &adapterState{adapterView: adapterView{a}, adapterCopies: newAdapterCopies(a), m: m, a: a, merge: merge}
}

// adapterFiles is what adapterCopies needs of an adapter: its parameters,
// making the model use some, and its PEFT adapter directory.
type adapterFiles interface {
	Params() [][]float32
	Attach(params [][]float32)
	Detach()
	Save(dir string, params [][]float32) error
	Load(dir string, dst [][]float32) error
}

// adapterCopies are an adapter's live parameters (the engine's) and a copy
// of the best, saved and restored through the adapter: the part of paramState
// every adapter on the host shares (a decoder's adapterState, a ViT's
// visionState).
type adapterCopies struct {
	files    adapterFiles
	params   [][]float32
	bestCopy [][]float32
}

func newAdapterCopies(a adapterFiles) adapterCopies {
	p := a.Params()
	return adapterCopies{files: a, params: p, bestCopy: cloneParams(p)}
}

func (s *adapterCopies) count() int64      { return int64(countParams(s.params)) }
func (s *adapterCopies) stateBytes() int64 { return 0 }

func (s *adapterCopies) newEngine(opt zo.Optimizer, cfg zo.Config) (*zo.Engine, error) {
	return zo.New(s.params, opt, cfg)
}

func (s *adapterCopies) attach()                   { s.files.Attach(s.params) }
func (s *adapterCopies) detach()                   { s.files.Detach() }
func (s *adapterCopies) snapshot() (any, bool)     { return cloneParams(s.params), true }
func (s *adapterCopies) bestNeedsCheckpoint() bool { return false }
func (s *adapterCopies) committed()                {}

func (s *adapterCopies) save(dir string, snap any, step int, hasBest bool) error {
	params := s.params
	if snap != nil {
		params = snap.([][]float32)
	}
	if err := s.files.Save(dir, params); err != nil {
		return err
	}
	if hasBest { // the best adapter so far, which best/ may have moved past by the time a resume reads it
		return s.files.Save(filepath.Join(dir, rundir.BestDir), s.bestCopy)
	}
	return nil
}

func (s *adapterCopies) restore(dir string, hasBest bool) error {
	if err := s.files.Load(dir, s.params); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !hasBest {
		return nil
	}
	if err := s.files.Load(filepath.Join(dir, rundir.BestDir), s.bestCopy); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	return nil
}

// restored writes the checkpoint's best adapter into best/: the run's
// best/ may hold a better adapter of the steps after the checkpoint, which
// run again (otherwise after a --set): until they find it again, the best
// is the checkpoint's, as the summary says.
func (s *adapterCopies) restored(runDir string, hasBest bool) error {
	if !hasBest {
		return nil
	}
	if err := s.files.Save(filepath.Join(runDir, rundir.BestDir), s.bestCopy); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	return nil
}

func (s *adapterCopies) newBest(runDir string) error {
	copyParams(s.bestCopy, s.params)
	return s.files.Save(filepath.Join(runDir, rundir.BestDir), s.bestCopy)
}

func (s *adapterCopies) saveLast(runDir string) error {
	return s.files.Save(filepath.Join(runDir, rundir.LastDir), s.params)
}

func (s *adapterState) tests(base bool) []testEval {
	with := func(params [][]float32) func(fn func(*model.Model) error) error {
		return func(fn func(*model.Model) error) error { return withAdapter(s.m, s.a, params, s.merge, fn) }
	}
	evals := []testEval{{"best", with(s.bestCopy)}, {"last", with(s.params)}}
	if base {
		evals = append(evals, testEval{"base", with(nil)})
	}
	return evals
}
