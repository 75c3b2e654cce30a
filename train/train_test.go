package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/tokenizer"
	"github.com/meazo-go/meazo/zo"
)

// demoConfig writes the demo's files into a temp dir and returns the config
// path with overrides that keep the run short.
func demoConfig(t *testing.T, steps int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	path, err := WriteDemo(dir, steps)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// demoModel loads the demo's model and tokenizer that demoConfig wrote
// into dir; the model is freed when the test ends.
func demoModel(t *testing.T, dir string) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	m, err := model.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	tok, err := tokenizer.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func readSummary(t *testing.T, dir string) Summary {
	t.Helper()
	var s Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestResumeIsBitIdentical interrupts a run, resumes it, and compares
// metrics.jsonl, the adapters and the optimizer state with an uninterrupted
// run, for each kind of adapter (the demo's LoRA, and prompt tuning with a
// few virtual tokens) under MEAZO and ZO-Adam (whose state is per parameter).
func TestResumeIsBitIdentical(t *testing.T) {
	dir, cfg := demoConfig(t, 12)
	common := []string{"train.eval_every=4", "train.checkpoint_every=3", "eval.skip=true", "task.max_train=200", "task.max_validation=16"}
	prompt := []string{"adapter.kind=prompt", "adapter.virtual_tokens=4"}
	for _, tc := range []struct {
		name, peftType string
		set            []string
	}{
		{"lora-meazo", "LORA", []string{"optimizer.name=meazo"}},
		{"lora-zo-adam", "LORA", []string{"optimizer.name=zo-adam"}},
		{"lora-all-linear-meazo", "LORA", []string{"optimizer.name=meazo", "adapter.targets=[all-linear]", "adapter.r=4"}},
		{"lora-layer-1-grouped-zo-adam", "LORA", []string{"optimizer.name=zo-adam", "adapter.layers=[1]", "adapter.grouped=true"}},
		{"prompt-meazo", "PROMPT_TUNING", append(slices.Clone(prompt), "optimizer.name=meazo")},
		{"prompt-zo-adam", "PROMPT_TUNING", append(slices.Clone(prompt), "optimizer.name=zo-adam")},
		{"lora-zo-sgd-linear-warmup", "LORA", []string{"optimizer.name=zo-sgd", "optimizer.lr=0.05", "optimizer.schedule=linear", "optimizer.warmup_steps=3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := append(slices.Clone(common), tc.set...)
			whole := filepath.Join(dir, tc.name+"-whole")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+whole)}); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(whole, "last", "adapter_config.json")); err != nil || !bytes.Contains(b, []byte(`"`+tc.peftType+`"`)) {
				t.Fatalf("the run did not train a %s adapter: %s %v", tc.peftType, b, err)
			}
			cut := filepath.Join(dir, tc.name+"-cut")
			// Stop after 7 steps: the last checkpoint is at step 6, so step 7 is logged, cut off, and run again.
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "output.dir="+cut), StopAfter: 7}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(cut, "summary.json")); err == nil {
				t.Fatal("an interrupted run wrote summary.json")
			}
			if _, err := Run(Options{Resume: cut}); err != nil {
				t.Fatal(err)
			}
			if n := len(readLines(t, filepath.Join(whole, "metrics.jsonl"))); n != 12+4 {
				t.Fatalf("%d metrics lines, want 12 steps + 4 validations (steps 0, 4, 8, 12)", n)
			}
			requireSameRun(t, whole, cut)
		})
	}
}

// requireSameRun checks that the run in dir wrote what the uninterrupted
// run in whole did: metrics.jsonl line for line, the last and best adapters
// and the optimizer state byte for byte.
func requireSameRun(t *testing.T, whole, dir string) {
	t.Helper()
	a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(dir, "metrics.jsonl"))
	if !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("metrics line %d differs:\n uninterrupted: %s\n %s: %s", i, a[i], filepath.Base(dir), b[i])
			}
		}
		t.Fatalf("metrics differ in length: %d vs %d lines", len(a), len(b))
	}
	for _, f := range []string{"last/adapter_model.safetensors", "best/adapter_model.safetensors", "checkpoint/optimizer.bin"} {
		x, _ := os.ReadFile(filepath.Join(whole, f))
		y, _ := os.ReadFile(filepath.Join(dir, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and the uninterrupted run", f, filepath.Base(dir))
		}
	}
}

// TestThreadsDoNotChangeResults runs the same config with 1 and 3 kernel threads.
func TestThreadsDoNotChangeResults(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	var runs [][]string
	for _, th := range []string{"1", "3"} {
		out := filepath.Join(dir, "t"+th)
		if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"train.threads=" + th, "output.dir=" + out, "eval.skip=true",
			"task.max_train=100", "task.max_validation=8", "adapter.grouped=true"}}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, readLines(t, filepath.Join(out, "metrics.jsonl")))
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Error("metrics differ between 1 and 3 threads")
	}
}

func TestConfigErrors(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	typo := filepath.Join(dir, "typo.yaml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(typo, []byte(strings.Replace(string(b), "  steps:", "  stpes:", 1)), 0o644)
	cases := []struct {
		name      string
		path      string
		overrides []string
		want      []string
	}{
		{"typo in file", typo, nil, []string{"typo.yaml", `"train.stpes"`, `did you mean "train.steps"`}},
		{"typo in --set", cfg, []string{"optimiser.lr=1"}, []string{`"optimiser.lr"`, `"optimizer.lr"`}},
		{"unknown section", cfg, []string{"trian.steps=3"}, []string{`"train.steps"`}},
		{"missing model", cfg, []string{"model.path=" + filepath.Join(dir, "nope"), "output.dir=" + filepath.Join(dir, "r1")}, []string{filepath.Join(dir, "nope") + ": no such directory"}},
		{"bad optimizer", cfg, []string{"optimizer.name=adam"}, []string{"optimizer.name", "meazo"}},
		{"fzoo q", cfg, []string{"optimizer.name=fzoo"}, []string{"optimizer.q must be at least 2 for fzoo", "demo.yaml with --set optimizer.name=fzoo:"}},
		{"fzoo q by --set", cfg, []string{"optimizer.name=fzoo", "optimizer.q=1"}, []string{"--set optimizer.q: must be at least 2 for fzoo"}},
		{"alpha by --set", cfg, []string{"adapter.alpha=0"}, []string{"--set adapter.alpha: must be positive"}},
		{"missing data", cfg, []string{"task.train=/no/such.tsv", "output.dir=" + filepath.Join(dir, "r2")}, []string{"/no/such.tsv"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(Options{ConfigPath: tc.path, Overrides: tc.overrides})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestDivergenceKeepsCheckpoint runs with an absurd learning rate: the run
// stops with a clear message, summary.json says diverged, and the last good
// checkpoint is intact.
func TestDivergenceKeepsCheckpoint(t *testing.T) {
	dir, cfg := demoConfig(t, 40)
	out := filepath.Join(dir, "div")
	var log bytes.Buffer
	s, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + out, "optimizer.name=zo-sgd",
		"optimizer.lr=1e30", "train.checkpoint_every=1", "train.eval_every=1", "task.max_train=64", "task.max_validation=8"}})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Diverged || s.DivergedAt == nil {
		t.Fatalf("run did not report divergence: %+v", s)
	}
	sum := readSummary(t, out)
	if !sum.Diverged || !strings.Contains(sum.Message, "diverged at step") {
		t.Errorf("summary.json: %+v", sum)
	}
	if !strings.Contains(log.String(), "diverged at step") {
		t.Errorf("log does not say the run diverged:\n%s", log.String())
	}
	var st checkpointState
	b, err := os.ReadFile(filepath.Join(out, "checkpoint", "state.json"))
	if err != nil {
		t.Fatalf("no checkpoint kept: %v", err)
	}
	json.Unmarshal(b, &st)
	if st.Step != *s.DivergedAt-1 {
		t.Errorf("checkpoint at step %d, want the last good step %d", st.Step, *s.DivergedAt-1)
	}
}

func TestBrokenRowIsReportedAndSkipped(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	train := filepath.Join(dir, "data", "train.tsv")
	b, _ := os.ReadFile(train)
	lines := strings.Split(string(b), "\n")
	lines[3] = "a sentence without a label"
	os.WriteFile(train, []byte(strings.Join(lines, "\n")), 0o644)
	var log bytes.Buffer
	if _, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + filepath.Join(dir, "a"), "eval.skip=true", "task.max_validation=8"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "train.tsv") || !strings.Contains(log.String(), "line 4") {
		t.Errorf("the skipped row is not reported with file and line:\n%s", log.String())
	}
	_, err := Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: []string{"output.dir=" + filepath.Join(dir, "b"), "task.strict=true"}})
	if err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("strict mode: error %v, want one naming line 4", err)
	}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + filepath.Join(dir, "a")}}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("starting over an existing run: %v, want a refusal pointing at --resume", err)
	}
}

// TestValidationLossGoesDown trains every optimizer at a tuned rate on the
// demo task and checks that the validation loss falls below its value at step 0.
func TestValidationLossGoesDown(t *testing.T) {
	dir, cfg := demoConfig(t, 30)
	rates := map[string]string{"meazo": "0.005", "zo-sgd": "0.005", "zo-adam": "0.005", "radazo": "0.0002", "fzoo": "0.005"}
	for opt, lr := range rates {
		t.Run(opt, func(t *testing.T) {
			q := "1"
			if opt == "fzoo" {
				q = "2"
			}
			out := filepath.Join(dir, opt)
			if _, err := Run(Options{ConfigPath: cfg, Overrides: []string{"output.dir=" + out, "optimizer.name=" + opt, "optimizer.lr=" + lr,
				"optimizer.q=" + q, "train.eval_every=15", "eval.skip=true", "task.max_validation=16"}}); err != nil {
				t.Fatal(err)
			}
			var vals []float64
			for _, line := range readLines(t, filepath.Join(out, "metrics.jsonl")) {
				var rec struct {
					Kind    string
					ValLoss float64 `json:"val_loss"`
				}
				json.Unmarshal([]byte(line), &rec)
				if rec.Kind == "val" {
					vals = append(vals, rec.ValLoss)
				}
			}
			if len(vals) != 3 || !(vals[2] < vals[0]) {
				t.Errorf("validation losses at steps 0, 15, 30: %v; want the last below the first", vals)
			}
			t.Logf("%s lr %s: validation loss %v", opt, lr, vals)
		})
	}
}

func TestConfigDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != ConfigDoc() {
		t.Error("docs/CONFIG.md is stale: regenerate it with `go run ./cmd/meazo-train -config-doc > docs/CONFIG.md`")
	}
}

// TestEndToEndRealData trains on the real SST-2, SQuAD and XSum files with
// the real Qwen3 tokenizer and chat template, on a tiny random model of
// Qwen3's vocabulary: every optimizer, LoRA and prompt tuning, grouped and not.
func TestEndToEndRealData(t *testing.T) {
	tokDir := fixture.Dir(t, "fixtures", "tokenizers", "qwen3")
	dataDir := fixture.Dir(t, "data")
	modelDir := t.TempDir()
	cfg := &model.Config{Architecture: "Qwen3ForCausalLM", VocabSize: 151936, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
		BOSTokenID: -1, EOSTokenIDs: []int{151645}}
	if err := model.WriteRandom(modelDir, cfg, 5, 0.1); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
		b, err := os.ReadFile(filepath.Join(tokDir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(modelDir, f), b, 0o644)
	}
	tasks := map[string][]string{
		"sst2":  {"task.train=" + filepath.Join(dataDir, "sst2", "train.tsv"), "task.test=" + filepath.Join(dataDir, "sst2", "dev.tsv")},
		"squad": {"task.train=" + filepath.Join(dataDir, "squad", "train-v1.1-subset.json"), "task.test=" + filepath.Join(dataDir, "squad", "dev-v1.1.json"), "eval.max_new_tokens=4"},
		"xsum":  {"task.train=" + filepath.Join(dataDir, "xsum", "validation_subset.jsonl"), "task.validation=" + filepath.Join(dataDir, "xsum", "validation_subset.jsonl"), "task.test=" + filepath.Join(dataDir, "xsum", "test_subset.jsonl"), "eval.max_new_tokens=4"},
	}
	type run struct{ task, optimizer, adapter, extra string }
	var runs []run
	for _, o := range []string{"meazo", "zo-sgd", "zo-adam", "radazo", "fzoo"} {
		runs = append(runs, run{"sst2", o, "lora", ""}, run{"sst2", o, "lora", "adapter.grouped=true"}, run{"sst2", o, "prompt", ""})
	}
	runs = append(runs, run{"squad", "meazo", "lora", ""}, run{"xsum", "meazo", "prompt", ""})
	root := t.TempDir()
	for _, r := range runs {
		name := r.task + "-" + r.optimizer + "-" + r.adapter + strings.ReplaceAll(r.extra, "adapter.grouped=true", "-grouped")
		t.Run(name, func(t *testing.T) {
			q := "1"
			if r.optimizer == "fzoo" {
				q = "2"
			}
			set := append([]string{"model.path=" + modelDir, "task.name=" + r.task, "adapter.kind=" + r.adapter, "adapter.virtual_tokens=4",
				"optimizer.name=" + r.optimizer, "optimizer.q=" + q, "optimizer.lr=1e-3", "optimizer.eps=1e-3",
				"train.steps=3", "train.batch_size=2", "train.eval_every=3", "train.checkpoint_every=0",
				"task.max_train=16", "task.max_validation=4", "task.max_test=2", "task.max_length=700",
				"eval.base=true", "output.dir=" + filepath.Join(root, name)}, tasks[r.task]...)
			if r.extra != "" {
				set = append(set, r.extra)
			}
			s, err := Run(Options{ConfigPath: "", Overrides: set})
			if err != nil {
				t.Fatal(err)
			}
			if s.Diverged || s.StepsDone != 3 || s.BestValLoss == nil || len(s.Test["best"]) == 0 || len(s.Test["base"]) == 0 {
				t.Fatalf("summary: %+v", s)
			}
			for _, f := range []string{"config.yaml", "metrics.jsonl", "summary.json", "best/adapter_config.json", "last/adapter_model.safetensors", "checkpoint/state.json"} {
				if _, err := os.Stat(filepath.Join(root, name, f)); err != nil {
					t.Error(err)
				}
			}
			wantState := map[string]int64{"meazo": 8, "zo-sgd": 0, "fzoo": 0, "zo-adam": 8 * int64(s.TrainableParams), "radazo": 8 * int64(s.TrainableParams)}[r.optimizer]
			if r.optimizer == "meazo" && r.extra != "" {
				wantState = 8 * 2 // one scalar per layer group
			}
			if s.StateBytes != wantState {
				t.Errorf("optimizer state %d bytes, want %d", s.StateBytes, wantState)
			}
		})
	}
}

// TestScheduleInMetrics: each step's line in metrics.jsonl gives the rate
// the step moved with, η times the schedule's factor (HF's cosine with two
// warmup steps here: 0 at step 0, η at step 2, falling to 0 after the end).
func TestScheduleInMetrics(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	out := filepath.Join(dir, "cosine")
	set := []string{"train.eval_every=6", "eval.skip=true", "task.max_train=64", "task.max_validation=8",
		"optimizer.lr=0.04", "optimizer.schedule=cosine", "optimizer.warmup_steps=2", "output.dir=" + out}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
		t.Fatal(err)
	}
	sched := zo.Schedule{Kind: zo.CosineDecay, Warmup: 2, Steps: 6}
	var rates []float64
	for _, l := range readLines(t, filepath.Join(out, "metrics.jsonl")) {
		var line rundir.TrainLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Kind != rundir.KindTrain {
			continue
		}
		rates = append(rates, line.LR)
		if want := 0.04 * sched.Factor(len(rates)-1); line.LR != want {
			t.Errorf("step %d: lr %v, want %v", line.Step, line.LR, want)
		}
	}
	if len(rates) != 6 || rates[0] != 0 || rates[2] != 0.04 || !(rates[5] > 0 && rates[5] < rates[4]) {
		t.Errorf("rates %v: want 6 steps, 0 first, η at step 2, falling after", rates)
	}
}

// TestEarlyStop: with train.patience the run stops at the first validation
// that makes patience validations in a row without a better loss; it ends
// there as a finished run (train.steps lowered to that step and recorded
// with why in changes.jsonl and config.yaml, the test evaluated, the
// summary saying so), bit for bit the same when interrupted before the stop
// and resumed; --resume --set train.steps=N trains on with patience afresh.
func TestEarlyStop(t *testing.T) {
	dir, cfg := demoConfig(t, 40)
	// At 0.005, not the demo's 0.05: the validation losses stall early there.
	set := []string{"optimizer.lr=0.005", "train.eval_every=2", "train.checkpoint_every=4", "train.patience=1", "task.max_train=200", "task.max_validation=16", "eval.base=false"}
	whole := filepath.Join(dir, "whole")
	var log strings.Builder
	s, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), ": 1 validation without a loss below the best (") {
		t.Errorf("the log does not say the stop as patience 1 has it (1 validation, singular):\n%s", log.String())
	}
	// Where the stop should be, from the validation losses.
	var vals []rundir.ValLine
	for _, l := range readLines(t, filepath.Join(whole, "metrics.jsonl")) {
		var v rundir.ValLine
		if json.Unmarshal([]byte(l), &v) == nil && v.Kind == rundir.KindVal {
			vals = append(vals, v)
		}
	}
	want, best, since := 40, vals[0].ValLoss, 0
	for _, v := range vals[1:] {
		if since++; v.ValLoss < best {
			best, since = v.ValLoss, 0
		}
		if since == 1 {
			want = v.Step
			break
		}
	}
	if want == 40 {
		t.Fatalf("the validation losses %v never stall for a validation: choose another setting for this test", vals)
	}
	if s.StepsDone != want || s.Steps != want || s.Status != rundir.StatusDone || vals[len(vals)-1].Step != want || s.Test["best"] == nil {
		t.Errorf("summary: steps %d of %d, status %s, last validation at %d, test %v; want the run to end at step %d, tested",
			s.StepsDone, s.Steps, s.Status, vals[len(vals)-1].Step, s.Test, want)
	}
	if len(s.Changes) != 1 || s.Changes[0].Key != "train.steps" || s.Changes[0].Step != want || !strings.Contains(s.Changes[0].Reason, "train.patience 1") ||
		!strings.Contains(s.Message, fmt.Sprintf("stopped early after step %d of 40", want)) {
		t.Errorf("changes %+v, message %q", s.Changes, s.Message)
	}
	if c, err := Load(filepath.Join(whole, "config.yaml"), nil); err != nil || c.Train.Steps != want {
		t.Errorf("config.yaml: train.steps %v, %v; want %d", c, err, want)
	}
	// Interrupted before the stop and resumed: the same run.
	cut := filepath.Join(dir, "cut")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+cut), StopAfter: want - 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: cut}); err != nil {
		t.Fatal(err)
	}
	a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(cut, "metrics.jsonl"))
	if !slices.Equal(a, b) {
		t.Errorf("interrupted and resumed: metrics differ (%d and %d lines)", len(a), len(b))
	}
	// Training on from the stop with patience 2, counted afresh: the
	// resume's checkpoint (written as it applies --set) holds a count of 0,
	// not the stop's 1; the run stops at the second validation in a row
	// after the stop without a better loss.
	if _, err := Run(Options{Resume: whole, Overrides: []string{"train.steps=40", "train.patience=2"}, StopAfter: 1}); err != nil {
		t.Fatal(err)
	}
	var st checkpointState
	if b, err := os.ReadFile(filepath.Join(whole, "checkpoint", "state.json")); err != nil || json.Unmarshal(b, &st) != nil || st.Step != want || st.SinceBest != 0 {
		t.Errorf("the checkpoint of the resume that trains on: step %d, validations since the best %d (%v); want %d, 0", st.Step, st.SinceBest, err, want)
	}
	on, err := Run(Options{Resume: whole})
	if err != nil {
		t.Fatal(err)
	}
	wantOn, best, since := 40, vals[0].ValLoss, 0
	for _, l := range readLines(t, filepath.Join(whole, "metrics.jsonl")) {
		var v rundir.ValLine
		if json.Unmarshal([]byte(l), &v) != nil || v.Kind != rundir.KindVal || v.Step == 0 {
			continue
		}
		since++
		if v.ValLoss < best {
			best, since = v.ValLoss, 0
		}
		if v.Step == want {
			since = 0 // the stop: training on counts afresh
		}
		if v.Step > want && since == 2 {
			wantOn = v.Step
			break
		}
	}
	if on.StepsDone != wantOn || on.Status != rundir.StatusDone || wantOn <= want+2 {
		t.Errorf("--set train.steps=40 train.patience=2 after the stop at %d: %d steps done (%s), want %d", want, on.StepsDone, on.Status, wantOn)
	}
}

// TestEarlyStopEdges: an early stop in the warmup leaves a config that loads
// again and trains on; a process killed after the stop wrote config.yaml
// and changes.jsonl but before its checkpoint resumes (the lines are
// undone, the steps run again and stop at the same place); a full-parameter
// run stopped by a signal during the validation that stops it early ends,
// resumed, where the uninterrupted run does.
func TestEarlyStopEdges(t *testing.T) {
	dir, cfg := demoConfig(t, 40)
	base := []string{"train.eval_every=2", "train.checkpoint_every=4", "train.patience=1", "task.max_train=200", "task.max_validation=16", "eval.base=false"}
	run := func(name string, extra []string, o Options) (*Summary, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		o.ConfigPath, o.Overrides = cfg, append(append(slices.Clone(base), extra...), "output.dir="+out)
		s, err := Run(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s, out
	}
	t.Run("in the warmup", func(t *testing.T) {
		s, out := run("warmup", []string{"optimizer.schedule=linear", "optimizer.warmup_steps=30"}, Options{})
		if s.StepsDone >= 30 {
			t.Fatalf("stopped at %d, not in the warmup: choose another setting for this test", s.StepsDone)
		}
		if _, err := Load(filepath.Join(out, "config.yaml"), nil); err != nil {
			t.Errorf("config.yaml of a run stopped in its warmup: %v", err)
		}
		if on, err := Run(Options{Resume: out, Overrides: []string{"train.steps=40"}}); err != nil || on.StepsDone <= s.StepsDone {
			t.Errorf("training on: %v, %v", on, err)
		}
	})
	t.Run("killed before its checkpoint", func(t *testing.T) {
		whole, _ := run("whole", nil, Options{})
		want := whole.StepsDone
		_, cut := run("cut", nil, Options{StopAfter: want - 1})
		// What stopEarly writes before its checkpoint.
		line, _ := json.Marshal(ConfigChange{Step: want, Key: "train.steps", Old: 40, New: want, Time: "t", Reason: "train.patience 1: …"})
		f, err := os.OpenFile(filepath.Join(cut, rundir.ChangesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(line, '\n'))
		f.Close()
		c, err := Load(filepath.Join(cut, "config.yaml"), []string{fmt.Sprintf("train.steps=%d", want)})
		if err != nil {
			t.Fatal(err)
		}
		y, _ := c.YAML()
		os.WriteFile(filepath.Join(cut, "config.yaml"), y, 0o644)
		s, err := Run(Options{Resume: cut})
		if err != nil || s.StepsDone != want || len(s.Changes) != 1 {
			t.Errorf("resumed after a kill between config.yaml and the checkpoint: %+v, %v; want the stop at %d, one change", s, err, want)
		}
	})
	t.Run("full-parameter, stopped in that validation", func(t *testing.T) {
		full := []string{"adapter.kind=full", "optimizer.name=zo-sgd", "optimizer.lr=0.001", "eval.batch_size=4"}
		whole, _ := run("fullwhole", full, Options{})
		want := whole.StepsDone
		if want == 40 {
			t.Fatal("no early stop: choose another setting for this test")
		}
		var cut string
		stop := func() string { // a signal once step want has logged: its validation is cut short
			b, _ := os.ReadFile(filepath.Join(cut, "metrics.jsonl"))
			if strings.Contains(string(b), fmt.Sprintf(`"kind":"train","loss"`)) && strings.Contains(string(b), fmt.Sprintf(`"step":%d,"update_norm"`, want)) {
				return "SIGTERM"
			}
			return ""
		}
		cut = filepath.Join(dir, "fullcut")
		first, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(base), full...), "output.dir="+cut), Stop: stop})
		if err != nil || first.Status != rundir.StatusInterrupted {
			t.Fatalf("the stopped run: %+v, %v", first, err)
		}
		s, err := Run(Options{Resume: cut})
		if err != nil || s.StepsDone != want {
			t.Errorf("resumed: %d steps, %v; the uninterrupted run stopped at %d", s.StepsDone, err, want)
		}
	})
}

// TestRowWarnerCaps: a file's first malformed rows are named one by one,
// the rest once as counted only.
func TestRowWarnerCaps(t *testing.T) {
	var log strings.Builder
	warn := rowWarner(&log)
	for i := range maxRowWarnings + 5 {
		warn(&data.RowError{File: "f.jsonl", Row: fmt.Sprintf("line %d", i+1), Field: "label", Msg: "bad"})
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != maxRowWarnings+1 || !strings.Contains(lines[maxRowWarnings-1], fmt.Sprintf("line %d:", maxRowWarnings)) ||
		lines[maxRowWarnings] != "warning: more malformed rows in f.jsonl: counted below, not shown" {
		t.Errorf("%d lines, the last two %q", len(lines), lines[len(lines)-2:])
	}
}
