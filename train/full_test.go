package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"weak"

	"github.com/meazo-go/meazo/fullparam"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// TestFullResumeIsBitIdentical: a full-parameter run (every weight of the
// demo's model) stopped and resumed writes what the uninterrupted run
// does: metrics.jsonl line for line, last/ and best/ model files and the
// optimizer's state byte for byte; under MEAZO and under ZO-Adam (whose
// moments are saved beside the weights), joint and grouped.
func TestFullResumeIsBitIdentical(t *testing.T) {
	dir, cfg := demoConfig(t, 9)
	common := []string{"adapter.kind=full", "train.eval_every=3", "train.checkpoint_every=2", "eval.skip=true",
		"task.max_train=120", "task.max_validation=16", "optimizer.lr=1e-3"}
	for _, tc := range []struct {
		name string
		set  []string
	}{
		{"meazo", []string{"optimizer.name=meazo"}},
		{"zo-adam-grouped", []string{"optimizer.name=zo-adam", "adapter.grouped=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(slices.Clone(common), tc.set...)
			whole := filepath.Join(dir, tc.name+"-whole")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+whole)}); err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(dir, tc.name+"-cut")
			// Stop after 5 steps: the last checkpoint is at step 4 (or 3, a new best).
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+cut), StopAfter: 5}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(Options{Resume: cut}); err != nil {
				t.Fatal(err)
			}
			requireSameFullRun(t, whole, cut)
		})
	}
}

// TestTrainedFurtherDropsLast: a finished full-parameter run trained
// further (--resume --set train.steps=N) has no last/ until it finishes
// again: the old one is neither its last weights nor room the disk checks
// count (a whole model beside the checkpoints and best/).
func TestTrainedFurtherDropsLast(t *testing.T) {
	dir, cfg := demoConfig(t, 3)
	out := filepath.Join(dir, "run")
	set := []string{"adapter.kind=full", "train.eval_every=2", "eval.skip=true", "task.max_train=64", "task.max_validation=8", "output.dir=" + out}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, rundir.LastDir)); err != nil {
		t.Fatalf("the finished run: %v", err)
	}
	if _, err := Run(Options{Resume: out, Overrides: []string{"train.steps=6"}, StopAfter: 1}); err != nil { // steps of this process
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, rundir.LastDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("last/ of the run trained further, stopped at step 4 of 6: %v, want none", err)
	}
	if _, err := Run(Options{Resume: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, rundir.LastDir, "model.safetensors")); err != nil {
		t.Errorf("last/ once finished again: %v", err)
	}
}

// requireSameFullRun checks that the full-parameter run in dir wrote what
// the uninterrupted one in whole did.
func requireSameFullRun(t *testing.T, whole, dir string) {
	t.Helper()
	if a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(dir, "metrics.jsonl")); !slices.Equal(a, b) {
		t.Fatalf("metrics.jsonl differs:\n%v\n%v", a, b)
	}
	files := []string{"last/model.safetensors", "best/model.safetensors", "last/config.json", "checkpoint/optimizer.bin"}
	if _, err := os.Stat(filepath.Join(whole, "checkpoint", "optimizer_state.safetensors")); err == nil {
		files = append(files, "checkpoint/optimizer_state.safetensors")
	}
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(whole, f))
		y, _ := os.ReadFile(filepath.Join(dir, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and the uninterrupted run (%d and %d bytes)", f, filepath.Base(dir), len(y), len(x))
		}
	}
}

// TestFullRunOutputs: a finished full-parameter run's best/ and last/ are
// model directories that load, last/ differs from the starting model, the
// summary counts every weight of the model and the test split is scored
// for both.
func TestFullRunOutputs(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	out := filepath.Join(dir, "run")
	s, err := Run(Options{ConfigPath: cfg, Overrides: []string{"adapter.kind=full", "train.eval_every=3", "task.max_train=120",
		"task.max_validation=16", "task.max_test=16", "optimizer.lr=1e-3", "output.dir=" + out}})
	if err != nil {
		t.Fatal(err)
	}
	base, err := model.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := base.Tensors()
	var n int
	for _, tt := range ts {
		n += tt.Size()
	}
	if s.TrainableParams != n || s.Adapter != "full" {
		t.Errorf("summary: %d trainable parameters of adapter %q, want every one of the model's %d", s.TrainableParams, s.Adapter, n)
	}
	for _, name := range []string{"best", "last"} {
		if _, ok := s.Test[name]; !ok {
			t.Errorf("no test metrics for %s: %v", name, s.Test)
		}
		m, err := model.Load(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s/: %v", name, err)
		}
		if name == "last" {
			a, _ := os.ReadFile(filepath.Join(dir, "model", "model.safetensors"))
			b, _ := os.ReadFile(filepath.Join(out, "last", "model.safetensors"))
			if bytes.Equal(a, b) || m.NumLayers != base.NumLayers {
				t.Errorf("last/ is the starting model")
			}
		}
	}
}

// packRecorder is a backend that keeps a weak pointer to every matrix it
// packs (every model's weights; not the optimizer's moments), to tell
// which are still reachable.
type packRecorder struct {
	trainerBackend
	mu     *sync.Mutex
	packed *[]weak.Pointer[cpu.Packed]
}

type trainerBackend interface {
	tensor.Backend
	tensor.Trainer
}

func (p packRecorder) Pack(w []float32, n, k int, bf16 bool) tensor.Weight {
	pw := p.trainerBackend.Pack(w, n, k, bf16)
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.packed = append(*p.packed, weak.Make(pw.(*cpu.Packed)))
	return pw
}

// reachable collects the garbage and counts the packed matrices still
// reachable, and all packed so far.
func (p packRecorder) reachable() (alive, all int) {
	runtime.GC()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range *p.packed {
		if w.Value() != nil {
			alive++
		}
	}
	return alive, len(*p.packed)
}

// TestFullTestEvaluationHoldsOneModel: a full-parameter run's test
// evaluation loads best/ and the base model each in place of the model
// before it, and the trained weights and ZO-Adam's moments are let go
// first, so that at no point are two models' weights reachable (on the
// CPU a model held twice is twice the memory the run trained in). A stop
// during that evaluation checkpoints the moments all the same (linked from
// the last step's checkpoint), and the resumed run ends as the
// uninterrupted one.
func TestFullTestEvaluationHoldsOneModel(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	set := []string{"adapter.kind=full", "optimizer.name=zo-adam", "optimizer.lr=1e-3", "train.eval_every=2",
		"task.max_train=120", "task.max_validation=8", "task.max_test=6", "eval.batch_size=2", "eval.base=true"}
	var packed []weak.Pointer[cpu.Packed]
	rec := packRecorder{mu: &sync.Mutex{}, packed: &packed}
	wrap := func(b tensor.Backend) tensor.Backend {
		rec.trainerBackend = b.(trainerBackend)
		return rec
	}
	perModel, mostAlive := 0, 0
	poll := func() string {
		alive, all := rec.reachable()
		if perModel == 0 {
			perModel = all // polled first after the model loaded
		}
		mostAlive = max(mostAlive, alive)
		return ""
	}
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), wrapBackend: wrap, Stop: poll, testTwins: true}); err != nil {
		t.Fatal(err)
	}
	if perModel == 0 || len(packed) != 3*perModel {
		t.Fatalf("%d matrices packed, %d by the first load: want three loads (the run's model, best/, the base model)", len(packed), perModel)
	}
	if mostAlive > perModel {
		t.Errorf("the test evaluation held %d matrices at once, a model has %d: the trained model was kept while another was loaded", mostAlive, perModel)
	}

	// Stopped in the test evaluation of best/: its checkpoint holds the moments.
	packed, perModel = nil, 0
	stopInBest := func() string {
		if _, all := rec.reachable(); perModel == 0 {
			perModel = all
		} else if all > perModel {
			return "SIGUSR1"
		}
		return ""
	}
	cut := filepath.Join(dir, "cut")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), wrapBackend: wrap, Stop: stopInBest, testTwins: true}); err != nil {
		t.Fatal(err)
	}
	if st := readState(t, cut); st.Test == nil || st.Test.Current != "best" {
		t.Fatalf("the stop was not in the test evaluation of best/: %+v", st.Test)
	}
	for _, f := range []string{"optimizer_state.safetensors", "model.safetensors"} {
		if a, b := readFile(t, filepath.Join(whole, "checkpoint", f)), readFile(t, filepath.Join(cut, "checkpoint", f)); a != b {
			t.Errorf("checkpoint/%s of the run stopped in its test evaluation differs from the last step's (%d and %d bytes)", f, len(b), len(a))
		}
	}
	if _, err := Run(Options{Resume: cut, testTwins: true}); err != nil {
		t.Fatal(err)
	}
	requireSameFullRun(t, whole, cut)
}

// TestStorageNote: the log line that starts a full-parameter run says in
// which dtype the weights train, and that a BF16 checkpoint loaded without
// model.bf16_weights, and a float16 one, train (and are saved) in float32.
func TestStorageNote(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	f32 := filepath.Join(dir, "model")
	demo, err := model.Load(f32)
	if err != nil {
		t.Fatal(err)
	}
	bf16 := filepath.Join(dir, "bf16")
	if err := model.WriteRandomBF16(bf16, &demo.Config, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	f16 := filepath.Join(dir, "f16")
	if err := model.WriteRandom(f16, &demo.Config, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	toF16(t, filepath.Join(f16, "model.safetensors"))
	for _, tc := range []struct {
		dir       string
		keepBF16  bool
		exclude   []string
		want, not string
	}{
		{f32, false, nil, "held in float32", "bfloat16"},
		{f32, true, nil, "held in float32", "bfloat16"},
		{bf16, false, nil, "held in float32: the checkpoint's bfloat16 weights widened", "stochastically"},
		{bf16, true, nil, "held in bfloat16: each update is rounded to bfloat16 stochastically", "float32"},
		{bf16, true, []string{"model.norm.weight"}, "held in bfloat16: each update is rounded", "float32"},
		{f16, false, nil, "held in float32: the checkpoint's float16 weights widened", "bfloat16"},
	} {
		m, err := model.LoadWith(tc.dir, model.LoadOptions{BF16Weights: tc.keepBF16, Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fullparam.New(m, fullparam.Options{Exclude: tc.exclude})
		if err != nil {
			t.Fatal(err)
		}
		if got := storageNote(m, p); !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("%s, bf16_weights %v: %q, want %q (and not %q)", filepath.Base(tc.dir), tc.keepBF16, got, tc.want, tc.not)
		}
	}
}

// TestFullTestEvaluationWording: a full-parameter run's test evaluation
// scores weights, not an adapter, and its messages say so: a stop in it
// ("of the last weights'") and a failure to write its answers ("test
// evaluation (the last weights)").
func TestFullTestEvaluationWording(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	set := []string{"adapter.kind=full", "optimizer.lr=1e-3", "train.eval_every=2", "task.max_train=40",
		"task.max_validation=8", "task.max_test=8", "eval.batch_size=2"}
	dir := t.TempDir()
	polls := 0
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+filepath.Join(dir, "whole")),
		Log: io.Discard, Stop: stopAt(0, &polls)}); err != nil {
		t.Fatal(err)
	}
	if s := readSummary(t, filepath.Join(dir, "whole")); s.Test["best"] == nil || s.Test["last"] == nil {
		t.Fatalf("test results %v", s.Test)
	}
	// The last poll is in the test evaluation of the last weights, or of
	// best/ when its validation loss is not the last step's (evaluated second).
	stopped := filepath.Join(dir, "stopped")
	n := 0
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+stopped), Log: io.Discard,
		Stop: stopAt(polls, &n)}); err != nil {
		t.Fatal(err)
	}
	msg := readSummary(t, stopped).Message
	if !strings.Contains(msg, "during the test evaluation, at example") || !strings.Contains(msg, "weights'") || strings.Contains(msg, "adapter") {
		t.Errorf("a stop in a full-parameter run's test evaluation says %q", msg)
	}
	// The answers' file cannot be written: a directory takes its name once
	// last/ is there (written before the test evaluation).
	failed := filepath.Join(dir, "failed")
	block := func() string {
		if _, err := os.Stat(filepath.Join(failed, "last")); err == nil {
			if err := os.MkdirAll(filepath.Join(failed, "predictions_last.jsonl", "x"), 0o755); err != nil {
				t.Error(err)
			}
		}
		return ""
	}
	_, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+failed), Log: io.Discard, Stop: block})
	if err == nil || !strings.Contains(err.Error(), "test evaluation (the last weights): ") {
		t.Errorf("a full-parameter run whose answers cannot be written: %v", err)
	}
}

// TestTrainedTensorNotes: the line that starts a full-parameter run says
// how many of the model's tensors train when not all do, and that
// excluding the embeddings of a model whose LM head is tied to them
// freezes the head too (its count, the embeddings' alone, did not say so);
// an untied model's head trains on.
func TestTrainedTensorNotes(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	tied := filepath.Join(dir, "model")
	demo, err := model.Load(tied)
	if err != nil {
		t.Fatal(err)
	}
	c := demo.Config
	c.TieEmbeddings = false
	untied := filepath.Join(dir, "untied")
	if err := model.WriteRandom(untied, &c, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	const frozen = "the LM head is tied to model.embed_tokens.weight (tie_word_embeddings), which does not train: the head is frozen too"
	for _, tc := range []struct {
		dir         string
		exclude     []string
		count, note string // want: tensorCount's, tiedHeadNote's
	}{
		{tied, nil, "", ""},
		{tied, []string{"model.embed_tokens.weight"}, " (23 of the model's 24 tensors)", "; " + frozen},
		{tied, []string{"model.norm.weight"}, " (23 of the model's 24 tensors)", ""},
		{untied, []string{"model.embed_tokens.weight"}, " (24 of the model's 25 tensors)", ""},
	} {
		m, err := model.LoadWith(tc.dir, model.LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fullparam.New(m, fullparam.Options{Exclude: tc.exclude})
		if err != nil {
			t.Fatal(err)
		}
		if got := tensorCount(m, p); got != tc.count {
			t.Errorf("%s, exclude %v: tensor count %q, want %q", filepath.Base(tc.dir), tc.exclude, got, tc.count)
		}
		if got := tiedHeadNote(m, p); got != tc.note {
			t.Errorf("%s, exclude %v: tied-head note %q, want %q", filepath.Base(tc.dir), tc.exclude, got, tc.note)
		}
		m.Free()
	}
}

// TestGroupsNote: a grouped full-parameter run's first line says what each
// group holds, as metrics.jsonl and meazo-plot vt number them: group 0 is
// the embeddings', so that group i is layer i−1's, unless the embeddings do
// not train or adapter.include leaves layers out; an untied head is the
// final norm's group's.
func TestGroupsNote(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	tied := filepath.Join(dir, "model")
	demo, err := model.Load(tied)
	if err != nil {
		t.Fatal(err)
	}
	c := demo.Config
	c.TieEmbeddings = false
	c.NumLayers = 3
	untied := filepath.Join(dir, "untied")
	if err := model.WriteRandom(untied, &c, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir              string
		grouped          bool
		include, exclude []string
		want             string
	}{
		{tied, false, nil, nil, ""},
		{tied, true, nil, nil, " (0: the embeddings; 1–2: layers 0–1; 3: the final norm)"},
		{tied, true, nil, []string{"model.embed_tokens.weight"}, " (0–1: layers 0–1; 2: the final norm)"},
		{tied, true, []string{"model.layers.1.*"}, nil, " (0: layer 1)"},
		{untied, true, nil, nil, " (0: the embeddings; 1–3: layers 0–2; 4: the final norm and the LM head)"},
		{untied, true, []string{"model.layers.0.*", "model.layers.2.*"}, nil, " (0: layer 0; 1: layer 2)"},
	} {
		m, err := model.LoadWith(tc.dir, model.LoadOptions{Unstacked: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fullparam.New(m, fullparam.Options{Include: tc.include, Exclude: tc.exclude, Grouped: tc.grouped})
		if err != nil {
			t.Fatal(err)
		}
		if got := groupsNote(m, p, tc.grouped); got != tc.want {
			t.Errorf("%s, grouped %v, include %v, exclude %v: %q, want %q", filepath.Base(tc.dir), tc.grouped, tc.include, tc.exclude, got, tc.want)
		}
		m.Free()
	}
	// OPT-350m's shape: project_in and project_out, no final norm, listed
	// out of the order they act in: project_in joins the embeddings' group,
	// project_out is the head's.
	c350 := &model.Config{Architecture: "OPTForCausalLM", VocabSize: 96, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 16, WordEmbedDim: 16, LayerNormEps: 1e-5, TieEmbeddings: true,
		BOSTokenID: 2, EOSTokenIDs: []int{2}, PostNorm: true, NoFinalNorm: true}
	ones := func(_ string, shape []int) ([]float32, error) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return slices.Repeat([]float32{0.01}, n), nil
	}
	m, err := model.FromValues(c350, ones, model.LoadOptions{Unstacked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	p, err := fullparam.New(m, fullparam.Options{Grouped: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := groupsNote(m, p, true), " (0: the embeddings and project_in; 1: project_out; 2–3: layers 0–1)"; got != want {
		t.Errorf("OPT-350m's shape: %q, want %q", got, want)
	}
}

// TestNaNWeightIsNotHidden: a model whose weights hold a NaN (here one
// element of a query projection, which makes a head's scores all NaN) is
// refused at step 0's validation, as PyTorch's forward gives NaN there; the
// attention's softmax had read a row of NaN scores as a query that sees no
// key, so the run trained on finite losses and saved the NaN as best/.
func TestNaNWeightIsNotHidden(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	bad := filepath.Join(dir, "nan")
	copyDir(t, filepath.Join(dir, "model"), bad)
	w := filepath.Join(bad, "model.safetensors")
	f, err := safetensors.Open(w)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := f.Info("model.layers.0.self_attn.q_proj.weight")
	f.Close()
	if !ok {
		t.Fatal("no q_proj in layer 0")
	}
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	at := 8 + int64(binary.LittleEndian.Uint64(b)) + info.Begin
	binary.LittleEndian.PutUint32(b[at:], math.Float32bits(float32(math.NaN())))
	if err := os.WriteFile(w, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(Options{ConfigPath: cfg, Overrides: []string{"model.path=" + bad, "adapter.kind=full", "task.max_train=40", "task.max_validation=8",
		"eval.skip=true", "output.dir=" + filepath.Join(dir, "run")}})
	if want := "the validation loss of the starting model is not finite: check the model (" + bad + ") and the data"; err == nil || err.Error() != want {
		t.Fatalf("a model with a NaN weight: %v, want %q", err, want)
	}
}

// TestFullResumeKeepsBF16Weights: model.bf16_weights cannot change on the
// resume of a full-parameter run (it decides how the trained weights are
// stored and rounded), and the refusal changes nothing; an adapter's run
// may change it (its weights are frozen: the same results).
func TestFullResumeKeepsBF16Weights(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	for _, kind := range []string{"full", "lora"} {
		out := filepath.Join(dir, kind)
		if _, err := Run(Options{ConfigPath: cfg, Log: io.Discard, StopAfter: 1, Overrides: []string{"output.dir=" + out, "adapter.kind=" + kind,
			"task.max_validation=8", "eval.skip=true", "model.backend=cpu"}}); err != nil {
			t.Fatal(err)
		}
		before := readFile(t, filepath.Join(out, "config.yaml"))
		_, err := Run(Options{Resume: out, Log: io.Discard, Overrides: []string{"model.bf16_weights=true"}})
		if kind == "lora" {
			if err != nil {
				t.Errorf("lora: --set model.bf16_weights=true on resume: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "cannot change on resume of a full-parameter run (the run's false, --set true)") {
			t.Errorf("full: --set model.bf16_weights=true on resume: %v, want a refusal", err)
		}
		if readFile(t, filepath.Join(out, "config.yaml")) != before {
			t.Error("full: the refused resume changed config.yaml")
		}
	}
}

// TestResumeRefusesDamagedBest: a full-parameter run's best/ of a step
// before its checkpoint's is the only copy of those weights (the
// manifest's checksums cover checkpoint/ only). Cut short, missing a file
// or with its header damaged, the resume trained to the end and then
// failed best/'s test evaluation, or scored what was left; it is refused
// before it trains, saying what is lost. An intact best/ resumes.
func TestResumeRefusesDamagedBest(t *testing.T) {
	dir, cfg := demoConfig(t, 9)
	base := filepath.Join(dir, "base")
	set := []string{"adapter.kind=full", "optimizer.name=zo-adam", "optimizer.lr=0.1", "output.dir=" + base,
		"train.checkpoint_every=3", "train.eval_every=3", "task.max_train=64", "task.max_validation=8", "task.max_test=8", "eval.batch_size=8"}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 7, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	var st checkpointState
	if b, err := os.ReadFile(filepath.Join(base, rundir.CheckpointDir, rundir.StateFile)); err != nil || json.Unmarshal(b, &st) != nil || st.BestStep >= st.Step {
		t.Fatalf("this test needs a best step before the checkpoint's: best %d, checkpoint %d (%v)", st.BestStep, st.Step, err)
	}
	weights := filepath.Join(rundir.BestDir, "model.safetensors")
	for _, tc := range []struct {
		name   string
		damage func(run string) error
		want   string
	}{
		{"intact", func(string) error { return nil }, ""},
		{"cut short", func(run string) error {
			fi, err := os.Stat(filepath.Join(run, weights))
			if err != nil {
				return err
			}
			return os.Truncate(filepath.Join(run, weights), fi.Size()-10)
		}, "bytes, checkpoint/'s"},
		{"header byte", func(run string) error { return flipByte(filepath.Join(run, weights), 20) }, "safetensors"},
		{"config.json missing", func(run string) error { return os.Remove(filepath.Join(run, rundir.BestDir, "config.json")) }, "config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			copyDir(t, base, run)
			if err := tc.damage(run); err != nil {
				t.Fatal(err)
			}
			metrics, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile))
			_, err := Run(Options{Resume: run, Log: io.Discard})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("resume with an intact best/: %v", err)
				}
				return
			}
			msg := fmt.Sprint(err)
			for _, w := range []string{fmt.Sprintf("best/ holds the weights of step %d, the best validation loss", st.BestStep), "it is damaged", tc.want, "start it again"} {
				if !strings.Contains(msg, w) {
					t.Errorf("resume with best/ %s: %v; want %q in it", tc.name, err, w)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile)); !bytes.Equal(after, metrics) {
				t.Errorf("the refused resume changed metrics.jsonl")
			}
		})
	}
}

// TestFullPatternsBeforeData: a full-parameter run's include or exclude
// pattern that names no tensor is refused, with its key, before the
// training data is read (minutes for a large dataset).
func TestFullPatternsBeforeData(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	var log strings.Builder
	_, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"adapter.kind=full", "adapter.exclude=[model.embed_token.weight]",
		"output.dir=" + filepath.Join(dir, "run")}})
	if err == nil || !strings.Contains(err.Error(), "adapter.exclude") {
		t.Fatalf("an exclude pattern of no tensor: %v; want an error naming adapter.exclude", err)
	}
	if strings.Contains(log.String(), "training examples") {
		t.Errorf("the training data was read before the pattern was refused:\n%s", log.String())
	}
}
