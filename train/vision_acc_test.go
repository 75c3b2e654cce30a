package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/zo"
)

// train.objective accuracy on the image task (pets): each variant's loss
// is minus the fraction of the mini-batch whose class, predicted as the
// test evaluation predicts it (the highest logit), is its label.

// TestPetsAccuracyObjectiveIsEvaluationsAccuracy checks the image
// objective against the test evaluation: for θ0 (FZOO's clean variant) and
// two perturbed parameter sets of LoRA and the classifier, over a
// mini-batch of the test file's 12 images, minus the loss of the objective
// is the accuracy EvaluateImages (meazo-eval's and a run's test
// evaluation) gives the same images with the same parameters saved as an
// adapter, exactly, though the evaluation runs them 5 to a batch; θ0
// predicts the ViT's own classes, which label half the file (0.5); the
// three differ. A variant whose logits are not finite scores NaN, and so
// do the variants after it, with no error: the run diverges.
func TestPetsAccuracyObjectiveIsEvaluationsAccuracy(t *testing.T) {
	test, _, _ := halfOwnLabels(t)
	m, proc := tinyViT(t)
	defer m.Free()
	rows, err := data.ReadImageParquet(test, m.Config.NumLabels)
	if err != nil {
		t.Fatal(err)
	}
	src := imageSource{key: "test", path: test, rows: rows, index: firstRows(len(rows))}
	imgs, err := src.decode(proc, m.Config.ImageSize, 1, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	px, labels, err := pixels(proc, imgs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.NewViT(m, lora.Options{R: 4, Alpha: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	perturbed := func(scale float32) [][]float32 { return perturbedParams(rng, a.Params(), scale) }
	base := a.Params() // fresh: LoRA's B is 0 and the classifier the ViT's own
	plus, minus := perturbed(0.05), perturbed(0.2)
	obj := &vitObjective{vit: m, adapter: a, pixels: px, labels: labels, accuracy: true}
	vs := []zo.Variant{{Group: zo.Clean, Params: base}, {Group: zo.AllGroups, Sign: 1, Params: plus}, {Group: zo.AllGroups, Sign: -1, Params: minus}}
	losses, err := obj.Evaluate(base, vs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Adapter != nil {
		t.Error("the adapter is still attached after Evaluate")
	}
	if want := 3 * m.Config.NumLayers; obj.layerEvals() != want {
		t.Errorf("layer evaluations %d, want %d (3 variants × %d layers)", obj.layerEvals(), want, m.Config.NumLayers)
	}
	for i, params := range [][][]float32{base, plus, minus} {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("adapter-%d", i))
		if err := a.SaveParams(dir, params); err != nil {
			t.Fatal(err)
		}
		res, err := EvaluateImages(m, proc, EvalOptions{Adapter: dir, Task: string(data.Pets), Data: test, BatchSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		checkMinusAccuracy(t, i, losses[i], res["accuracy"])
	}
	if losses[0] != -0.5 || losses[0] == losses[1] && losses[1] == losses[2] {
		t.Errorf("losses %v: want -0.5 at θ0 (the ViT's own classes label half the images) and the parameters predicting differently", losses)
	}

	broken := perturbed(0)
	broken[0][0] = float32(math.NaN())
	got, err := obj.Evaluate(base, []zo.Variant{{Group: zo.Clean, Params: base}, {Group: zo.AllGroups, Sign: 1, Params: broken}, {Group: zo.AllGroups, Sign: -1, Params: plus}})
	if err != nil || len(got) != 3 || got[0] != losses[0] || !math.IsNaN(got[1]) || !math.IsNaN(got[2]) {
		t.Errorf("a variant with a NaN parameter: losses %v, error %v; want [%v NaN NaN] and no error", got, err, losses[0])
	}
}

// petsAccSet is the settings of a short train.objective accuracy run on
// the Pets file train (without output.dir).
func petsAccSet(train string, more ...string) []string {
	set := slices.DeleteFunc(petsSet(""), func(s string) bool { return strings.HasPrefix(s, "output.dir=") })
	return append(set, append([]string{"task.train=" + train, "train.objective=accuracy", "optimizer.name=zo-sgd", "optimizer.eps=0.02",
		"optimizer.lr=0.01", "train.checkpoint_every=2", "train.log_every=1"}, more...)...)
}

// TestPetsAccuracyObjectiveRunResumes trains a few steps of pets with
// train.objective accuracy (ZO-SGD, and FZOO grouped) on a training file
// half labelled with the ViT's own classes, checks that metrics.jsonl's
// train losses are minus accuracies (multiples of 1/4, the batch) that
// moved the adapter while the validation stays a cross-entropy, that the
// log says so and its progress lines name -accuracy, and that a run
// stopped and resumed writes what the uninterrupted one does, bit for bit.
func TestPetsAccuracyObjectiveRunResumes(t *testing.T) {
	root := t.TempDir()
	train, _, _ := halfOwnLabelsOf(t, petsTrain)
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"zo-sgd", nil},
		{"fzoo-grouped", []string{"optimizer.name=fzoo", "optimizer.q=2", "adapter.grouped=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := petsAccSet(train, tc.set...)
			whole := filepath.Join(root, tc.name+"-whole")
			runAccuracy6(t, Options{Overrides: append(slices.Clone(set), "output.dir="+whole)})
			checkMinusMetricLines(t, whole, "an accuracy", func(l rundir.TrainLine) {
				for _, x := range l.Losses {
					if x*4 != math.Round(x*4) {
						t.Errorf("step %d: loss %v is not minus a count of the batch's 4 images over 4", l.Step, x)
					}
				}
			})
			checkStoppedRunResumes(t, "", set, filepath.Join(root, tc.name+"-cut"), whole, false)
		})
	}
}

// TestPetsAccuracyObjectiveDiverges: a perturbation that makes the ViT's
// arithmetic overflow (an ε far too large: logits that are not finite)
// ends a pets train.objective accuracy run as diverged, as a
// train.objective loss run, not failed with the evaluation's "not finite".
func TestPetsAccuracyObjectiveDiverges(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"zo-sgd", nil},
		{"fzoo", []string{"optimizer.name=fzoo", "optimizer.q=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(petsAccSet(petsTrain, tc.set...), "optimizer.eps=1e30", "output.dir="+filepath.Join(root, tc.name))
			requireDiverged(t, Options{Overrides: set})
		})
	}
}

// TestPetsAccuracyObjectiveSettings: train.objective accuracy loads for
// pets (adapter.kind full stays refused: TestAccuracyObjectiveRefusals);
// a resume of a pets accuracy run may change eval.batch_size, which its
// objective does not read (the mini-batch is one forward, as with loss),
// unlike a text task's.
func TestPetsAccuracyObjectiveSettings(t *testing.T) {
	root := t.TempDir()
	set := append(petsAccSet(petsTrain), "output.dir="+filepath.Join(root, "cfg"))
	if _, err := Load("", set); err != nil {
		t.Errorf("pets with train.objective accuracy: %v", err)
	}
	out := filepath.Join(root, "run")
	if _, err := Run(Options{Overrides: append(slices.Clone(set), "output.dir="+out, "train.steps=4"), StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	s, err := Run(Options{Resume: out, Overrides: []string{"eval.batch_size=4"}})
	if err != nil {
		t.Fatalf("resume --set eval.batch_size=4: %v", err)
	}
	if s.StepsDone != 4 {
		t.Errorf("the resumed run did %d steps, want 4", s.StepsDone)
	}
}
