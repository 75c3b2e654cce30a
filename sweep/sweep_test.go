package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/internal/stopsig"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// The test binary doubles as a fake meazo-train (MEAZO_SWEEP_TEST_TRAINER=1):
// best validation loss (log10 lr + 2.2)² + 1 + seed/100, lowest near 6e-3;
// the run directory named in $FAKE_FAIL exits 1 without a summary. With
// MEAZO_SWEEP_TEST_PLOT=1 it is meazo-plot's helpers for scripts/sweep.sh.
func TestMain(m *testing.M) {
	if os.Getenv("MEAZO_SWEEP_TEST_PLOT") == "1" {
		if err := fakePlot(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake meazo-plot:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("MEAZO_SWEEP_TEST_TRAINER") == "1" {
		if err := fakeTrain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake trainer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "meazo-sweep-test")
	if err == nil {
		err = makeTestConfigs(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "the tests' configs:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fakeTrain(args []string) error {
	if len(args) > 0 && args[0] == "--check" {
		return fakeCheck(args[1:])
	}
	sets := map[string]string{}
	var out string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--out", "--resume":
			out = args[i+1]
		case "--set":
			k, v, _ := strings.Cut(args[i+1], "=")
			sets[k] = v
		case "--config":
		default:
			return fmt.Errorf("unexpected argument %q", args[i])
		}
	}
	if os.Getenv("FAKE_WAIT") == "1" { // run until a stop signal (SIGTERM, SIGUSR1, …), then stop as meazo-train does
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, stopsig.Stop()...)
		os.MkdirAll(out, 0o755)
		os.WriteFile(filepath.Join(out, "started"), nil, 0o644)
		<-ch
		os.Exit(3)
	}
	if f := os.Getenv("FAKE_GPU_LOG"); f != "" {
		lf, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintln(lf, os.Getenv("CUDA_VISIBLE_DEVICES"))
		lf.Close()
	}
	if f := os.Getenv("FAKE_FAIL"); f != "" && strings.HasSuffix(out, f) {
		return fmt.Errorf("failing %s as asked", out)
	}
	// As another process would: finish these runs (once) while this one runs.
	if dirs := os.Getenv("FAKE_ALSO_FINISH"); dirs != "" {
		os.Unsetenv("FAKE_ALSO_FINISH") // not again in the calls below
		for _, d := range strings.Split(dirs, ",") {
			if _, err := os.Stat(filepath.Join(d, "summary.json")); err == nil {
				continue
			}
			var lr, seed string
			fmt.Sscanf(strings.ReplaceAll(filepath.Base(d), "_", " "), "lr=%s seed=%s", &lr, &seed)
			if err := fakeTrain([]string{"--set", "optimizer.name=zo-sgd", "--set", "optimizer.lr=" + lr, "--set", "train.seed=" + seed, "--out", d}); err != nil {
				return err
			}
		}
	}
	if sets["optimizer.lr"] == "" { // --resume: the rate and seed from the directory's name
		var lr, seed string
		if _, err := fmt.Sscanf(strings.ReplaceAll(filepath.Base(out), "_", " "), "lr=%s seed=%s", &lr, &seed); err != nil {
			return fmt.Errorf("%s: %w", out, err)
		}
		sets["optimizer.lr"], sets["train.seed"], sets["optimizer.name"] = lr, seed, "meazo"
	}
	lr, err := strconv.ParseFloat(sets["optimizer.lr"], 64)
	if err != nil {
		return err
	}
	// As a meazo-train refused by the run.lock of another process's, which
	// has finished the run by the time this one's exit is read.
	if f := os.Getenv("FAKE_TAKEN"); f != "" && strings.HasSuffix(out, f) {
		os.Unsetenv("FAKE_TAKEN")
		if err := fakeTrain(args); err != nil {
			return err
		}
		return fmt.Errorf("run directory %s is in use by another process", out)
	}
	seed, _ := strconv.Atoi(sets["train.seed"])
	loss := math.Pow(math.Log10(lr)+2.2, 2) + 1 + float64(seed)/100
	b, _ := json.Marshal(map[string]any{"optimizer": sets["optimizer.name"], "lr": lr, "seed": seed, "steps": 10, "steps_done": 10,
		"status": "done", "best_val_loss": loss, "last_val_loss": loss + 0.1, "model": "m", "task": "sst2", "adapter": "lora"})
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, ".summary.tmp"), b, 0o644); err != nil {
		return err
	}
	return os.Rename(filepath.Join(out, ".summary.tmp"), filepath.Join(out, "summary.json")) // atomic, as meazo-train's
}

func writeStudy(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "study.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadStudyErrors(t *testing.T) {
	base := "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n"
	for _, tc := range []struct{ name, body, want string }{
		{"unknown top key", "seed: [1]\n" + base, `study.yaml:1: unknown key "seed" (did you mean "seeds"?)`},
		{"unknown nested key", base + "executor:\n  slurm:\n    partiton: gpu\n", `study.yaml:6: unknown key "executor.slurm.partiton" (did you mean "executor.slurm.partition"?)`},
		{"unknown key in a list", "out: x\nexperiments:\n  - {name: e, confg: c.yaml}\n", `study.yaml:3: unknown key "experiments.0.confg" (did you mean "experiments.0.config"?)`},
		{"no out", "experiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", "out: the study directory is required"},
		{"bad optimizer", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [sgd]}\n", `study.yaml:3: experiments.0.optimizers: "sgd"`},
		// MeZO is ZO-SGD, not the nearest name (meazo): as meazo-train's optimizer.name mezo.
		{"mezo for an optimizer", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [zo-adam, MeZO]}\n", `study.yaml:3: experiments.0.optimizers: "MeZO": want meazo, zo-sgd, zo-adam, radazo or fzoo (MeZO's optimizer is zo-sgd; meazo is MEAZO)`},
		{"sweep key in set", "set: [optimizer.lr=1]\n" + base, `study.yaml:1: set: "optimizer.lr=1": the sweep sets optimizer.lr itself`},
		{"bad executor", base + "executor: {kind: pbs}\n", `study.yaml:4: executor.kind: "pbs"`},
		{"bad name", "out: x\nexperiments:\n  - {name: a/b, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", `experiments.0.name: "a/b"`},
		{"placeholder needs optimizers", "out: x\nexperiments:\n  - {name: e, config: 'c_{optimizer}.yaml'}\n", "required when config names {optimizer}"},
		{"wrong type", "seeds: abc\n" + base, `study.yaml:1: seeds: want a list, got "abc"`},
		{"negative seed", "seeds: [0, -1]\n" + base, "study.yaml:1: seeds.1: want a non-negative whole number, got -1"},
		{"rate not a number", "coarse: [1e-2, abc]\n" + base, `study.yaml:1: coarse.1: want a number, got "abc"`},
		{"fine not a bool", base + "fine: maybe\n", `study.yaml:4: fine: want true or false, got "maybe"`},
		{"experiment seed a fraction", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, seeds: [1.5]}\n", "study.yaml:3: experiments.0.seeds.0: want a non-negative whole number, got 1.5"},
		{"parallel out of range", base + "executor: {parallel: 99999999999999999999}\n", "study.yaml:4: executor.parallel: want a whole number of at most 2147483647, got 1e+20"},
		{"name a mapping", "name: {a: 1}\n" + base, "study.yaml:1: name: want a single value, got map[a:1]"},
		{"executor a list", base + "executor: [local]\n", "study.yaml:4: executor: want a mapping of keys, got [local]"},
		{"infinite rate", "coarse: [.inf, 1e-2]\n" + base, "study.yaml:1: coarse: +Inf is not a positive learning rate"},
		{"only an infinite rate", "coarse: [.inf]\n" + base, "coarse: +Inf is not a positive learning rate"},
		{"negative gpu", base + "executor: {gpus: [0, -1]}\n", "executor.gpus: -1 is not a GPU index"},
		{"demo is out", "demo: x/\n" + base, "study.yaml:1: demo: x/ is out, or holds it: the demo writes its model/ and data/ there; give it a directory of its own, e.g. x/demo-data"},
		{"demo holds out", "demo: .\n" + base, "demo: . is out, or holds it"},
		{"gpu twice", base + "executor: {gpus: [0, 1, 0]}\n", "study.yaml:4: executor.gpus: 0 given twice (two runs at a time would share it)"},
		{"optimizer twice", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo, zo-sgd, meazo]}\n", `experiments.0.optimizers: "meazo" given twice`},
		{"empty seeds", "seeds: []\n" + base, "study.yaml:1: seeds: an empty list"},
		{"empty coarse", "coarse: []\n" + base, "study.yaml:1: coarse: an empty list"},
		{"empty optimizers", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: []}\n", "study.yaml:3: experiments.0.optimizers: an empty list"},
		{"negative slurm value", base + "executor:\n  kind: slurm\n  slurm: {partition: gpu, time: '1:00:00', max_array_size: -3}\n", "study.yaml:6: executor.slurm.max_array_size must be positive, got -3"},
		{"bad variant name", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: 'β1 0'}]}\n", `experiments.0.variants.0.name: "β1 0"`},
		{"variant twice", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: a}, {name: a}]}\n", `study.yaml:3: experiments.0.variants.1.name: "a" used twice`},
		{"sweep key in a variant", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: a, set: [train.seed=3]}]}\n", "experiments.0.variants.0.set: \"train.seed=3\": the sweep sets train.seed itself"},
		{"variant labels alike", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: a, label: b}, {name: b}]}\n", `experiments.0.variants.1.label: "b" names another variant too`},
		{"empty variants", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: []}\n", "experiments.0.variants: an empty list"},
		{"sweep names collide", "out: x\nexperiments:\n  - {name: a, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: b_meazo}]}\n  - {name: a_meazo_b, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", "two sweeps are named a_meazo_b_meazo"},
		{"empty experiment seeds", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], seeds: []}\n", "study.yaml:3: experiments.0.seeds: an empty list"},
		// Mistakes the checks after the YAML's find are named by their line too
		// (the key's, or the list entry's), in a study written in block style.
		{"experiment name twice", "out: x\nexperiments:\n  - name: e\n    config: ../configs/qwen06b_sst2_lora_meazo.yaml\n    optimizers: [meazo]\n  - name: f\n    config: ../configs/qwen06b_sst2_lora_meazo.yaml\n    optimizers: [meazo]\n  - name: e\n    config: ../configs/qwen06b_sst2_lora_meazo.yaml\n    optimizers: [zo-sgd]\n", `study.yaml:9: experiments.2.name: "e" used twice`},
		{"seed twice", "out: x\nseeds:\n  - 0\n  - 1\n  - 0\n" + base[len("out: x\n"):], "study.yaml:2: seeds: 0 given twice"},
		{"experiment seed twice", "out: x\nexperiments:\n  - name: e\n    config: ../configs/qwen06b_sst2_lora_meazo.yaml\n    optimizers: [meazo]\n    seeds: [3, 3]\n", "study.yaml:6: experiments.0.seeds: 3 given twice"},
		{"rate twice", "out: x\n\ncoarse: [1e-2, 0.01]\n" + base[len("out: x\n"):], "study.yaml:3: coarse: 0.01 given twice"},
		{"negative rate", "coarse: [1e-2, -5e-2]\n" + base, "study.yaml:1: coarse: -0.05 is not a positive learning rate"},
		{"out a file", "out: sweep_test.go\n" + base[len("out: x\n"):], "study.yaml:1: out: sweep_test.go is a file, not a directory"},
		{"out under a file", "out: sweep_test.go/runs\n" + base[len("out: x\n"):], "study.yaml:1: out: sweep_test.go/runs lies under sweep_test.go, which is a file, not a directory"},
		{"demo a file", "demo: sweep_test.go\n" + base, "study.yaml:1: demo: sweep_test.go is a file, not a directory"},
		{"key without a value", base + "coarse:\n", "study.yaml:4: coarse has no value"},
		{"null in an experiment", "out: x\nexperiments:\n  - {name: e, config: ~, optimizers: [meazo]}\n", "study.yaml:3: experiments[0].config has no value"},
		{"second document", base + "---\nout: y\n", "study.yaml:4: a second YAML document"},
		// The name goes into the Slurm scripts (#SBATCH --job-name, a comment): a line break in it ran as a command.
		{"name with a space", "name: my study\n" + base, `name: "my study": want letters, digits`},
		{"name with a line break", "name: \"x\\ntouch /tmp/pwned\"\n" + base, `name: "x\ntouch /tmp/pwned": want letters, digits`},
		{"a meazo-train config", "model: {path: m}\ntask: {name: sst2}\noptimizer: {name: meazo}\n", "a meazo-train config (model:, task:, optimizer:), not a study file"},
		{"label with a bar", "out: x\nexperiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo], variants: [{name: a, label: 'q | 1'}]}\n", `experiments.0.variants.0.label: "q | 1": no '|'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeStudy(t, tc.body)
			_, err := LoadStudy(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, p, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %q, want one line", err)
			}
		})
	}
}

// TestLocalStudy runs a study with the fake trainer: stage 1, the fine grid
// around the coarse η*, a failing run that does not block stage 2, then
// resume retrying it, and sweep.json.
func TestLocalStudy(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	t.Setenv("FAKE_FAIL", "lr=1e-3_seed=1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0, 1]
coarse: [1e-3, 5e-3, 1e-2, 5e-2]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd]}
executor: {kind: local, parallel: 2, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err = st.RunLocal(context.Background(), ModeRun, &log)
	if err == nil || !strings.Contains(err.Error(), "2 runs failed") {
		t.Fatalf("run: %v, want 2 failed runs\n%s", err, log.String())
	}
	// Each run's line says how far the study is (two runs at once: which
	// count the first line gives depends on which ends first).
	if !regexp.MustCompile(` done \([12] of 16 runs have a result; stage 2 of 2 sweeps still to come\)\n`).MatchString(log.String()) {
		t.Errorf("no progress in the log:\n%s", log.String())
	}
	ss, err := st.Sweeps()[0].State()
	if err != nil {
		t.Fatal(err)
	}
	if got := ss.States[filepath.Join(dir, "out/e_meazo/lr=1e-3_seed=1")].Status; got != StatusFailed {
		t.Fatalf("failed run's status %q", got)
	}
	var fine []string
	for _, r := range ss.Stage2 {
		if r.Seed == 0 {
			fine = append(fine, r.LR)
		}
	}
	if ss.CoarseEta != 5e-3 || strings.Join(fine, " ") != "2e-3 3e-3 4e-3 6e-3 7e-3 8e-3 9e-3" {
		t.Fatalf("coarse η* %g, fine grid %v", ss.CoarseEta, fine)
	}
	sw := readSweep(t, filepath.Join(dir, "out/e_meazo/sweep.json"))
	if sw.EtaStar != 6e-3 || sw.Rates[0].FailedSeeds != 1 || sw.Rates[0].MeanBestVal != nil {
		t.Fatalf("sweep.json: η* %g, first rate %+v", sw.EtaStar, sw.Rates[0])
	}
	var status bytes.Buffer
	if err := st.Status(&status, false); err != nil || !strings.Contains(status.String(), "1 failed") {
		t.Fatalf("status: %v\n%s", err, status.String())
	}
	t.Setenv("FAKE_FAIL", "")
	log.Reset()
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil || strings.Contains(log.String(), "start") {
		t.Fatalf("run again: %v (it must start nothing)\n%s", err, log.String())
	}
	// ... and says so, with what is left to do.
	if !regexp.MustCompile(`meazo-sweep: nothing new to run \(\d+ of \d+ runs have a result; meazo-sweep resume retries failed runs`).MatchString(log.String()) {
		t.Errorf("run again: the log does not say that nothing was left to run, and why:\n%s", log.String())
	}
	if err := st.RunLocal(context.Background(), ModeResume, &log); err != nil || strings.Count(log.String(), "start") != 2 {
		t.Fatalf("resume: %v (it must start the 2 failed runs)\n%s", err, log.String())
	}
	if sw := readSweep(t, filepath.Join(dir, "out/e_meazo/sweep.json")); sw.Rates[0].FailedSeeds != 0 || sw.EtaStar != 6e-3 {
		t.Fatalf("after resume: %+v", sw.Rates[0])
	}
	log.Reset()
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil || !regexp.MustCompile(`meazo-sweep: nothing new to run \((\d+) of (\d+) runs have a result\)\n`).MatchString(log.String()) {
		t.Errorf("run once done: %v, want it to say nothing was left to run\n%s", err, log.String())
	}
}

// TestLocalStudyStopped: a run an earlier session left with a checkpoint
// and no end (a crash: unfinished) holds its sweep back. run names it,
// exits as interrupted and writes no sweep.json (η* is not chosen from
// the rest); resume continues it and the sweep completes.
func TestLocalStudyStopped(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 5e-3, 1e-2]
fine: false
experiments:
  - {name: e, config: `+testConfigs+`/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}
executor: {kind: local, parallel: 2, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, "out/e_meazo/lr=5e-3_seed=0") // the best rate
	writeFile(t, filepath.Join(crashed, rundir.CheckpointDir, rundir.StateFile), "{}")
	var log bytes.Buffer
	err = st.RunLocal(context.Background(), ModeRun, &log)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), crashed) || !strings.Contains(log.String(), crashed+" is unfinished") {
		t.Fatalf("run: %v, want an interruption naming %s\n%s", err, crashed, log.String())
	}
	sweepFile := filepath.Join(dir, "out/e_meazo", SweepFile)
	if _, err := os.Stat(sweepFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sweep.json written with a run unfinished (%v)", err)
	}
	var status bytes.Buffer
	if err := st.Status(&status, false); err != nil || strings.Contains(status.String(), "complete") {
		t.Fatalf("status: %v\n%s", err, status.String())
	}
	log.Reset()
	if err := st.RunLocal(context.Background(), ModeResume, &log); err != nil || !strings.Contains(log.String(), "start "+crashed+" (stage 1, resume)") {
		t.Fatalf("resume: %v\n%s", err, log.String())
	}
	if sw := readSweep(t, sweepFile); sw.EtaStar != 5e-3 {
		t.Fatalf("after resume: η* %g", sw.EtaStar)
	}
}

func readSweep(t *testing.T, path string) Sweep {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sw Sweep
	if err := json.Unmarshal(b, &sw); err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestStudyDocIsCurrent checks docs/SWEEPS.md holds StudyDoc's table.
func TestStudyDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../docs/SWEEPS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<!-- study-doc -->\n"+StudyDoc()+"<!-- /study-doc -->") {
		t.Fatal("docs/SWEEPS.md: the study file's key table is stale: paste the output of meazo-sweep doc between the study-doc markers")
	}
}

// TestShippedStudiesLoad loads configs/studies/*.yaml and checks the paper's
// study has its 95 sweeps (16 experiments of Llama-3.2-1B and Qwen3-0.6B, 3
// of Qwen3-8B, 5 optimizers each), each config present.
func TestShippedStudiesLoad(t *testing.T) {
	paths, _ := filepath.Glob("../configs/studies/*.yaml")
	if len(paths) < 2 {
		t.Fatalf("found %v", paths)
	}
	for _, p := range paths {
		st, err := LoadStudy(p)
		if err != nil {
			t.Fatal(err)
		}
		// The paper's variant figures: ZO-Adam's β1 (Figure 18) and MEAZO's
		// noise (Figure 19), each variant a sweep of its own.
		if want, ok := map[string]int{"zo-adam-beta1.yaml": 3 * 2, "meazo-noise.yaml": 3 * 4}[filepath.Base(p)]; ok {
			if n := len(st.Sweeps()); n != want {
				t.Errorf("%s: %d sweeps, want %d", p, n, want)
			}
			for _, sp := range st.Sweeps() {
				if sp.Variant == nil || !slices.Contains(sp.Stage1()[0].sets(), sp.Variant.Set[0]) {
					t.Errorf("%s: sweep %s lacks its variant's --set", p, sp.Name)
				}
			}
		}
		// full-parameter: 2 models × 3 optimizers; the Ministral appendix: 5
		// optimizers on SQuAD LoRA; the ViT appendix: 5 on Pets LoRA. Each
		// config present.
		if want, ok := map[string]int{"full.yaml": 6, "ministral.yaml": 5, "vit.yaml": 5}[filepath.Base(p)]; ok {
			if n := len(st.Sweeps()); n != want {
				t.Errorf("%s: %d sweeps, want %d", p, n, want)
			}
			for _, sp := range st.Sweeps() {
				if _, err := os.Stat(filepath.Join("..", sp.Config())); err != nil {
					t.Errorf("%s: %v", sp.Name, err)
				}
			}
		}
		if filepath.Base(p) != "paper.yaml" {
			continue
		}
		sweeps := st.Sweeps()
		if len(sweeps) != 95 || len(sweeps[0].Stage1()) != 33 {
			t.Fatalf("paper study: %d sweeps, %d stage-1 runs each; want 95 and 33", len(sweeps), len(sweeps[0].Stage1()))
		}
		qwen8b := 0
		for _, sp := range sweeps {
			if _, err := os.Stat(filepath.Join("..", sp.Config())); err != nil {
				t.Errorf("%s: %v", sp.Name, err)
			}
			if strings.HasPrefix(sp.Name, "qwen3-8b_") {
				qwen8b++
			}
		}
		if qwen8b != 3*5 {
			t.Errorf("paper study: %d Qwen3-8B sweeps, want 15 (3 tasks × 5 optimizers, Table 1)", qwen8b)
		}
	}
}

// TestLocalInterrupt cancels a local study while its runs train: each gets
// SIGTERM, exits 3, is recorded as interrupted, and nothing new starts.
func TestLocalInterrupt(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	t.Setenv("FAKE_WAIT", "1")
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2, 1e-1]\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 2, trainer: %s}\n", dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 200 {
			a, _ := filepath.Glob(filepath.Join(dir, "out/e_meazo/*/started"))
			if len(a) == 2 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	var log bytes.Buffer
	if err := st.RunLocal(ctx, ModeRun, &log); err != ErrInterrupted {
		t.Fatalf("got %v, want ErrInterrupted\n%s", err, log.String())
	}
	ss, err := st.Sweeps()[0].State()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ss.Stage1 {
		got = append(got, ss.States[r.Dir].Status)
	}
	if strings.Join(got, " ") != "interrupted interrupted new" {
		t.Fatalf("states %v, want two interrupted runs and one never started\n%s", got, log.String())
	}
	// Stopped before their first checkpoint, the runs are not said to
	// have one: resume starts them again.
	if want := "interrupted before its first checkpoint (meazo-sweep resume starts it again)"; strings.Count(log.String(), want) != 2 || strings.Contains(log.String(), "checkpointed") {
		t.Errorf("the log does not say %q of each run:\n%s", want, log.String())
	}
	if d := ss.States[ss.Stage1[0].Dir].Detail; !strings.Contains(d, "before its first checkpoint") {
		t.Errorf("status detail %q", d)
	}
}

// TestLocalGPUs gives each run one of executor.gpus as CUDA_VISIBLE_DEVICES,
// one run per GPU at a time.
func TestLocalGPUs(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	t.Setenv("FAKE_GPU_LOG", filepath.Join(dir, "gpus"))
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-3, 1e-2]\nfine: false\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\nexecutor: {gpus: [3, 5], trainer: %s}\n", dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Executor.Parallel != 2 {
		t.Fatalf("parallel %d, want one per GPU", st.Executor.Parallel)
	}
	var log bytes.Buffer
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "gpus"))
	lines := strings.Fields(string(b))
	if len(lines) != 4 {
		t.Fatalf("GPUs seen: %q", lines)
	}
	for _, l := range lines {
		if l != "3" && l != "5" {
			t.Fatalf("GPUs seen: %q", lines)
		}
	}
}

// TestLocalStudyReadsEachRunFewTimes: the local executor reads a sweep's
// run directories again only when one of its runs has ended, so a study's
// directory reads grow with its number of runs, not with its square (a
// paper study is 5,130 runs).
func TestLocalStudyReadsEachRunFewTimes(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0, 1, 2]
coarse: [1e-4, 1e-3, 5e-3, 1e-2, 5e-2]
experiments:
  - {name: a, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd, zo-adam]}
  - {name: b, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd, zo-adam]}
executor: {kind: local, parallel: 1, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	before := stateReads.Load()
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	reads, runs := stateReads.Load()-before, int64(strings.Count(log.String(), "meazo-sweep: start "))
	if runs != 6*(15+21) {
		t.Fatalf("%d runs started, want %d\n%s", runs, 6*(15+21), log.String())
	}
	// Per run: the reads of its sweep after each of its sweep's runs ends
	// (a sweep has 36 runs), one before it starts, the final reports'.
	if limit := runs * (36 + 4); reads > limit {
		t.Fatalf("%d directory reads for %d runs, want at most %d", reads, runs, limit)
	}
	t.Logf("%d directory reads for %d runs", reads, runs)
}

// TestLocalStudyRunsTakenElsewhere: runs another process finished after the
// executor last read their sweep are not started again (each run is read
// once more just before it starts), and that sweep's stage 2, ready now, is
// started even when nothing else runs here (the other sweep waits for a
// run another process holds).
func TestLocalStudyRunsTakenElsewhere(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 1e-2]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd]}
executor: {kind: local, parallel: 1, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(dir, "out/e_meazo/lr=1e-2_seed=0")
	os.MkdirAll(held, 0o755)
	lock, err := train.LockDir(held) // another process trains it
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	other := []string{filepath.Join(dir, "out/e_zo-sgd/lr=1e-3_seed=0"), filepath.Join(dir, "out/e_zo-sgd/lr=1e-2_seed=0")}
	t.Setenv("FAKE_ALSO_FINISH", strings.Join(other, ","))
	var log bytes.Buffer
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	for _, d := range other {
		if strings.Contains(log.String(), "start "+d+" ") {
			t.Errorf("%s, finished by another process, was started again\n%s", d, log.String())
		}
	}
	if !strings.Contains(log.String(), "out/e_zo-sgd/lr=") || !strings.Contains(log.String(), "(stage 2") {
		t.Errorf("e_zo-sgd's stage 2 was not started\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out/e_zo-sgd", SweepFile)); err != nil {
		t.Errorf("e_zo-sgd has no sweep.json: %v\n%s", err, log.String())
	}
}

// TestLocalStudyRunStartedTwice: a run this process started at the same
// moment as another meazo-sweep, whose meazo-train won its run.lock (and
// finished it), is neither a failure nor given this process's exit status.
func TestLocalStudyRunStartedTwice(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	t.Setenv("FAKE_TAKEN", "lr=1e-2_seed=0")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 1e-2]
fine: false
experiments:
  - {name: e, config: `+testConfigs+`/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}
executor: {kind: local, parallel: 1, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	taken := filepath.Join(dir, "out/e_meazo/lr=1e-2_seed=0")
	if !strings.Contains(log.String(), taken+" was started at the same moment by another process") {
		t.Errorf("the log does not say so:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(taken, ExitFile)); err == nil {
		t.Error("the run another process owns got this process's exit status")
	}
	if _, err := os.Stat(filepath.Join(dir, "out/e_meazo", SweepFile)); err != nil {
		t.Errorf("no sweep.json: %v", err)
	}
}

// TestLocalStudySweepJSONUnwritable: a sweep.json that cannot be written (a
// full disk, a directory in its place) is an error of the session (exit
// status 1), not a line in the log after which run reports success.
func TestLocalStudySweepJSONUnwritable(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 1e-2]
fine: false
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo, zo-sgd]}
executor: {kind: local, parallel: 1, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "out", "e_meazo", "sweep.json", "a user's file")
	if err := os.MkdirAll(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	err = st.RunLocal(context.Background(), ModeRun, &log)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "out", "e_meazo", "sweep.json")) || errors.Is(err, ErrInterrupted) {
		t.Fatalf("run: %v, want an error naming e_meazo's sweep.json\n%s", err, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "e_zo-sgd", "sweep.json")); err != nil {
		t.Errorf("the other sweep's sweep.json: %v (one sweep's failure must not hold back the others)", err)
	}
	if _, err := os.Stat(blocker); err != nil {
		t.Errorf("what was in the way: %v", err)
	}
}

// TestRunList: an error names the runs it is about on one line, the first
// few and then how many more, not a Go slice of thousands.
func TestRunList(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more (meazo-sweep status lists them)"},
	} {
		if got := runList(tc.dirs); got != tc.want {
			t.Errorf("runList(%q) = %q, want %q", tc.dirs, got, tc.want)
		}
	}
	if got := (&stoppedError{[]string{"a"}}).Error(); !strings.HasPrefix(got, "1 run stopped before") || !strings.HasSuffix(got, "continues them: a") {
		t.Errorf("one stopped run: %q", got)
	}
}

// otherStudysRuns runs a study of train.steps 20 (stage 1 only) on dir's
// out, with the config.yaml meazo-train would write in each run directory
// (the test's trainer writes none), and returns a study of the same out
// and grid whose runs get train.steps 30, with a stage 2 if fine: what a
// second study started at the same moment on the same out meets.
func otherStudysRuns(t *testing.T, dir string, fine bool) *Study {
	t.Helper()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	study := func(steps int, fine bool) *Study {
		p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 1e-2]
fine: %t
set: [train.steps=%d]
experiments:
  - {name: e, config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml", optimizers: [meazo]}
executor: {kind: local, parallel: 1, trainer: %s}
`, dir, fine, steps, self))
		st, err := LoadStudy(p)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var log bytes.Buffer
	first := study(20, false)
	if err := first.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	sp := first.Sweeps()[0]
	ss, err := sp.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ss.Runs() {
		c, err := train.Load(sp.Config(), append(r.sets(), "output.dir="+r.Dir))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := c.YAML()
		writeFile(t, filepath.Join(r.Dir, rundir.ConfigFile), string(y))
	}
	return study(30, fine)
}

// TestFinishRechecksSettings: a study started at the same moment as
// another on the same out (with other settings) checked the runs'
// settings only before its first run, so both could write a sweep.json
// chosen from a mix of the two studies' runs. The check runs again
// before a sweep.json is written.
func TestFinishRechecksSettings(t *testing.T) {
	dir := t.TempDir()
	other := otherStudysRuns(t, dir, false)
	sweepJSON := filepath.Join(dir, "out/e_meazo", SweepFile)
	if err := os.Remove(sweepJSON); err != nil {
		t.Fatal(err)
	}
	// The other study reaches its end with these runs as its own.
	var log bytes.Buffer
	err := other.finishSweeps(&log)
	if err == nil || !strings.Contains(log.String(), "sweep.json not written") {
		t.Errorf("finish over another study's runs: %v\n%s", err, log.String())
	}
	if _, err := os.Stat(sweepJSON); err == nil {
		t.Errorf("a sweep.json was written from runs of other settings")
	}
}

// TestStage2RechecksSettings: for the same reason, a study whose stage 1
// was run (in part) by another study's settings does not start a stage 2
// whose grid was chosen from them, and says why at its end.
func TestStage2RechecksSettings(t *testing.T) {
	other := otherStudysRuns(t, t.TempDir(), true)
	var log bytes.Buffer
	x, err := other.newLocalExecutor(ModeRun, &log) // past Prepare, which the other study's runs were not there for yet
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.startReady(); err != nil {
		t.Fatal(err)
	}
	if len(x.running) != 0 || !strings.Contains(log.String(), "e_meazo: stage 2 not started: ") || !strings.Contains(log.String(), "train.steps 20 -> 30") {
		t.Fatalf("stage 2 over another study's stage 1: %d started\n%s", len(x.running), log.String())
	}
	if err := x.finish(); err == nil || !strings.Contains(err.Error(), "stage 2 not started: sweep e_meazo: ") {
		t.Errorf("finish: %v", err)
	}
}
