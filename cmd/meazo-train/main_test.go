package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// TestCarelessInvocations: nothing but --demo runs the demo, and a mistaken
// command line is one clear error.
func TestCarelessInvocations(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // "" = accepted; "usage" = usage text, exit 2
	}{
		{"no flags", nil, "usage"},
		{"-h", []string{"-h"}, "help"},
		{"empty --resume", []string{"--resume", ""}, "--resume is given an empty value"},
		{"empty --config", []string{"--config="}, "--config is given an empty value"},
		{"empty --out", []string{"--config", "c.yaml", "--out", " "}, "--out is given an empty value"},
		{"--out without --config", []string{"--out", "runs/x"}, "need --config"},
		{"--set without --config", []string{"--set", "optimizer.lr=1"}, "need --config"},
		{"--resume with --config", []string{"--resume", "r", "--config", "c.yaml"}, "--config is not allowed"},
		{"--resume with --out", []string{"--resume", "r", "--out", "x"}, "not allowed"},
		{"--demo with --config", []string{"--demo", "--config", "c.yaml"}, "does not take --config"},
		{"--demo with --out", []string{"--demo", "--out", "x"}, "not --out"},
		{"--demo with output.dir", []string{"--demo", "--set", "output.dir=x"}, "--set output.dir: --demo writes into --demo-dir (now demo-run)"},
		{"--demo with optimizer.name", []string{"--demo", "--set", "optimizer.name=fzoo"}, "--set optimizer.name: --demo runs MEAZO, ZO-SGD and ZO-Adam, one each (train another"},
		{"--demo-dir without --demo", []string{"--demo-dir", "d"}, "belong to --demo"},
		{"argument", []string{"--config", "c.yaml", "extra"}, `unexpected argument "extra"`},
		{"the config as an argument", []string{"configs/c.yaml", "--set", "train.steps=3"}, `unexpected argument "configs/c.yaml" (flags only: the config is --config configs/c.yaml; see -h)`},
		{"help argument", []string{"help"}, "help"},
		{"--set without =", []string{"--config", "c.yaml", "--set", "train.steps"}, `--set "train.steps": want key=value, e.g. --set optimizer.lr=2e-4 (see -h)`},
		{"--set without a key", []string{"--config", "c.yaml", "--set", " =5"}, `--set " =5": want key=value`},
		{"negative --seed", []string{"--config", "c.yaml", "--seed", "-1"}, "--seed -1: want a whole number"},
		{"--seed and train.seed", []string{"--config", "c.yaml", "--seed", "1", "--set", "train.seed=2"}, "--set train.seed: --seed sets it too: give one of them"},
		{"--out and output.dir", []string{"--config", "c.yaml", "--set", "output.dir=b", "--out", "a"}, "--set output.dir: --out sets it too: give one of them"},
		{"--backend and model.backend", []string{"--config", "c.yaml", "--backend", "cpu", "--set", " model.backend =cuda"}, "--set model.backend: --backend sets it too: give one of them"},
		{"--demo --backend and model.backend", []string{"--demo", "--backend", "cpu", "--set", "model.backend=cpu"}, "--set model.backend: --backend sets it too"},
		{"--backend gpu", []string{"--config", "c.yaml", "--backend", "gpu"}, `--backend: unknown backend "gpu" (have auto, cuda, cpu)`},
		{"negative --demo-steps", []string{"--demo", "--demo-steps", "-5"}, "--demo-steps must be at least 0, got -5"},
		{"negative --threads", []string{"--config", "c.yaml", "--threads", "-1"}, "--threads -1: want a whole number"},
		{"--threads without --config", []string{"--threads", "4"}, "need --config"},
		{"--threads and train.threads", []string{"--config", "c.yaml", "--threads", "1", "--set", "train.threads=2"}, "--set train.threads: --threads sets it too: give one of them"},
		{"--bf16-weights and model.bf16_weights", []string{"--config", "c.yaml", "--bf16-weights", "--set", "model.bf16_weights=false"}, "--set model.bf16_weights: --bf16-weights sets it too"},
		{"--check alone", []string{"--check"}, "--check tries a new run's start: it takes --config"},
		{"--check --resume", []string{"--check", "--resume", "r"}, "a --resume needs no check"},
		{"--check --demo", []string{"--check", "--demo"}, "--check tries a new run's start from --config; it does not take --demo (to check a run of the demo's config: --check --config demo-run/demo.yaml)"},
		{"check", []string{"--check", "--config", "c.yaml", "--out", "o"}, ""},
		{"--check --config-doc", []string{"--check", "--config-doc"}, "--config-doc and --version print and exit"},
		{"--check --version", []string{"--version", "--check"}, "--config-doc and --version print and exit"},
		{"config", []string{"--config", "c.yaml", "--seed", "3", "--out", "o"}, ""},
		{"shorthands and other --set", []string{"--config", "c.yaml", "--seed", "3", "--out", "o", "--backend", "cpu", "--set", "train.seed_x=1", "--set", "train.steps=2"}, ""},
		{"resume", []string{"--resume", "r", "--set", "train.steps=9"}, ""},
		{"demo", []string{"--demo", "--demo-dir", "d", "--set", "train.batch_size=4"}, ""},
		{"config-doc", []string{"--config-doc"}, ""},
		{"version", []string{"--version"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCmdline(tc.args, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "usage" && !errors.Is(err, errUsage):
				t.Fatalf("got %v, want the usage (exit 2)", err)
			case tc.want == "help" && !errors.Is(err, errHelp):
				t.Fatalf("got %v, want the help (exit 0)", err)
			case tc.want != "" && tc.want != "usage" && tc.want != "help" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if err == nil && c.demo != (tc.name == "demo") {
				t.Errorf("demo = %v", c.demo)
			}
		})
	}
	if c, _ := parseCmdline([]string{"-version"}, io.Discard); c == nil || !c.version {
		t.Errorf("-version: %+v, want the version asked for", c)
	}
	c, _ := parseCmdline([]string{"--config", "c.yaml", "--seed", "3", "--out", "o"}, io.Discard)
	if strings.Join(c.opts.Overrides, " ") != "train.seed=3 output.dir=o" {
		t.Errorf("overrides %q", c.opts.Overrides)
	}
	c, _ = parseCmdline([]string{"--config", "c.yaml", "--threads", "3", "--bf16-weights", "--backend", "cpu"}, io.Discard)
	if strings.Join(c.opts.Overrides, " ") != "model.backend=cpu train.threads=3 model.bf16_weights=true" {
		t.Errorf("--threads, --bf16-weights: overrides %q", c.opts.Overrides)
	}
	if c, _ := parseCmdline([]string{"--resume", "r", "--bf16-weights=false"}, io.Discard); strings.Join(c.opts.Overrides, " ") != "model.bf16_weights=false" {
		t.Errorf("--bf16-weights=false: overrides %q", c.opts.Overrides)
	}
	if c, _ := parseCmdline([]string{"--config", "c.yaml", "--seed", "010"}, io.Discard); strings.Join(c.opts.Overrides, " ") != "train.seed=10" {
		t.Errorf("--seed 010: overrides %q, want train.seed=10", c.opts.Overrides)
	}
}

// TestDemoRuns runs the demo from start to end, as make demo does (20
// steps a run), twice: each run ends with its summary and adapters, and the
// second time the demo starts over in the directories it made.
func TestDemoRuns(t *testing.T) {
	t.Setenv("MEAZO_TRAIN_AS_MAIN", "1") // the demo runs this binary as meazo-train (TestMain)
	dir := filepath.Join(t.TempDir(), "demo")
	for range 2 {
		if err := demo(train.Options{Log: io.Discard}, dir, 20); err != nil {
			t.Fatal(err)
		}
		for _, opt := range train.DemoOptimizers {
			for _, f := range []string{rundir.SummaryFile, filepath.Join(rundir.LastDir, "adapter_model.safetensors")} {
				if _, err := os.Stat(filepath.Join(dir, "run-"+opt, f)); err != nil {
					t.Errorf("demo run %s: %v", opt, err)
				}
			}
			// The demo's runs log each validation's accuracy (for its plots).
			if s, err := rundir.ReadSummary(filepath.Join(dir, "run-"+opt)); err != nil || s.BestValMetrics["accuracy"] <= 0 {
				t.Errorf("demo run %s: best_val_metrics %v (%v), want its accuracy", opt, s.BestValMetrics, err)
			}
		}
	}
}

// TestDemoFailedStartLeavesNothing: a demo whose backend cannot open
// removes the directory it made for itself (it held only its marker).
func TestDemoFailedStartLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	err := demo(train.Options{Overrides: []string{"model.backend=nope"}}, dir, 2)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("a demo on backend nope: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("after %v, %s is still there (%v)", err, dir, serr)
	}
}

// TestDoneLine: a finished run's last line shows the best step's
// validation metric where the run logged one (eval.validation_metrics),
// and nothing more where it did not.
func TestDoneLine(t *testing.T) {
	loss := 2.6287
	s := &train.Summary{StepsDone: 600, BestValLoss: &loss, BestStep: 600, BestValMetrics: map[string]float64{"accuracy": 0.969},
		Test: map[string]map[string]float64{"best": {"accuracy": 0.98}}}
	if got, want := doneLine(s), "done: 600 steps, best validation loss 2.6287 at step 600 (accuracy 0.969); test best: accuracy 0.980"; got != want {
		t.Errorf("doneLine = %q, want %q", got, want)
	}
	s.BestValMetrics = nil
	if got, want := doneLine(s), "done: 600 steps, best validation loss 2.6287 at step 600; test best: accuracy 0.980"; got != want {
		t.Errorf("without a metric: doneLine = %q, want %q", got, want)
	}
}
