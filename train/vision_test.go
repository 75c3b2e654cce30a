package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/zo"
)

// The image task's tests run the tiny ViT fixture (model/testdata/vit:
// 64×64 images, 3 layers of width 64, 37 classes) on a tiny Pets-like
// dataset (testdata/pets, written by scripts/makepets: 40 training and 12
// test images of a few breeds, PNG and JPEG, in the HF hub's schema).
const (
	vitTiny   = "../model/testdata/vit/vit-tiny"
	petsTrain = "testdata/pets/train.parquet"
	petsTest  = "testdata/pets/test.parquet"
)

// petsSet is a short pets run's settings, writing into out.
func petsSet(out string, more ...string) []string {
	return append([]string{"model.path=" + vitTiny, "task.name=pets", "task.train=" + petsTrain, "task.test=" + petsTest,
		"adapter.targets=[query,value]", "adapter.r=4", "adapter.alpha=8", "optimizer.lr=1e-3", "optimizer.eps=1e-3",
		"train.steps=6", "train.batch_size=4", "train.eval_every=3", "train.checkpoint_every=3", "eval.batch_size=5",
		"output.dir=" + out}, more...)
}

// trainLosses reads the training losses of a run's metrics.jsonl.
func trainLosses(t *testing.T, dir string) []float64 {
	t.Helper()
	var out []float64
	for _, line := range readLines(t, filepath.Join(dir, "metrics.jsonl")) {
		var rec struct {
			Kind string
			Loss float64
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "train" {
			out = append(out, rec.Loss)
		}
	}
	return out
}

// TestPetsTrainsWithEveryOptimizer: each optimizer (and MEAZO grouped, one
// group per layer and the classifier's) trains the ViT's LoRA and
// classifier through the same engine: the losses are finite and move,
// the validation loss is logged, the test accuracy of the best, the last
// adapter and the base model is reported, the adapter is PEFT's.
func TestPetsTrainsWithEveryOptimizer(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo", "meazo-grouped"} {
		t.Run(name, func(t *testing.T) {
			opt, grouped := strings.CutSuffix(name, "-grouped")
			q := "1"
			if opt == "fzoo" {
				q = "2"
			}
			out := filepath.Join(root, name)
			s, err := Run(Options{Overrides: petsSet(out, "optimizer.name="+opt, "optimizer.q="+q, "eval.base=true", "train.steps=3", fmt.Sprint("adapter.grouped=", grouped))})
			if err != nil {
				t.Fatal(err)
			}
			// LoRA r 4 on query and value of 3 layers of width 64, and the 37×64 classifier with its bias.
			if want := 3*2*2*4*64 + 37*64 + 37; s.TrainableParams != want || s.StepsDone != 3 || s.Diverged {
				t.Fatalf("summary: %d trainable (want %d), %d steps, diverged %v", s.TrainableParams, want, s.StepsDone, s.Diverged)
			}
			losses := trainLosses(t, out)
			if len(losses) != 3 || slices.ContainsFunc(losses, func(l float64) bool { return math.IsNaN(l) || math.IsInf(l, 0) || l <= 0 }) {
				t.Fatalf("training losses %v: want 3 finite positive values", losses)
			}
			if slices.Min(losses) == slices.Max(losses) {
				t.Errorf("training losses %v do not change", losses)
			}
			for _, which := range []string{"best", "last", "base"} {
				acc, ok := s.Test[which]["accuracy"]
				if !ok || acc < 0 || acc > 1 || acc*12 != math.Round(acc*12) {
					t.Errorf("test accuracy of %s: %v (%v), want k/12 of the 12 test images", which, acc, ok)
				}
			}
			if grouped && s.StateBytes != 8*4 {
				t.Errorf("grouped MEAZO keeps %d bytes, want one float64 for each of the 3 layers and the classifier", s.StateBytes)
			}
			if s.BestValLoss == nil || s.LastValLoss == nil {
				t.Errorf("no validation loss in the summary: %+v", s)
			}
			b, err := os.ReadFile(filepath.Join(out, "best", "adapter_config.json"))
			if err != nil || !strings.Contains(string(b), `"classifier"`) || !strings.Contains(string(b), `"query"`) {
				t.Errorf("best/adapter_config.json: %s %v; want PEFT's LoRA on query/value with the classifier in modules_to_save", b, err)
			}
		})
	}
}

// TestPetsResumeIsBitIdentical: a pets run stopped after 4 steps and
// resumed writes what the uninterrupted run does, metrics, adapters and
// optimizer state, with MEAZO and with ZO-Adam (a state per parameter);
// and the same run on 1 and 2 threads computes the same numbers.
func TestPetsResumeIsBitIdentical(t *testing.T) {
	root := t.TempDir()
	for _, opt := range []string{"meazo", "zo-adam"} {
		t.Run(opt, func(t *testing.T) {
			whole := filepath.Join(root, opt+"-whole")
			if _, err := Run(Options{Overrides: petsSet(whole, "optimizer.name="+opt, "train.threads=1")}); err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(root, opt+"-cut")
			// The last checkpoint before the stop is step 3's: step 4 is logged, cut off, and run again.
			if _, err := Run(Options{Overrides: petsSet(cut, "optimizer.name="+opt, "train.threads=1"), StopAfter: 4}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(Options{Resume: cut}); err != nil {
				t.Fatal(err)
			}
			requireSameRun(t, whole, cut)
			if readSummary(t, cut).Test["best"]["accuracy"] != readSummary(t, whole).Test["best"]["accuracy"] {
				t.Error("the resumed run's test accuracy differs")
			}
			two := filepath.Join(root, opt+"-threads2")
			if _, err := Run(Options{Overrides: petsSet(two, "optimizer.name="+opt, "train.threads=2")}); err != nil {
				t.Fatal(err)
			}
			requireSameRun(t, whole, two)
		})
	}
}

// TestPetsFromViTModel: a ViTModel checkpoint (in21k's layout: no
// classifier, a pooler) trains with a fresh classifier drawn from
// train.seed: the same seed starts from the same loss, another from
// another.
func TestPetsFromViTModel(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "vit-in21k-like")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	fixture.WriteViTModel(t, vitTiny, base)
	first := map[string]float64{}
	for _, run := range []struct{ name, seed string }{{"a", "1"}, {"b", "1"}, {"c", "2"}} {
		out := filepath.Join(dir, run.name)
		if _, err := Run(Options{Overrides: petsSet(out, "model.path="+base, "train.seed="+run.seed, "train.steps=1", "eval.skip=true")}); err != nil {
			t.Fatal(err)
		}
		first[run.name] = trainLosses(t, out)[0]
	}
	if first["a"] != first["b"] || first["a"] == first["c"] {
		t.Errorf("first losses %v: want seeds 1 and 1 equal, seed 2 other", first)
	}
}

// TestPetsBadInput: each kind of bad input is an error that names what and
// where, before any step: never a panic.
func TestPetsBadInput(t *testing.T) {
	dir := t.TempDir()
	rows, err := parquet.ReadFile[petsRow](petsTrain)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, rows any) string {
		p := filepath.Join(dir, name)
		var err error
		switch r := rows.(type) {
		case []petsRow:
			err = parquet.WriteFile(p, r)
		case []noLabelRow:
			err = parquet.WriteFile(p, r)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	corrupt := slices.Clone(rows)
	corrupt[7].Image.Bytes = corrupt[7].Image.Bytes[:20] // a PNG cut short
	label := slices.Clone(rows)
	label[3].Label = 37
	var noLabel []noLabelRow
	for _, r := range rows {
		noLabel = append(noLabel, noLabelRow{Image: r.Image, ImageID: r.ImageID})
	}
	tenClasses := filepath.Join(dir, "ten-classes")
	os.Mkdir(tenClasses, 0o755)
	for _, f := range []string{"model.safetensors", "preprocessor_config.json", "config.json"} {
		b, _ := os.ReadFile(filepath.Join(vitTiny, f))
		if f == "config.json" {
			var cfg map[string]any
			json.Unmarshal(b, &cfg)
			id2label := map[string]string{}
			for i := range 10 {
				id2label[string(rune('0'+i))] = "breed"
			}
			cfg["id2label"], cfg["label2id"] = id2label, nil
			b, _ = json.Marshal(cfg)
		}
		os.WriteFile(filepath.Join(tenClasses, f), b, 0o644)
	}
	noProcessor := filepath.Join(dir, "no-processor")
	os.Mkdir(noProcessor, 0o755)
	for _, f := range []string{"model.safetensors", "config.json"} {
		b, _ := os.ReadFile(filepath.Join(vitTiny, f))
		os.WriteFile(filepath.Join(noProcessor, f), b, 0o644)
	}
	emptyProcessor := filepath.Join(dir, "empty-processor") // a download cut off before its first byte
	os.Mkdir(emptyProcessor, 0o755)
	for _, f := range []string{"model.safetensors", "config.json", "preprocessor_config.json"} {
		b, _ := os.ReadFile(filepath.Join(vitTiny, f))
		if f == "preprocessor_config.json" {
			b = nil
		}
		os.WriteFile(filepath.Join(emptyProcessor, f), b, 0o644)
	}
	// A preprocessor_config.json whose resize is not the model's image_size
	// is refused before any image is decoded: resized to 32768×32768 first,
	// each image took 3 GiB and more (a 2-thread run was killed at 24 GiB).
	hugeResize := filepath.Join(dir, "huge-resize")
	os.Mkdir(hugeResize, 0o755)
	for _, f := range []string{"model.safetensors", "config.json"} {
		b, _ := os.ReadFile(filepath.Join(vitTiny, f))
		os.WriteFile(filepath.Join(hugeResize, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(hugeResize, "preprocessor_config.json"), []byte(`{"image_processor_type": "ViTImageProcessor", "size": 32768}`), 0o644)
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"preprocessor size not the model's", []string{"model.path=" + hugeResize},
			[]string{"huge-resize", "preprocessor_config.json", "32768×32768", "64×64"}},
		{"no preprocessor config", []string{"model.path=" + noProcessor}, []string{"no preprocessor_config.json", "nothing was written"}},
		{"empty preprocessor config", []string{"model.path=" + emptyProcessor}, []string{"preprocessor_config.json is there but empty (an interrupted download?)", "nothing was written"}},
		{"corrupt image", []string{"task.train=" + write("corrupt.parquet", corrupt)}, []string{"corrupt.parquet", "row 7", "breed"}},
		{"label out of range", []string{"task.train=" + write("label.parquet", label)}, []string{"label.parquet", "row 3", "label 37"}},
		{"missing column", []string{"task.train=" + write("nolabel.parquet", noLabel)}, []string{"nolabel.parquet", `column "label" is missing`}},
		{"classes of the model", []string{"model.path=" + tenClasses}, []string{"10 classes", "the task has 37"}},
		{"decoder targets", []string{"adapter.targets=[q_proj]"}, []string{"adapter.targets", "query"}},
		{"the classifier as a target", []string{"adapter.targets=[query, classifier]"}, []string{"adapter.targets: [query classifier]", "dense", "all-linear only alone"}},
		{"all-linear with another", []string{"adapter.targets=[all-linear, query]"}, []string{"adapter.targets: [all-linear query]", "all-linear only alone"}},
		{"prompt tuning", []string{"adapter.kind=prompt"}, []string{"--set adapter.kind: prompt: task pets trains a LoRA adapter", "lora"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(Options{Overrides: petsSet(filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-")), tc.set...)})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v; want one containing %q", err, w)
				}
			}
		})
	}
}

// petsRow is a row of timm/oxford-iiit-pet's Parquet files.
type petsRow = data.HubImageRow

// noLabelRow is a row of a file without the label column.
type noLabelRow struct {
	Image   data.HubImage `parquet:"image"`
	ImageID string        `parquet:"image_id"`
}

// halfOwnLabels writes a Pets test file of testdata/pets/test.parquet's
// images whose first half is labelled with the tiny ViT's own predictions
// (own, made here image by image) and the second half with another class,
// and returns its path and rows.
func halfOwnLabels(t *testing.T) (string, []petsRow, []int) {
	t.Helper()
	return halfOwnLabelsOf(t, petsTest)
}

// halfOwnLabelsOf is halfOwnLabels of the images of the Pets file src.
func halfOwnLabelsOf(t *testing.T, src string) (string, []petsRow, []int) {
	t.Helper()
	rows, err := parquet.ReadFile[petsRow](src)
	if err != nil {
		t.Fatal(err)
	}
	m, proc := tinyViT(t)
	defer m.Free()
	own := make([]int, len(rows))
	for i := range rows {
		px, err := proc.File(rows[i].Image.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Logits(px, 1)
		if err != nil {
			t.Fatal(err)
		}
		pred := 0
		for c, l := range logits {
			if l > logits[pred] {
				pred = c
			}
		}
		rows[i].Label, own[i] = int64(pred), pred
		if i >= len(rows)/2 {
			rows[i].Label = int64((pred + 1) % data.PetsClasses)
		}
	}
	test := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := parquet.WriteFile(test, rows); err != nil {
		t.Fatal(err)
	}
	return test, rows, own
}

// TestPetsAccuracy: the accuracy a run reports is the one of the model's
// own predictions, made independently here (imageproc on each file's bytes,
// one image at a time): a test file whose first half is labelled with the
// base model's predictions and its second half with another class scores
// the base model at exactly 50%.
func TestPetsAccuracy(t *testing.T) {
	test, rows, own := halfOwnLabels(t)
	run := filepath.Join(t.TempDir(), "run")
	s, err := Run(Options{Overrides: petsSet(run, "task.test="+test, "eval.base=true", "train.steps=1")})
	if err != nil {
		t.Fatal(err)
	}
	if acc := s.Test["base"]["accuracy"]; acc != 0.5 {
		t.Errorf("the base model's accuracy is %v; its own predictions on half the images give 0.5", acc)
	}
	// Its answers, image by image (eval.predictions).
	checkRunAnswers(t, run, s)
	for i, line := range strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(run, "predictions_base.jsonl")), "\n"), "\n") {
		var p Prediction
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if p.Image == nil || *p.Image != i || p.Labelled == nil || p.Predicted != own[i] || p.Gold != int(rows[i].Label) || p.Correct != (i < len(rows)/2) {
			t.Errorf("the base model's answer on image %d: %s; it predicts %d, the label is %d", i, line, own[i], rows[i].Label)
		}
	}
}

// uploadCounter counts a backend's uploads (FromHost) by their length.
type uploadCounter struct {
	tensor.Backend
	sizes map[int]int
}

func (u *uploadCounter) FromHost(src []float32) tensor.Buf {
	u.sizes[len(src)]++
	return u.Backend.FromHost(src)
}

// TestViTObjective: the exported image objective (meazo-bench vitstep's)
// gives each variant the loss of the ViT with the adapter over that
// variant's parameters, bit for bit, from one upload of the images for the
// step's variants; SetImages on a decoder's objective is an error.
func TestViTObjective(t *testing.T) {
	cpu, err := backends.Open("cpu", 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	be := &uploadCounter{Backend: cpu, sizes: map[int]int{}}
	m, err := model.LoadViT(vitTiny, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	a, err := lora.NewViT(m, lora.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := 2
	px := make([]float32, n*m.Config.PixelsPerImage())
	for i := range px {
		px[i] = float32(i%11)/11 - 0.5
	}
	labels := []int{4, 30}
	obj := NewViTObjective(m, a)
	if err := obj.SetImages(px, labels); err != nil {
		t.Fatal(err)
	}
	shifted := [][]float32{slices.Clone(a.Params()[0])}
	for i := range shifted[0] {
		shifted[0][i] += 0.01 * float32(i%5-2)
	}
	clear(be.sizes)
	got, err := obj.Evaluate(a.Params(), []zo.Variant{{Group: zo.Clean, Params: a.Params()}, {Group: zo.AllGroups, Sign: 1, Params: shifted}})
	if err != nil {
		t.Fatal(err)
	}
	if up := be.sizes[len(px)]; up != 1 { // the patches hold as many values as the pixels
		t.Errorf("the step's two variants uploaded the images %d times, want once", up)
	}
	for i, params := range [][][]float32{a.Params(), shifted} {
		m.Adapter = a.View(params)
		want, _, err := m.Loss(px, n, labels)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("variant %d: loss %v, the model's %v", i, got[i], want)
		}
	}
	if got[0] == got[1] {
		t.Errorf("both variants gave %v: the shifted parameters were not used", got[0])
	}
	if err := NewObjective(nil, nil, false).SetImages(px, labels); err == nil || !strings.Contains(err.Error(), "decoder's objective") {
		t.Errorf("SetImages on a decoder's objective: %v", err)
	}
}

// TestPetsFromSavedAdapter: adapter.init starts a pets run from a saved ViT
// adapter: its validation loss at step 0 is the saved run's best, bit for
// bit (the LoRA matrices and the classifier are the saved ones), grouped or
// not; an adapter of another rank than the config's is refused.
func TestPetsFromSavedAdapter(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	s, err := Run(Options{Overrides: petsSet(src, "optimizer.lr=1e-2")})
	if err != nil {
		t.Fatal(err)
	}
	if s.BestStep == 0 || s.BestValLoss == nil {
		t.Fatalf("the saved run's best adapter is its initial one (step %d): the check below would not tell a loaded adapter from a fresh one", s.BestStep)
	}
	best := *s.BestValLoss
	init := "adapter.init=" + filepath.Join(src, "best")
	for _, grouped := range []string{"false", "true"} {
		dst := filepath.Join(root, "dst-grouped-"+grouped)
		if _, err := Run(Options{Overrides: petsSet(dst, init, "adapter.grouped="+grouped, "train.steps=1", "eval.skip=true")}); err != nil {
			t.Fatal(err)
		}
		first, found := 0.0, false
		for _, line := range readLines(t, filepath.Join(dst, "metrics.jsonl")) {
			var rec struct {
				Kind    string
				Step    int
				ValLoss float64 `json:"val_loss"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == "val" && rec.Step == 0 {
				first, found = rec.ValLoss, true
			}
		}
		if !found || first != best {
			t.Errorf("grouped %s: validation loss at step 0 %v (found %v), want the saved run's best %v", grouped, first, found, best)
		}
	}
	_, err = Run(Options{Overrides: petsSet(filepath.Join(root, "bad"), init, "adapter.r=8")})
	if err == nil || !strings.Contains(err.Error(), "is a LoRA of rank 4, alpha 8 on [query value], but the config says adapter.r 8") {
		t.Errorf("an adapter.init of rank 4 under adapter.r 8: got %v", err)
	}
	// Targets written otherwise than PEFT names them are quoted as written too.
	_, err = Run(Options{Overrides: petsSet(filepath.Join(root, "bad-targets"), init, "adapter.targets=[all-linear]")})
	if err == nil || !strings.Contains(err.Error(), "adapter.targets [query key value dense]") || !strings.Contains(err.Error(), "(adapter.targets [all-linear] as written)") {
		t.Errorf("a q/v adapter.init under adapter.targets [all-linear]: got %v", err)
	}
}

// tinyViT loads the tiny ViT fixture and its preprocessing.
func tinyViT(t *testing.T) (*model.ViT, imageproc.Config) {
	t.Helper()
	m, err := model.LoadViT(vitTiny, nil)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := imageproc.LoadConfig(filepath.Join(vitTiny, "preprocessor_config.json"))
	if err != nil {
		m.Free()
		t.Fatal(err)
	}
	return m, proc
}

// TestPetsAllLinear: a short pets run with LoRA on every linear layer of
// the ViT's encoder (adapter.targets [all-linear], as PEFT's): the
// trainable count is PEFT's (r 4 on q, k, v, o of 64×64, intermediate.dense
// 64→128 and output.dense 128→64 in 3 layers, and the classifier), the
// loss moves, the saved adapter is PEFT's names of the same layers
// (["query", "key", "value", "dense"]); as adapter.init under the same
// targets written another way the last adapter starts where the run ended
// (its validation loss, bit for bit, not the fresh adapter's), grouped or
// not; under query and value alone it is refused.
func TestPetsAllLinear(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	s, err := Run(Options{Overrides: petsSet(src, "adapter.targets=[all-linear]")})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3*(4*2*4*64+2*4*(64+128)) + 37*64 + 37; s.TrainableParams != want || s.StepsDone != 6 || s.Diverged {
		t.Fatalf("summary: %d trainable (want %d), %d steps, diverged %v", s.TrainableParams, want, s.StepsDone, s.Diverged)
	}
	if losses := trainLosses(t, src); len(losses) != 6 || slices.Min(losses) == slices.Max(losses) {
		t.Errorf("training losses %v: want 6 that change", losses)
	}
	valLoss := func(dir string, step int) (float64, bool) {
		for _, line := range readLines(t, filepath.Join(dir, "metrics.jsonl")) {
			var rec struct {
				Kind    string
				Step    int
				ValLoss float64 `json:"val_loss"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == "val" && rec.Step == step {
				return rec.ValLoss, true
			}
		}
		return 0, false
	}
	fresh, _ := valLoss(src, 0)
	if s.LastValLoss == nil || *s.LastValLoss == fresh {
		t.Fatalf("the last validation loss %v is the fresh adapter's %v: the check below would not tell a loaded adapter from a fresh one", s.LastValLoss, fresh)
	}
	b, err := os.ReadFile(filepath.Join(src, "last", "adapter_config.json"))
	var cfg struct {
		TargetModules []string `json:"target_modules"`
		ModulesToSave []string `json:"modules_to_save"`
	}
	if err != nil || json.Unmarshal(b, &cfg) != nil || !slices.Equal(cfg.TargetModules, []string{"query", "key", "value", "dense"}) || !slices.Equal(cfg.ModulesToSave, []string{"classifier"}) {
		t.Errorf("last/adapter_config.json: %s %v; want target_modules [query key value dense], modules_to_save [classifier]", b, err)
	}
	init := "adapter.init=" + filepath.Join(src, "last")
	for _, grouped := range []string{"false", "true"} {
		dst := filepath.Join(root, "dst-grouped-"+grouped)
		if _, err := Run(Options{Overrides: petsSet(dst, init, "adapter.targets=[query,key,value,output.dense,intermediate.dense]", "adapter.grouped="+grouped, "train.steps=1", "eval.skip=true")}); err != nil {
			t.Fatal(err)
		}
		if first, found := valLoss(dst, 0); !found || first != *s.LastValLoss {
			t.Errorf("grouped %s: validation loss at step 0 %v (found %v), want the saved run's last %v", grouped, first, found, *s.LastValLoss)
		}
	}
	_, err = Run(Options{Overrides: petsSet(filepath.Join(root, "bad"), init)})
	if err == nil || !strings.Contains(err.Error(), "on [query key value dense], but the config says") {
		t.Errorf("an all-linear adapter.init under adapter.targets [query, value]: got %v", err)
	}
}

// TestPetsLayers: a pets run with adapter.layers [0, 2] trains LoRA on
// query and value of those encoder layers alone (and the classifier):
// PEFT's trainable count, one group per adapted layer and the classifier's
// when grouped, an adapter saved with layers_to_transform [0, 2] and no
// tensor of layer 1 (PEFT reads such a directory to meazo-go's logits:
// lora.TestViTLayersPEFT's fixture, and by hand); as adapter.init under
// the same layers the last adapter starts where the run ended, and under
// other layers (or all) it is refused; a layer the ViT lacks is refused
// naming adapter.layers.
func TestPetsLayers(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	s, err := Run(Options{Overrides: petsSet(src, "adapter.layers=[2,0]", "adapter.grouped=true", "optimizer.lr=1e-2")})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*2*2*4*64 + 37*64 + 37; s.TrainableParams != want || s.StepsDone != 6 || s.Diverged {
		t.Fatalf("summary: %d trainable (want %d), %d steps, diverged %v", s.TrainableParams, want, s.StepsDone, s.Diverged)
	}
	if s.StateBytes != 8*3 {
		t.Errorf("grouped MEAZO keeps %d bytes, want one float64 for each of layers 0 and 2 and the classifier", s.StateBytes)
	}
	if losses := trainLosses(t, src); len(losses) != 6 || slices.Min(losses) == slices.Max(losses) {
		t.Errorf("training losses %v: want 6 that change", losses)
	}
	var cfg struct {
		TargetModules     []string `json:"target_modules"`
		LayersToTransform []int    `json:"layers_to_transform"`
	}
	b, err := os.ReadFile(filepath.Join(src, "last", "adapter_config.json"))
	if err != nil || json.Unmarshal(b, &cfg) != nil || !slices.Equal(cfg.LayersToTransform, []int{0, 2}) || !slices.Equal(cfg.TargetModules, []string{"query", "value"}) {
		t.Errorf("last/adapter_config.json: %s %v; want target_modules [query value], layers_to_transform [0 2]", b, err)
	}
	m, _ := tinyViT(t)
	defer m.Free()
	a, err := lora.LoadViT(filepath.Join(src, "last"), m, false)
	if err != nil || !slices.Equal(a.Layers(), []int{0, 2}) {
		t.Fatalf("last/ loads on layers %v (%v), want [0 2]", a.Layers(), err)
	}
	if v := a.View(a.Params()); v.Layers[1].Q != nil || v.Layers[1].V != nil {
		t.Errorf("last/ has LoRA matrices of layer 1")
	}
	init := "adapter.init=" + filepath.Join(src, "last")
	dst := filepath.Join(root, "dst")
	if _, err := Run(Options{Overrides: petsSet(dst, init, "adapter.layers=[0,2]", "train.steps=1", "eval.skip=true")}); err != nil {
		t.Fatal(err)
	}
	for _, line := range readLines(t, filepath.Join(dst, "metrics.jsonl")) {
		var rec struct {
			Kind    string
			Step    int
			ValLoss float64 `json:"val_loss"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Kind == "val" && rec.Step == 0 && (s.LastValLoss == nil || rec.ValLoss != *s.LastValLoss) {
			t.Errorf("validation loss at step 0 %v, want the saved run's last %v", rec.ValLoss, s.LastValLoss)
		}
	}
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{init}, "adapts layers [0 2] (layers_to_transform), but adapter.layers is []"},
		{[]string{init, "adapter.layers=[0]"}, "adapts layers [0 2] (layers_to_transform), but adapter.layers is [0]"},
		{[]string{"adapter.layers=[3]"}, "adapter.layers: layer 3 is not one of the model's 3 layers"},
		{[]string{init, "adapter.layers=[0,3]"}, "adapter.layers: layer 3 is not one of the model's 3 layers"},
	} {
		_, err := Run(Options{Overrides: petsSet(filepath.Join(root, "bad"), tc.set...)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.set, err, tc.want)
		}
	}
}

// TestPetsMerge: eval.merge scores a pets run's best and last adapters on
// a copy of the ViT with them merged into its weights (lora.MergeViT), put
// in the ViT's place during the evaluation and taken away after: the test
// accuracies and every image's prediction are the unmerged run's, with
// LoRA on every layer and on some; and the copy evaluated runs no
// low-rank term, its logits within 2e-5 of the adapter's attached.
func TestPetsMerge(t *testing.T) {
	root := t.TempDir()
	for _, more := range [][]string{{"adapter.targets=[all-linear]"}, {"adapter.layers=[1]"}} {
		runs := map[string]*Summary{}
		for _, merge := range []string{"false", "true"} {
			out := filepath.Join(root, strings.Join(more, "-")+"-merge-"+merge)
			s, err := Run(Options{Overrides: petsSet(out, append(more, "optimizer.lr=1e-2", "eval.merge="+merge)...)})
			if err != nil {
				t.Fatal(err)
			}
			runs[merge] = s
		}
		for _, which := range []string{"best", "last"} {
			un, mg := runs["false"].Test[which]["accuracy"], runs["true"].Test[which]["accuracy"]
			if _, ok := runs["true"].Test[which]["accuracy"]; !ok || un != mg {
				t.Errorf("%v: test accuracy of %s merged %v, unmerged %v", more, which, mg, un)
			}
			file := "predictions_" + which + ".jsonl"
			a, errA := os.ReadFile(filepath.Join(root, strings.Join(more, "-")+"-merge-false", file))
			b, errB := os.ReadFile(filepath.Join(root, strings.Join(more, "-")+"-merge-true", file))
			if errA != nil || errB != nil || len(a) == 0 || string(a) != string(b) {
				t.Errorf("%v: %s merged and unmerged differ (%v, %v)", more, file, errA, errB)
			}
		}
	}

	m, proc := tinyViT(t)
	defer m.Free()
	a, err := lora.LoadViT(filepath.Join(vitTiny, "lora-layers"), m, false)
	if err != nil {
		t.Fatal(err)
	}
	px := make([]float32, 3*64*64)
	for i := range px {
		px[i] = float32(i%17)/8 - 1
	}
	a.Attach(m)
	attached, err := m.Logits(px, 1)
	m.Adapter = nil
	if err != nil {
		t.Fatal(err)
	}
	v := &vision{vit: m, proc: proc, adapter: a}
	s := newVisionState(v, false, true)
	evals := s.tests(false)
	if err := evals[1].with(func(*model.Model) error {
		if v.vit == m || v.vit.Adapter == nil || len(v.vit.Adapter.Layers) != 0 || v.vit.Adapter.Classifier == nil {
			t.Errorf("the evaluation runs the ViT itself (%v) or a copy with low-rank terms", v.vit == m)
		}
		got, err := v.vit.Logits(px, 1)
		if err != nil {
			return err
		}
		for i := range got {
			if math.Abs(float64(got[i]-attached[i])) > 2e-5 {
				t.Errorf("merged logit %d %v, attached %v", i, got[i], attached[i])
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v.vit != m || m.Adapter != nil {
		t.Errorf("after the evaluation the ViT is not the run's own (%v), or has an adapter attached", v.vit != m)
	}
}

// TestShardWarning: a data file that is one shard of a split of several
// (the HF hub's names) is warned about with the shards the run does not
// read, for the training and the test file.
func TestShardWarning(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(petsTrain)
	if err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train-00000-of-00002.parquet")
	for _, p := range []string{train, filepath.Join(dir, "train-00001-of-00002.parquet")} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	out := filepath.Join(t.TempDir(), "run")
	if _, err := Run(Options{Log: &log, Overrides: petsSet(out, "task.train="+train, "train.steps=1", "eval.skip=true")}); err != nil {
		t.Fatal(err)
	}
	want := "warning: task.train " + train + " is one shard of a split: " + filepath.Join(dir, "train-00001-of-00002.parquet") + " beside it"
	if !strings.Contains(log.String(), want) {
		t.Errorf("the run's output does not say %q:\n%s", want, log.String())
	}
	if strings.Contains(log.String(), "task.test "+petsTest) {
		t.Errorf("a test file of one shard (%s) was warned about", petsTest)
	}
}
