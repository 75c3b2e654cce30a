package train

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/zo"
)

// fullState is the model's own weights trained in place (adapter.kind
// full, package fullparam). Nothing the size of the model is kept besides
// the weights: no best copy in memory (best/ is written with a checkpoint
// of the same step and shares its files), no snapshot before a validating
// step (a stop in that validation checkpoints after the step, the
// validation pending).
//
// Its checkpoint holds the model as an HF model directory (the files
// model.Save writes, weights in the dtype the run holds them in) and the
// optimizer's moments; a resume loads the model from there. best/ and last/
// are model directories too, hard links to a checkpoint's files where the
// file system allows it (copies otherwise).
type fullState struct {
	fullView
	r *run
	// savedStep is the step whose weights checkpoint/ holds (−1: none yet):
	// a checkpoint of that step again (during the test evaluation, or the
	// one a stop writes) links them instead of reading the weights back.
	// writtenStep is the step save last wrote into checkpoint.tmp/, which
	// becomes savedStep once it is renamed into place (committed).
	savedStep, writtenStep int
	// released says the weights and the optimizer's moments were let go
	// for the test evaluation of another model (release); heldStateBytes
	// is the moments' size they had, for the summary.
	released       bool
	heldStateBytes int64
}

// fullParams selects what a full-parameter run trains: the model's tensors
// that adapter.include and adapter.exclude select, in their groups. A
// pattern's error names its key.
func fullParams(r *run) (*fullparam.Params, error) {
	p, err := fullparam.New(r.m, fullparam.Options{Include: r.cfg.Adapter.Include, Exclude: r.cfg.Adapter.Exclude,
		Grouped: r.cfg.Adapter.Grouped})
	if pe := (*fullparam.PatternError)(nil); errors.As(err, &pe) {
		// "adapter.exclude pattern … matches none of the model's tensors": the key.
		return nil, fmt.Errorf("adapter.%w", pe)
	}
	return p, err
}

func newFullState(r *run) (*fullState, error) {
	// Checked before training, not when best/ is first written.
	if err := model.CheckSourceFiles(r.cfg.Model.Path); err != nil {
		return nil, fmt.Errorf("model.path: %w", err)
	}
	p, err := fullParams(r)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(r.out, trainableLine(p.Count(), p.ModelSize(), fmt.Sprintf("full-parameter%s, in %d group(s)%s, %s%s",
		tensorCount(r.m, p), len(p.Dims()), groupsNote(r.m, p, r.cfg.Adapter.Grouped), storageNote(r.m, p), tiedHeadNote(r.m, p))))
	return &fullState{fullView: fullView{p}, r: r, savedStep: -1, writtenStep: -1}, nil
}

// groupsNote says, for a grouped run, what each group holds, as
// metrics.jsonl's "groups" and meazo-plot vt number them (group 0 is the
// embeddings', not layer 0's, unless they do not train): " (0: the
// embeddings; 1–28: layers 0–27; 29: the final norm)". "" ungrouped.
func groupsNote(m *model.Model, p *fullparam.Params, grouped bool) string {
	if !grouped {
		return ""
	}
	n := len(p.Dims())
	var parts []string
	for g := 0; g < n; {
		end := g // a run of consecutive decoder layers in consecutive groups
		layer := func(at int) bool { return at >= 0 && at < m.Config.NumLayers }
		for layer(p.GroupAt(g)) && end+1 < n && layer(p.GroupAt(end+1)) && p.GroupAt(end+1) == p.GroupAt(end)+1 {
			end++
		}
		switch {
		case end > g:
			parts = append(parts, fmt.Sprintf("%d–%d: layers %d–%d", g, end, p.GroupAt(g), p.GroupAt(end)))
		case layer(p.GroupAt(g)):
			parts = append(parts, fmt.Sprintf("%d: layer %d", g, p.GroupAt(g)))
		default:
			parts = append(parts, fmt.Sprintf("%d: %s", g, outsideLayers(p.GroupTensors(g))))
		}
		g = end + 1
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// outsideLayers names what a group of tensors acting before or after the
// decoder layers holds, from their names: "the final norm and the LM head".
// (OPT-350m lists project_out between its embeddings and project_in, so
// that each is a group of its own.)
func outsideLayers(names []string) string {
	var parts []string
	for _, k := range []struct{ in, what string }{{"embed_", "the embeddings"}, {"project_in", "project_in"},
		{"norm", "the final norm"}, {"project_out", "project_out"}, {"lm_head", "the LM head"}} {
		if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, k.in) }) {
			parts = append(parts, k.what)
		}
	}
	if len(parts) == 0 {
		return strings.Join(names, ", ")
	}
	return strings.Join(parts, " and ")
}

// tensorCount says how many of the model's tensors train, when not all
// do (adapter.include, adapter.exclude): " (23 of the model's 24 tensors)".
func tensorCount(m *model.Model, p *fullparam.Params) string {
	ts, _ := m.Tensors()
	if n := len(p.Tensors()); n < len(ts) {
		return fmt.Sprintf(" (%d of the model's %d tensors)", n, len(ts))
	}
	return ""
}

// tiedHeadNote says, when the model's LM head is tied to its embeddings
// and the embeddings do not train (adapter.exclude:
// [model.embed_tokens.weight]), that the head is frozen with them: the
// log's count has no head of its own to show it.
func tiedHeadNote(m *model.Model, p *fullparam.Params) string {
	if !m.TieEmbeddings {
		return ""
	}
	ts, _ := m.Tensors()
	for _, t := range ts {
		if strings.HasSuffix(t.Name, "embed_tokens.weight") && !slices.Contains(p.Tensors(), t.Name) {
			return "; the LM head is tied to " + t.Name + " (tie_word_embeddings), which does not train: the head is frozen too"
		}
	}
	return ""
}

// storageNote says in which dtype the trained weights are held, which
// decides the run's numbers, its memory and best/'s dtype: bfloat16 (with
// model.bf16_weights) takes each update by stochastic rounding; a BF16
// checkpoint without it, and a float16 one, are widened to float32, twice
// the memory and disk.
func storageNote(m *model.Model, p *fullparam.Params) string {
	trained := map[string]bool{}
	for _, name := range p.Tensors() {
		trained[name] = true
	}
	ts, _ := m.Tensors()
	var bf16, f16 int64
	for _, t := range ts {
		switch {
		case trained[t.Name] && t.BF16:
			bf16 += int64(t.Size())
		case trained[t.Name] && t.F16:
			f16 += int64(t.Size())
		}
	}
	switch {
	case bf16 == p.Count():
		return "held in bfloat16: each update is rounded to bfloat16 stochastically, seeded (docs/ALGORITHMS.md); best/ and last/ are saved in bfloat16"
	case bf16 > 0:
		return fmt.Sprintf("%d of them held in bfloat16 (updates rounded stochastically), the rest in float32", bf16)
	case m.TorchDtype == "bfloat16":
		return "held in float32: the checkpoint's bfloat16 weights widened, twice their memory, and best/ and last/ are saved in float32 (model.bf16_weights=true keeps them in bfloat16)"
	case f16 > 0:
		return "held in float32: the checkpoint's float16 weights widened, twice their memory, and best/ and last/ are saved in float32, which keeps the updates smaller than a float16 can hold"
	}
	return "held in float32"
}

// fullView is the model's own weights' viewer: each variant reads them
// perturbed as fullparam lays them out.
type fullView struct{ p *fullparam.Params }

func (v fullView) variant(zv zo.Variant, from int) model.Variant {
	mv := v.p.Variant(zv)
	mv.From = from
	return mv
}

func (v fullView) baseOf([][]float32) model.Variant { return model.Variant{} }
func (v fullView) groupLayer(g int) int             { return v.p.GroupLayer(g) }

// NewFullObjective returns the objective of full-parameter training of
// p's model (for benchmarks and tools; a run makes its own).
func NewFullObjective(m *model.Model, p *fullparam.Params, prefixCache bool) *Objective {
	return &Objective{&decoderObjective{m: m, view: fullView{p}, noPrefixCache: !prefixCache}}
}

func (s *fullState) count() int64 { return s.p.Count() }
func (s *fullState) stateBytes() int64 {
	if s.released {
		return s.heldStateBytes
	}
	return s.p.StateBytes()
}

// release lets go of the trained weights and the optimizer's moments
// before the test evaluation loads another model (best/, the base model)
// in their place, so that a run never holds two models: the checkpoint of
// the last step holds both, and a checkpoint written after (a stop during
// the test evaluation) links its files (save).
func (s *fullState) release() {
	if s.released {
		return
	}
	s.heldStateBytes = s.p.StateBytes()
	s.p.Release()
	s.released = true
}

func (s *fullState) newEngine(opt zo.Optimizer, cfg zo.Config) (*zo.Engine, error) {
	return zo.NewStore(s.p, opt, cfg)
}

func (s *fullState) attach()                     {}
func (s *fullState) detach()                     {}
func (s *fullState) snapshot() (any, bool)       { return nil, false }
func (s *fullState) bestNeedsCheckpoint() bool   { return true }
func (s *fullState) checkpointDir() string       { return filepath.Join(s.r.dir, rundir.CheckpointDir) }
func (s *fullState) modelSource() string         { return s.r.cfg.Model.Path }
func (s *fullState) statePath(dir string) string { return filepath.Join(dir, fullparam.StateFile) }
func (s *fullState) restore(dir string, hasBest bool) error {
	if hasBest && s.r.state.BestStep != s.r.state.Step {
		if err := s.checkBest(); err != nil {
			return err
		}
	}
	if err := s.p.LoadState(s.statePath(dir)); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	s.savedStep, s.writtenStep = s.r.state.Step, s.r.state.Step
	return nil
}

// checkBest refuses a resume whose best/ holds an earlier step's weights
// (no checkpoint holds them any more, and the manifest's checksums cover
// checkpoint/ only) with a file missing or cut short: the run would train
// to its end and then fail best/'s test evaluation, or score what is left.
// best/'s files are the checkpoint's model files, of the same sizes (the
// same tensors in the same dtype), and open; their contents have no
// checksum to be checked against.
func (s *fullState) checkBest() error {
	best := filepath.Join(s.r.dir, rundir.BestDir)
	damaged := func(why error) error {
		return fmt.Errorf("resume %s: best/ holds the weights of step %d, the best validation loss (checkpoint/ holds step %d's, and no other copy of them is left), and it is damaged: %w; "+
			"the run cannot report its best: start it again (checkpoint/, step %d's weights, is a model meazo-eval task scores)", s.r.dir, s.r.state.BestStep, s.r.state.Step, why, s.r.state.Step)
	}
	files, err := model.SavedFiles(s.checkpointDir())
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	for _, f := range files {
		want, err := os.Stat(filepath.Join(s.checkpointDir(), f))
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		got, err := os.Stat(filepath.Join(best, f))
		switch {
		case err != nil:
			return damaged(err)
		case got.Size() != want.Size():
			return damaged(fmt.Errorf("%s is %d bytes, checkpoint/'s %d", filepath.Join(best, f), got.Size(), want.Size()))
		}
	}
	c, err := safetensors.OpenCheckpoint(best)
	if err != nil {
		return damaged(err)
	}
	return c.Close()
}

// restored links best/ to the checkpoint's weights when they are the best
// ones: a new best validation loss checkpoints its step before best/ is
// linked to it, and a process killed between the two left best/ at the
// best before (or none, at step 0), which no later step would replace if
// none improves on it.
func (s *fullState) restored(runDir string, hasBest bool) error {
	if !hasBest || s.r.state.BestStep != s.r.state.Step {
		return nil
	}
	return s.newBest(runDir)
}

// save writes the model and the optimizer's moments, or links the
// checkpoint's files when it holds this step's (nothing has changed them
// since; after release they are no longer in memory).
//
// The step linked is the step written: a resumed run's first checkpoint
// of the step it resumed at links, and forgetting the step there (it once
// did) made a later checkpoint of that step save whatever model was in
// memory, best/'s during its test evaluation.
func (s *fullState) save(dir string, _ any, step int, _ bool) error {
	if step == s.savedStep {
		if err := linkModel(s.checkpointDir(), dir); err != nil {
			return err
		}
		s.writtenStep = step
		return linkIfPresent(s.statePath(s.checkpointDir()), s.statePath(dir))
	}
	if s.released {
		// The trained weights are gone; the model in memory is another.
		return fmt.Errorf("checkpoint of step %d: the run's weights were released for the test evaluation and checkpoint/ holds step %d's", step, s.savedStep)
	}
	if err := s.r.m.Save(dir, model.SaveOptions{Source: s.modelSource()}); err != nil {
		return err
	}
	if s.p.HasState() {
		if err := s.p.SaveState(s.statePath(dir)); err != nil {
			return err
		}
	}
	s.writtenStep = step
	return nil
}

func (s *fullState) committed() { s.savedStep = s.writtenStep }

// linkIfPresent links (or copies) src to dst where src exists.
func linkIfPresent(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return linkOrCopy(src, dst)
}

// newBest links the checkpoint's model into best/ (the run has just
// checkpointed the step: bestNeedsCheckpoint).
func (s *fullState) newBest(runDir string) error {
	return replaceWithLinks(s.checkpointDir(), filepath.Join(runDir, rundir.BestDir))
}

// saveLast links the last checkpoint's model (the final step's) into last/.
func (s *fullState) saveLast(runDir string) error {
	return replaceWithLinks(s.checkpointDir(), filepath.Join(runDir, rundir.LastDir))
}

// tests evaluates the last weights first, as they are, then best/ and the
// base model, each loaded in place of the one before (the weights are
// released and freed first: a run never holds two models). Each load says
// so: it takes as long as the run's start did.
func (s *fullState) tests(base bool) []testEval {
	load := func(name, dir string) func(fn func(*model.Model) error) error {
		return func(fn func(*model.Model) error) error {
			s.r.out.begin("loading model "+dir, fmt.Sprintf("loading model %s for its test evaluation (%s)", dir, name))
			s.release()
			if err := s.r.replaceModel(dir); err != nil {
				return err
			}
			s.r.out.doing("test evaluation (" + name + ")")
			return fn(s.r.m)
		}
	}
	evals := []testEval{
		{"last", func(fn func(*model.Model) error) error { return fn(s.r.m) }},
		{"best", load("best", filepath.Join(s.r.dir, rundir.BestDir))},
	}
	if base {
		evals = append(evals, testEval{"base", load("base", s.modelSource())})
	}
	return evals
}

// linkModel makes dst (a directory being written) hold the model files of
// src, as hard links (copies where the file system has none).
func linkModel(src, dst string) error {
	files, err := model.SavedFiles(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := linkOrCopy(filepath.Join(src, f), filepath.Join(dst, f)); err != nil {
			return err
		}
	}
	return nil
}

// replaceWithLinks makes dir a model directory of links to src's model
// files: written as dir.tmp, then swapped in by renames. One that could not
// be written leaves no dir.tmp behind: where links fail it is a copy of a
// whole model, on the disk that may have filled.
func replaceWithLinks(src, dir string) (err error) {
	tmp, old := dir+".tmp", dir+".old"
	os.RemoveAll(tmp)
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := linkModel(src, tmp); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dir))
}

// linkOrCopy hard-links src to dst, or copies it where links fail (a file
// system without them), synced.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Sync(), out.Close())
}

// recoverSwap undoes what a crash in replaceWithLinks left for dir: the
// previous directory put back if the new one never took its place, the
// temporary ones removed.
func recoverSwap(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir + ".old"); err == nil {
			if err := os.Rename(dir+".old", dir); err != nil {
				return err
			}
		}
	}
	return errors.Join(os.RemoveAll(dir+".tmp"), os.RemoveAll(dir+".old"))
}
