package train

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// train.objective accuracy (MeZO's non-differentiable objective for
// classification): each variant's loss is minus the fraction of the
// mini-batch whose label, predicted as the test evaluation predicts it, is
// the gold one.

// accLabels are the classes of the classification tests: the demo's
// sentiment, as task.labels.
var accLabels = []string{"negative", "positive"}

// accBatch reads the demo's first n training examples as task (sst2, or
// classification on rows written from them) and writes them to a file
// Evaluate reads: the same examples.
func accBatch(t *testing.T, dir string, task data.Task, n int) ([]data.Example, string) {
	t.Helper()
	src := filepath.Join(dir, "data", "train.tsv")
	if task == data.Classification {
		src = demoRows(t, dir, "train", "acc", func(_ int, ex data.Example) map[string]any {
			return map[string]any{"text": ex.Sentence, "label": accLabels[ex.Label]}
		})
	}
	exs, _, err := data.ReadAll(src, task, data.ReadOptions{Strict: true, Own: ownTask(task, accLabels, ""), Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	if task == data.Classification {
		var rows []map[string]any
		for _, ex := range exs {
			rows = append(rows, map[string]any{"text": ex.Text, "label": accLabels[ex.Label]})
		}
		file := filepath.Join(dir, "data", "batch-acc.jsonl")
		writeJSONL(t, file, rows)
		return exs, file
	}
	var b strings.Builder
	b.WriteString("sentence\tlabel\n")
	for _, ex := range exs {
		fmt.Fprintf(&b, "%s\t%d\n", ex.Sentence, ex.Label)
	}
	file := filepath.Join(dir, "data", "batch-acc.tsv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return exs, file
}

// TestAccuracyObjectiveIsEvaluationsAccuracy checks the objective against
// the test evaluation, on SST-2 and on a classification of the user's: for
// θ0 (FZOO's clean variant) and two perturbed LoRA parameter sets, minus
// the loss of the objective is the accuracy (0-1) that Evaluate, the code
// behind meazo-eval and a run's test evaluation, gives the same examples
// with the same parameters saved as an adapter, exactly; the three differ,
// so the comparison says something; and eval.batch_size (5, splitting
// examples' candidates across forwards, or 16) does not change the losses
// on the CPU.
func TestAccuracyObjectiveIsEvaluationsAccuracy(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	m, tok := demoModel(t, dir)
	for _, task := range []data.Task{data.SST2, data.Classification} {
		t.Run(string(task), func(t *testing.T) {
			exs, file := accBatch(t, dir, task, 24)
			la := demoLoRA(t, m)
			rng := rand.New(rand.NewPCG(3, 4))
			perturbed := func(scale float32) [][]float32 { return perturbedParams(rng, la.Params(), scale) }
			base := perturbed(0.5) // θ0: a trained adapter's B is not 0
			plus, minus := perturbed(1.5), perturbed(1.5)
			enc := &data.Encoder{Tok: tok, DateString: tokenizer.DefaultDateString, Format: data.FormatChat}
			vs := []zo.Variant{{Group: zo.Clean, Params: base}, {Group: 0, Sign: 1, Params: plus}, {Group: 0, Sign: -1, Params: minus}}
			var losses []float64
			for _, batch := range []int{5, 16} { // 5: an example's two candidates in two forwards (classification)
				e := &evaluator{task: task, tok: tok, enc: enc, batchSize: batch, padID: tok.PadID(), log: io.Discard}
				obj := &accuracyObjective{m: m, a: la, eval: e}
				obj.setExamples(exs)
				got, err := obj.Evaluate(base, vs)
				if err != nil {
					t.Fatal(err)
				}
				if m.Adapter != nil {
					t.Error("the adapter is still attached after Evaluate")
				}
				// SST-2's labels are one token each here: one forward of
				// each example's prompt scores both (labelCandidates);
				// this classification's are not: a forward per candidate.
				seqs := 2 * len(exs)
				if task == data.SST2 {
					seqs = len(exs)
				}
				forwards := 3 * ((seqs + batch - 1) / batch)
				if obj.layerEvals() != forwards*m.NumLayers {
					t.Errorf("batch %d: layer evaluations %d, want %d (3 variants × %d forwards of %d sequences × %d layers)",
						batch, obj.layerEvals(), forwards*m.NumLayers, forwards/3, seqs, m.NumLayers)
				}
				if losses != nil && !slices.Equal(got, losses) {
					t.Errorf("eval.batch_size %d: losses %v, with 5 %v", batch, got, losses)
				}
				losses = got
			}
			for i, params := range [][][]float32{base, plus, minus} {
				adir := filepath.Join(dir, fmt.Sprintf("adapter-%s-%d", task, i))
				if err := la.Save(adir, params); err != nil {
					t.Fatal(err)
				}
				opt := EvalOptions{Adapter: adir, Task: string(task), Data: file, BatchSize: 5}
				if task == data.Classification {
					opt.Labels = accLabels
				}
				res, err := Evaluate(m, tok, opt)
				if err != nil {
					t.Fatal(err)
				}
				checkMinusAccuracy(t, i, losses[i], res["accuracy"])
			}
			if losses[0] == losses[1] && losses[1] == losses[2] || losses[0] == 0 || losses[0] == -1 {
				t.Errorf("losses %v: the parameters should predict differently, with an accuracy strictly between 0 and 1 at θ0", losses)
			}
		})
	}
}

// accRunSet is the settings of a short train.objective accuracy run on the
// demo's SST-2.
func accRunSet() []string {
	return []string{"train.objective=accuracy", "eval.batch_size=5", "eval.base=false", "task.max_validation=8",
		"task.max_test=20", "optimizer.name=zo-sgd", "optimizer.eps=0.5", "optimizer.lr=0.05",
		"train.eval_every=3", "train.checkpoint_every=2"}
}

// TestAccuracyObjectiveRunResumes trains a few steps with train.objective
// accuracy (LoRA on SST-2, FZOO grouped, prompt tuning, and LoRA on a
// classification of the user's), checks that metrics.jsonl's train losses
// are minus accuracies that moved the adapter while the validation stays a
// cross-entropy, and that a run stopped and resumed writes what the
// uninterrupted one does, bit for bit.
func TestAccuracyObjectiveRunResumes(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	rows := func(name string) string {
		return demoRows(t, dir, name, "acc", func(_ int, ex data.Example) map[string]any {
			return map[string]any{"text": ex.Sentence, "label": accLabels[ex.Label]}
		})
	}
	ownTrain, ownTest := rows("train"), rows("dev")
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"zo-sgd", nil},
		{"fzoo-grouped", []string{"optimizer.name=fzoo", "optimizer.q=2", "optimizer.lr=0.01", "adapter.grouped=true"}},
		{"prompt", []string{"adapter.kind=prompt", "adapter.virtual_tokens=2", "adapter.init_text=Say great or terrible.", "optimizer.eps=1"}},
		{"classification", []string{"task.name=classification", "task.train=" + ownTrain, "task.test=" + ownTest, "task.labels=[negative, positive]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(accRunSet(), tc.set...)
			whole := filepath.Join(dir, tc.name+"-whole")
			runAccuracy6(t, Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)})
			checkMinusMetricLines(t, whole, "an accuracy", func(l rundir.TrainLine) {
				// Minus a count of 8 (train.batch_size) over 8.
				if x := l.Losses[0] * 8; x != math.Round(x) {
					t.Errorf("step %d: loss %v is not minus a count of the batch's 8 examples over 8", l.Step, l.Losses[0])
				}
			})
			checkStoppedRunResumes(t, cfg, set, filepath.Join(dir, tc.name+"-cut"), whole, tc.name == "prompt")
		})
	}
}

// TestAccuracyObjectiveRefusals: train.objective accuracy is refused when
// the config is loaded for a task whose answers are generated (f1 takes
// squad and generation), for full-parameter training (pets: for anything
// but LoRA); it loads for sst2, classification and pets; and a
// resume of a text task's accuracy run may not change eval.batch_size
// (a pets run's may: TestPetsAccuracyObjectiveSettings), while
// eval.max_new_tokens, which it does not read, stays changeable.
func TestAccuracyObjectiveRefusals(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"train.objective=accuracy", "task.name=squad"}, "it takes task.name sst2, classification or pets, not squad, which generates its answers (train.objective f1 trains squad and generation"},
		{[]string{"train.objective=accuracy", "task.name=generation"}, "not generation, which generates its answers"},
		{[]string{"train.objective=accuracy", "task.name=xsum", "task.validation=" + cfg}, "not xsum"},
		{[]string{"train.objective=accuracy", "task.name=pets", "adapter.targets=[query, value]", "adapter.kind=full"}, "--set adapter.kind: full: task pets trains a LoRA adapter"},
		{[]string{"train.objective=accuracy", "adapter.kind=full"}, "--set train.objective: accuracy is not supported with adapter.kind full"},
		{[]string{"train.objective=acuracy"}, `train.objective: "acuracy": want loss, f1 or accuracy (did you mean "accuracy"?)`},
	} {
		_, err := Load(cfg, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one saying %q", tc.set, err, tc.want)
		}
	}
	for _, set := range [][]string{
		{"train.objective=accuracy", "adapter.grouped=true"},
		{"train.objective=accuracy", "adapter.kind=prompt"},
		{"train.objective=accuracy", "task.name=classification", "task.labels=[a, b]"},
		{"train.objective=accuracy", "task.name=pets", "adapter.targets=[query, value]"}, // vitObjective's accuracy
	} {
		if _, err := Load(cfg, set); err != nil {
			t.Errorf("--set %v: %v", set, err)
		}
	}

	out := filepath.Join(dir, "run")
	set := append(accRunSet(), "output.dir="+out, "train.steps=4")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := Run(Options{Resume: out, Overrides: []string{"eval.batch_size=4"}})
	if err == nil || !strings.Contains(err.Error(), "--set eval.batch_size: cannot change on resume of a train.objective accuracy run") {
		t.Errorf("resume --set eval.batch_size=4: error %v, want a refusal", err)
	}
	// What stays changeable is: the run goes on.
	if _, err := Run(Options{Resume: out, Overrides: []string{"train.log_every=1", "eval.max_new_tokens=8"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestAccuracyObjectiveDiverges: a perturbation that makes the model's
// arithmetic overflow (an ε far too large) ends a train.objective accuracy
// run as diverged, as a train.objective loss run, not failed with the
// scoring's "not finite" and a resume that would fail again.
func TestAccuracyObjectiveDiverges(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"lora", nil},
		{"fzoo", []string{"optimizer.name=fzoo", "optimizer.q=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			set := append(accRunSet(), "optimizer.eps=1e30", "output.dir="+out)
			requireDiverged(t, Options{ConfigPath: cfg, Overrides: append(set, tc.set...)})
		})
	}
}

// TestAccuracyTrainingSplitFitsAsTests: with train.objective accuracy a
// training example is kept only where every label candidate fits
// task.max_length, as a test example's must (a label longer than the gold
// one would put past the limit what the objective scores), and the log
// counts those dropped so; the kept examples come back with their
// sequences, in order.
func TestAccuracyTrainingSplitFitsAsTests(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	_, tok := demoModel(t, dir)
	labels := []string{"no", "great great great great great great great great"}
	own := ownTask(data.Classification, labels, "")
	file := demoRows(t, dir, "dev", "long", func(_ int, ex data.Example) map[string]any {
		return map[string]any{"text": ex.Sentence, "label": 0} // the short label: the training sequence fits
	})
	exs, _, err := data.ReadAll(file, data.Classification, data.ReadOptions{Strict: true, Own: own, Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	enc := &data.Encoder{Tok: tok, DateString: tokenizer.DefaultDateString, Format: data.FormatChat}
	var longest []int
	for _, ex := range exs {
		n, err := evalLength(ex, enc, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		longest = append(longest, n)
	}
	limit := slices.Sorted(slices.Values(longest))[len(longest)/2] // about half of them fit
	rule := lengthRule{max: limit, name: "task.max_length"}
	noStop := func(string) error { return nil }
	var log strings.Builder
	seqs, kept, err := encodeKept(exs, enc, rule, 0, 0, true, "train", &scoredAs{objective: ObjectiveAccuracy}, false, &log, noStop)
	if err != nil {
		t.Fatal(err)
	}
	var want []data.Example
	for i, ex := range exs {
		if longest[i] <= limit {
			want = append(want, ex)
		}
	}
	if len(want) == 0 || len(want) == len(exs) {
		t.Fatalf("the limit %d keeps %d of %d: the test says nothing", limit, len(want), len(exs))
	}
	if len(kept) != len(want) || len(seqs) != len(kept) {
		t.Fatalf("kept %d examples (%d sequences), want %d", len(kept), len(seqs), len(want))
	}
	for i, ex := range kept {
		e, err := encodeSequence(enc, ex)
		if err != nil {
			t.Fatal(err)
		}
		if ex.ID != want[i].ID || !slices.Equal(seqs[i].IDs, e.IDs) {
			t.Fatalf("kept example %d: %q, want %q with its sequence", i, ex.ID, want[i].ID)
		}
	}
	if msg := fmt.Sprintf("train split: dropped %d: ids", len(exs)-len(want)); !strings.Contains(log.String(), msg) ||
		!strings.Contains(log.String(), "as their longest label candidate for train.objective accuracy would exceed task.max_length") {
		t.Errorf("the log does not count the examples dropped for their label candidates (%q):\n%s", msg, log.String())
	}
}

// TestAccuracyStepFloor: a train.objective accuracy step scores one
// variant at a time, eval.batch_size sequences of label candidates a
// forward, so its floor is one such forward (at least one sequence per
// example of the batch: SST-2's candidates share one), not the 2q
// variants of the batched cross-entropy forward.
func TestAccuracyStepFloor(t *testing.T) {
	c := &model.Config{HiddenSize: 64, IntermediateSize: 256}
	train := []data.Sequence{{IDs: make([]int32, 40)}, {IDs: make([]int32, 90)}}
	cfg := Defaults()
	cfg.Train.Objective, cfg.Optimizer.Q = ObjectiveAccuracy, 50000
	for _, tc := range []struct{ batch, evalBatch, rows int }{{16, 4, 4}, {2, 16, 2}, {3, 5, 3}} {
		cfg.Train.BatchSize, cfg.Eval.BatchSize = tc.batch, tc.evalBatch
		f := textStepFloor(&cfg, train, c)
		if f.variants != 1 || f.rows != tc.rows || f.q != 0 || f.tokens != 90 {
			t.Errorf("batch %d, eval.batch_size %d: %d variants of %d rows of %d tokens (q %d), want 1 of %d of 90 (q not named)",
				tc.batch, tc.evalBatch, f.variants, f.rows, f.tokens, f.q, tc.rows)
		}
	}
}

// runAccuracy6 runs a train.objective accuracy run of 6 steps as opts say
// and checks that its log says what its training loss is, its progress
// lines name it -accuracy, it trains its 6 steps and tests an accuracy.
func runAccuracy6(t *testing.T, opts Options) {
	t.Helper()
	var log strings.Builder
	opts.Log = &log
	s, err := Run(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "the training loss is minus the fraction of the batch whose label is predicted right (train.objective accuracy)") ||
		!strings.Contains(log.String(), "/6 -accuracy ") {
		t.Errorf("the run's log does not say what its training loss is, or its progress lines do not name it -accuracy:\n%s", log.String())
	}
	if s.StepsDone != 6 || s.Diverged || s.BestValLoss == nil || !(*s.BestValLoss > 0) {
		t.Fatalf("summary: %+v", s)
	}
	if _, ok := s.Test["best"]["accuracy"]; !ok {
		t.Errorf("test metrics %v: no accuracy", s.Test)
	}
}

// checkMinusAccuracy checks variant i's loss against the evaluation's
// accuracy of the same parameters: minus it, in [-1, 0], 0 not -0.
func checkMinusAccuracy(t *testing.T, i int, loss, accuracy float64) {
	t.Helper()
	if -loss != accuracy {
		t.Errorf("variant %d: the objective's accuracy is %v, the evaluation's %v", i, -loss, accuracy)
	}
	if !(loss >= -1 && loss <= 0) || loss == 0 && math.Signbit(loss) {
		t.Errorf("variant %d: loss %v is not minus an accuracy in [-1, 0] (0, not -0)", i, loss)
	}
}
