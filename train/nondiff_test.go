package train

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// train.objective f1 (MeZO's non-differentiable objective): each variant's
// loss is minus the mean SQuAD F1 of the answers generated for the
// mini-batch as the test evaluation generates them.

// f1MaxNew is the generation cap of these tests (eval.max_new_tokens).
const f1MaxNew = 4

// f1Data writes a generation task on the demo's sentences (dir: WriteDemo's)
// whose completions the demo model's untrained answers partly match, so
// that F1 is neither always 0 nor always 1: the completion of row i is the
// base model's answer (i%3 == 0), its first word and "great" (i%3 == 1),
// or "terrible". It returns the training and test files.
func f1Data(t *testing.T, dir string) (train, test string) {
	t.Helper()
	m, tok := demoModel(t, dir)
	var paths []string
	for _, f := range []struct {
		name string
		n    int
	}{{"train", 96}, {"dev", 12}} {
		exs, _, err := data.ReadAll(filepath.Join(dir, "data", f.name+".tsv"), data.SST2, data.ReadOptions{Strict: true, Limit: f.n})
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]map[string]any, len(exs))
		for i, ex := range exs {
			rows[i] = map[string]any{"id": i, "prompt": "Review: " + ex.Sentence, "completion": "x"}
		}
		probe := filepath.Join(dir, "data", f.name+"-probe.jsonl")
		writeJSONL(t, probe, rows)
		var base []string
		if _, err := Evaluate(m, tok, EvalOptions{Task: "generation", Data: probe, MaxNewTokens: f1MaxNew, BatchSize: 16,
			OnPrediction: func(p Prediction) { base = append(base, p.Generated.Text) }}); err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			first, _, _ := strings.Cut(base[i], " ")
			switch i % 3 {
			case 0:
				rows[i]["completion"] = base[i]
			case 1:
				rows[i]["completion"] = first + " great"
			default:
				rows[i]["completion"] = "terrible"
			}
			if rows[i]["completion"] == "" {
				rows[i]["completion"] = "great"
			}
		}
		out := filepath.Join(dir, "data", f.name+"-f1.jsonl")
		writeJSONL(t, out, rows)
		paths = append(paths, out)
	}
	return paths[0], paths[1]
}

// TestF1ObjectiveIsEvaluationsF1 checks the objective against the test
// evaluation: for θ0 (FZOO's clean variant) and two perturbed LoRA
// parameter sets, minus the loss of the objective is the f1 metric (0-100,
// /100) that Evaluate, the code behind meazo-eval and a run's test
// evaluation, gives the same examples with the same parameters saved as an
// adapter, to float64 rounding; and the three differ, so the comparison
// says something.
func TestF1ObjectiveIsEvaluationsF1(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	trainFile, _ := f1Data(t, dir)
	m, tok := demoModel(t, dir)
	own := ownTask(data.Generation, nil, "")
	exs, _, err := data.ReadAll(trainFile, data.Generation, data.ReadOptions{Strict: true, Own: own, Limit: 12})
	if err != nil {
		t.Fatal(err)
	}
	la := demoLoRA(t, m)
	rng := rand.New(rand.NewPCG(3, 4))
	perturbed := func(scale float32) [][]float32 { return perturbedParams(rng, la.Params(), scale) }
	base := perturbed(0.3) // θ0: a trained adapter's B is not 0
	plus, minus := perturbed(0.5), perturbed(0.5)
	enc := &data.Encoder{Tok: tok, DateString: tokenizer.DefaultDateString, Format: data.FormatChat}
	const batch = 5 // eval.batch_size: the 12 examples in three generations, the last of 2
	e := &evaluator{task: data.Generation, tok: tok, enc: enc, batchSize: batch, maxNewTokens: f1MaxNew,
		stopIDs: StopIDs(tok, m), padID: tok.PadID(), log: io.Discard}
	obj := &f1Objective{m: m, a: la, eval: e, batch: exs}
	losses, err := obj.Evaluate(base, []zo.Variant{{Group: zo.Clean, Params: base}, {Group: 0, Sign: 1, Params: plus}, {Group: 0, Sign: -1, Params: minus}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Adapter != nil {
		t.Error("the adapter is still attached after Evaluate")
	}
	if want := 3 * 3 * f1MaxNew * m.NumLayers; obj.layerEvals() <= 0 || obj.layerEvals() > want {
		t.Errorf("layer evaluations %d, want in (0, %d] (3 variants × 3 generations × at most %d forwards × %d layers)", obj.layerEvals(), want, f1MaxNew, m.NumLayers)
	}
	// The batch as a file of its own, read by Evaluate.
	var rows []map[string]any
	for _, ex := range exs {
		rows = append(rows, map[string]any{"id": ex.ID, "prompt": ex.Prompt, "completion": ex.Completion})
	}
	file := filepath.Join(dir, "data", "batch.jsonl")
	writeJSONL(t, file, rows)
	for i, params := range [][][]float32{base, plus, minus} {
		adir := filepath.Join(dir, "adapter-"+string(rune('a'+i)))
		if err := la.Save(adir, params); err != nil {
			t.Fatal(err)
		}
		res, err := Evaluate(m, tok, EvalOptions{Adapter: adir, Task: "generation", Data: file, BatchSize: batch, MaxNewTokens: f1MaxNew})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := -100*losses[i], res["f1"]; math.Abs(got-want) > 1e-9 {
			t.Errorf("variant %d: the objective's F1 is %v, the evaluation's %v", i, got, want)
		}
		if !(losses[i] >= -1 && losses[i] <= 0) {
			t.Errorf("variant %d: loss %v outside [-1, 0]", i, losses[i])
		}
	}
	if losses[0] == losses[1] && losses[1] == losses[2] || losses[0] == 0 || losses[0] == -1 {
		t.Errorf("losses %v: the parameters should answer differently, with an F1 strictly between 0 and 1 at θ0", losses)
	}
}

// f1RunSet is the settings of a short train.objective f1 run on f1Data's
// files.
func f1RunSet(train, test string) []string {
	return []string{"task.name=generation", "task.train=" + train, "task.test=" + test, "train.objective=f1",
		"eval.max_new_tokens=4", "eval.batch_size=5", "eval.base=false", "task.max_validation=8",
		"optimizer.name=zo-sgd", "optimizer.eps=0.3", "optimizer.lr=0.05",
		"train.eval_every=3", "train.checkpoint_every=2"}
}

// TestF1ObjectiveRunResumes trains a few steps with train.objective f1
// (LoRA, and FZOO, whose clean variant is θ0), checks that metrics.jsonl's
// train losses are minus F1s that moved the adapter while the validation
// stays a cross-entropy, and that a run stopped and resumed writes what the
// uninterrupted one does, bit for bit.
func TestF1ObjectiveRunResumes(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	train, test := f1Data(t, dir)
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"zo-sgd", nil},
		{"fzoo-grouped", []string{"optimizer.name=fzoo", "optimizer.q=2", "optimizer.lr=0.01", "adapter.grouped=true"}},
		{"prompt", []string{"adapter.kind=prompt", "adapter.virtual_tokens=2", "adapter.init_text=Say great or terrible.", "optimizer.eps=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(f1RunSet(train, test), tc.set...)
			whole := filepath.Join(dir, tc.name+"-whole")
			var log strings.Builder
			s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "the training loss is minus the mean F1 (0-1) of the answers generated for the batch (train.objective f1, up to 4 new tokens)") ||
				!strings.Contains(log.String(), "/6 -F1 ") {
				t.Errorf("the run's log does not say what its training loss is, or its progress lines do not name it -F1:\n%s", log.String())
			}
			if s.StepsDone != 6 || s.Diverged || s.BestValLoss == nil || !(*s.BestValLoss > 0) {
				t.Fatalf("summary: %+v", s)
			}
			if _, ok := s.Test["best"]["f1"]; !ok {
				t.Errorf("test metrics %v: no f1", s.Test)
			}
			checkMinusMetricLines(t, whole, "an F1", nil)
			checkStoppedRunResumes(t, cfg, set, filepath.Join(dir, tc.name+"-cut"), whole, tc.name == "prompt")
		})
	}
}

// demoLoRA is a rank-4 LoRA adapter on m's q and v projections (seed 1),
// as the objectives' tests attach it.
func demoLoRA(t *testing.T, m *model.Model) *loraAdapter {
	t.Helper()
	a, err := lora.New(m, lora.Options{R: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &loraAdapter{a: a, m: m}
}

// perturbedParams is a copy of params with scale times a standard normal
// draw of rng added to each value: a variant's parameters, or a trained θ0.
func perturbedParams(rng *rand.Rand, params [][]float32, scale float32) [][]float32 {
	var out [][]float32
	for _, g := range params {
		p := slices.Clone(g)
		for i := range p {
			p[i] += scale * float32(rng.NormFloat64())
		}
		out = append(out, p)
	}
	return out
}

// checkMinusMetricLines checks the train lines of a run's metrics.jsonl
// (in whole) under a non-differentiable objective: every loss is minus a
// metric in [0, 1] (what: "an F1"; a metric of 0 a loss of 0, not -0),
// some step's variants scored differently and the adapter moved; each, if
// not nil, checks a line further.
func checkMinusMetricLines(t *testing.T, whole, what string, each func(l rundir.TrainLine)) {
	t.Helper()
	moved, varied := false, false
	for _, line := range readLines(t, filepath.Join(whole, "metrics.jsonl")) {
		var l rundir.TrainLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind != rundir.KindTrain {
			continue
		}
		for _, x := range append([]float64{l.Loss}, l.Losses...) {
			if !(x >= -1 && x <= 0) || x == 0 && math.Signbit(x) {
				t.Fatalf("step %d: loss %v is not minus %s (in [-1, 0]; 0, not -0): %s", l.Step, x, what, line)
			}
		}
		if each != nil {
			each(l)
		}
		varied = varied || slices.ContainsFunc(l.Losses, func(x float64) bool { return x != l.Losses[0] })
		moved = moved || l.UpdateNorm > 0
	}
	if !varied || !moved {
		t.Errorf("no step's variants scored differently (%v) or moved the adapter (%v): the run did not train on %s", varied, moved, what)
	}
}

// checkStoppedRunResumes runs the config with set into cut, stopped after
// 5 steps (the last checkpoint before is step 4: step 5 runs again), resumes
// it, and requires the run whole's result: metrics.jsonl alone where
// logsOnly (prompt tuning), else requireSameRun's.
func checkStoppedRunResumes(t *testing.T, cfg string, set []string, cut, whole string, logsOnly bool) {
	t.Helper()
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), StopAfter: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: cut}); err != nil {
		t.Fatal(err)
	}
	if logsOnly {
		a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(cut, "metrics.jsonl"))
		if !slices.Equal(a, b) {
			t.Fatalf("metrics.jsonl differs after a resume:\n%v\n%v", a, b)
		}
		return
	}
	requireSameRun(t, whole, cut)
}

// TestF1ObjectiveRefusals: train.objective f1 is refused when the config
// is loaded for a task it cannot score, for full-parameter training and
// for a value it does not know; and a resume of an f1 run may not change
// the generation its loss depends on.
func TestF1ObjectiveRefusals(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"train.objective=f1"}, "it takes task.name squad or generation, not sst2 (train.objective accuracy trains it on its predicted labels, loss on the cross-entropy)"},
		{[]string{"train.objective=f1", "task.name=xsum", "task.validation=" + cfg}, "it takes task.name squad or generation, not xsum"},
		{[]string{"train.objective=f1", "task.name=classification", "task.labels=[a, b]"}, "not classification"},
		{[]string{"train.objective=f1", "task.name=pets", "adapter.targets=[query, value]"}, "not pets"},
		{[]string{"train.objective=f1", "task.name=squad", "adapter.kind=full"}, "not supported with adapter.kind full: generation with perturbed full weights is not built"},
		{[]string{"train.objective=F1"}, `train.objective: "F1": want loss, f1 or accuracy (did you mean "f1"?)`},
	} {
		_, err := Load(cfg, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one saying %q", tc.set, err, tc.want)
		}
	}
	// Grouped estimation generates each variant whole (no prefix caching): allowed.
	if _, err := Load(cfg, []string{"train.objective=f1", "task.name=squad", "adapter.grouped=true"}); err != nil {
		t.Errorf("grouped f1: %v", err)
	}

	train, test := f1Data(t, dir)
	out := filepath.Join(dir, "run")
	set := append(f1RunSet(train, test), "output.dir="+out, "train.steps=4")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"eval.max_new_tokens=8", "eval.batch_size=4"} {
		_, err := Run(Options{Resume: out, Overrides: []string{s}})
		key, _, _ := strings.Cut(s, "=")
		if err == nil || !strings.Contains(err.Error(), "--set "+key+": cannot change on resume of a train.objective f1 run") {
			t.Errorf("resume --set %s: error %v, want a refusal", s, err)
		}
	}
	// What stays changeable is: the run goes on.
	if _, err := Run(Options{Resume: out, Overrides: []string{"train.log_every=1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestF1ObjectiveDiverges: a perturbation that makes the model's
// arithmetic overflow (an ε far too large) ends a train.objective f1 run
// as diverged, as it ends a train.objective loss run (its cross-entropy is
// not finite), not failed with the generation's "logits are not finite"
// and a resume that would fail at the same variant again.
func TestF1ObjectiveDiverges(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	train, test := f1Data(t, dir)
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"loss", []string{"train.objective=loss"}},
		{"f1", nil},
		{"f1-fzoo", []string{"optimizer.name=fzoo", "optimizer.q=2"}},
		{"f1-prompt", []string{"adapter.kind=prompt", "adapter.virtual_tokens=2", "adapter.init_text=Say great or terrible.", "optimizer.eps=1e38"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			set := append(f1RunSet(train, test), "optimizer.eps=1e30", "output.dir="+out) // (the prompt's virtual tokens are normalised: 1e38)
			requireDiverged(t, Options{ConfigPath: cfg, Overrides: append(set, tc.set...)})
		})
	}
}

// TestF1ResumeSameCap: an f1 run's eval.max_new_tokens set on resume to
// the cap it already had (0 is the task's default) changes nothing, so it
// is not refused; another cap is.
func TestF1ResumeSameCap(t *testing.T) {
	cfg := Defaults()
	cfg.Task.Name, cfg.Train.Objective = "squad", ObjectiveF1
	def := defaultMaxNewTokens(data.SQuAD)
	for _, c := range []struct {
		old, new int
		refused  bool
	}{{0, def, false}, {def, 0, false}, {0, def + 1, true}, {4, 8, true}} {
		err := checkResumeChanges([]ConfigChange{{Key: "eval.max_new_tokens", Old: c.old, New: c.new}}, &cfg)
		if (err != nil) != c.refused {
			t.Errorf("eval.max_new_tokens %d -> %d: %v, want refused %v", c.old, c.new, err, c.refused)
		}
	}
}

// requireDiverged runs as opts say and requires a run that ends diverged
// (a result, not an error).
func requireDiverged(t *testing.T, opts Options) {
	t.Helper()
	s, err := Run(opts)
	if err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	if !s.Diverged || s.Status != "diverged" {
		t.Errorf("summary %+v: want the run diverged", s)
	}
}
