package sweep

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// TestCheckConfigs: a study whose runs would all fail on their config (a
// misspelt set key, a value out of range, a missing config file) is refused
// before any run, with the sweep and the mistake named; a good one passes.
func TestCheckConfigs(t *testing.T) {
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	if _, err := train.WriteDemo(demo, 10); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(demo, "demo.yaml")
	for _, tc := range []struct {
		name, set, config, want string
	}{
		{"good", "train.steps=5", cfg, ""},
		{"misspelt key", "train.stepz=5", cfg, `study.yaml:4: experiments.0 (sweep e_meazo): --set train.stepz: unknown key "train.stepz" (did you mean "train.steps"?)`},
		{"bad value", "train.steps=-5", cfg, "study.yaml:4: experiments.0 (sweep e_meazo): --set train.steps: must not be negative, got -5"},
		// A model that is not there would fail every run alike: said once.
		{"no model", "model.path=" + filepath.Join(dir, "gone"), cfg, "study.yaml:6: experiments.0 (sweep e_meazo): no run started, as every run of the sweep would fail: " +
			"the run needs files that are missing or unusable (nothing was written): model.path " + filepath.Join(dir, "gone") + ": no such directory"},
		{"no config file", "train.steps=5", filepath.Join(dir, "nope.yaml"), "study.yaml:6: experiments.0.config: stat " + filepath.Join(dir, "nope.yaml") + ": no such file or directory (sweep e_meazo)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2]\nset: [%q]\nexperiments:\n  - {name: e, config: %s, optimizers: [meazo, zo-sgd]}\n",
				dir, tc.set, tc.config))
			st, err := LoadStudy(p)
			if err != nil {
				t.Fatal(err)
			}
			err = st.CheckConfigs()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("good study refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p)):
				t.Fatalf("got %v, want an error naming %s and containing %q", err, p, tc.want)
			}
			if tc.want != "" { // a local run stops there too, before any run
				if err := st.RunLocal(context.Background(), ModeRun, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("RunLocal: %v, want the config error", err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
				t.Errorf("checking the configs made the study directory (%v)", err)
			}
		})
	}
}

// TestCheckConfigsResumeOnly: a sweep whose every run resumes from its
// checkpoint (with its own config.yaml) and has no stage 2 to come is not
// checked: its config file may be gone since the study began.
func TestCheckConfigsResumeOnly(t *testing.T) {
	dir := t.TempDir()
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0, 1]\ncoarse: [1e-2]\nfine: false\nexperiments:\n  - {name: e, config: %s/gone.yaml, optimizers: [meazo]}\n", dir, dir))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	runs := st.Sweeps()[0].Stage1()
	for i, r := range runs {
		if err := st.CheckConfigs(); err == nil || !strings.Contains(err.Error(), "gone.yaml") {
			t.Fatalf("with %d of %d runs checkpointed: %v, want the missing config named", i, len(runs), err)
		}
		os.MkdirAll(filepath.Join(r.Dir, "checkpoint"), 0o755)
		os.WriteFile(filepath.Join(r.Dir, "checkpoint", "state.json"), []byte("{}"), 0o644)
	}
	if err := st.CheckConfigs(); err != nil {
		t.Errorf("every run resumes: %v", err)
	}
}

// TestCheckConfigsDemoPending: a study on the built-in demo whose demo
// directory is not written yet has its configs checked all the same (as the
// demo writes them, elsewhere), and the check writes nothing in the study.
func TestCheckConfigsDemoPending(t *testing.T) {
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	for _, tc := range []struct{ set, want string }{
		{"train.steps=5", ""},
		{"train.stepz=5", `experiments.0 (sweep e_meazo): --set train.stepz: unknown key "train.stepz" (did you mean "train.steps"?)`},
	} {
		p := writeStudy(t, fmt.Sprintf("out: %s/out\ndemo: %s\nseeds: [0]\ncoarse: [1e-2]\nset: [%q]\nexperiments:\n  - {name: e, config: %s/demo.yaml, optimizers: [meazo]}\n",
			dir, demo, tc.set, demo))
		st, err := LoadStudy(p)
		if err != nil {
			t.Fatal(err)
		}
		err = st.CheckConfigs()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("set %s: %v, want %q", tc.set, err, tc.want)
		}
		for _, d := range []string{demo, filepath.Join(dir, "out")} {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("set %s: the check made %s (%v)", tc.set, d, err)
			}
		}
	}
}

// TestPrepareDemoDirectory: the study's demo is written only into an empty
// directory or one the demo made (marked), never over a user's files.
func TestPrepareDemoDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, want string // file: a user's file in the demo directory first
	}{
		{"absent", "", ""},
		{"a user's files", "data/train.tsv", "is not empty and was not made by the demo"},
		{"marked", ".meazo-demo", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demo := filepath.Join(dir, tc.name)
			if tc.file != "" {
				os.MkdirAll(filepath.Dir(filepath.Join(demo, tc.file)), 0o755)
				os.WriteFile(filepath.Join(demo, tc.file), []byte("mine"), 0o644)
			}
			p := writeStudy(t, fmt.Sprintf("out: %s/out\ndemo: %s\nseeds: [0]\ncoarse: [1e-2]\nexperiments:\n  - {name: e, config: %s/demo.yaml, optimizers: [meazo]}\n", dir, demo, demo))
			st, err := LoadStudy(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CheckConfigs(); tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckConfigs (meazo-sweep plan): %v, want %q", err, tc.want)
			}
			err = st.Prepare(io.Discard)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(demo, "demo.yaml")); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(demo, tc.file)); string(b) != "mine" {
				t.Errorf("%s was changed", tc.file)
			}
		})
	}
}

// TestPrepareDemoAtOnce: meazo-sweep processes started at once on a new
// study write its demo one at a time: none is refused by another's
// half-written directory, and the model is the one a single writer makes
// (a second writer planted the sentiment direction twice).
func TestPrepareDemoAtOnce(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	if _, err := train.WriteDemo(single, 150); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(single, "model", "model.safetensors"))
	demo := filepath.Join(dir, "demo")
	p := writeStudy(t, fmt.Sprintf("out: %s/out\ndemo: %s\nseeds: [0]\ncoarse: [1e-2]\nexperiments:\n  - {name: e, config: %s/demo.yaml, optimizers: [meazo]}\n", dir, demo, demo))
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			st, err := LoadStudy(p)
			if err == nil {
				err = st.Prepare(io.Discard)
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(demo, "model", "model.safetensors")); !bytes.Equal(got, want) {
		t.Error("the demo's model differs from a single writer's")
	}
}

// TestCheckConfigsRunsMatch: a run directory started with other settings
// than the study gives it now (its experiment's config edited after the
// run) is refused by name, with the setting that differs; a run started as
// the study says is accepted, also after an early stop changed its
// train.steps (changes.jsonl), and so is one on another worker count.
func TestCheckConfigsRunsMatch(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "e.yaml")
	files := filepath.Dir(testConfigs) // a model and data that are there (TestMain)
	head := fmt.Sprintf("model: {path: %s/models/Qwen3-0.6B}\ntask: {name: sst2, train: %s/data/sst2/data/train-00000-of-00001.parquet}\n", files, files)
	writeFile(t, cfg, head+"train: {steps: 20}\n")
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2, 1e-3]\nfine: false\nexperiments:\n  - {name: e, config: %s, optimizers: [meazo]}\n", dir, cfg)))
	if err != nil {
		t.Fatal(err)
	}
	run := st.Sweeps()[0].Stage1()[0]
	start := func(sets ...string) {
		c, err := train.Load(cfg, append(append(run.sets(), "output.dir="+run.Dir), sets...))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := c.YAML()
		writeFile(t, filepath.Join(run.Dir, rundir.ConfigFile), string(y))
	}
	start("train.threads=3")
	if err := st.CheckConfigs(); err != nil {
		t.Fatalf("a run started as the study says (on 3 threads): %v", err)
	}
	start("train.steps=12")
	writeFile(t, filepath.Join(run.Dir, rundir.ChangesFile), `{"step":12,"key":"train.steps","old":20,"new":12,"time":"t","reason":"train.patience 2"}`+"\n")
	if err := st.CheckConfigs(); err != nil {
		t.Fatalf("a run stopped early: %v", err)
	}
	writeFile(t, cfg, head+"train: {steps: 30}\n")
	err = st.CheckConfigs()
	if err == nil || !strings.Contains(err.Error(), "the run "+run.Dir+" was started with other settings than the study gives it now (train.steps 20 -> 30; run -> study)") {
		t.Fatalf("the experiment's config edited after the run: %v", err)
	}
}

// TestCheckConfigsNamesSetLine: a set line meazo-train refuses is named by
// its line in the study file, whether the study's, an experiment's or a
// variant's gives it.
func TestCheckConfigsNamesSetLine(t *testing.T) {
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	if _, err := train.WriteDemo(demo, 10); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(demo, "demo.yaml")
	head := fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2]\nset:\n  - train.steps=5\n  - %%s\nexperiments:\n  - name: a\n    config: %s\n    optimizers: [meazo]\n", dir, cfg)
	for _, tc := range []struct{ name, body, want string }{
		{"study's", fmt.Sprintf(head, "train.eval_evry=3"), `study.yaml:6: experiments.0 (sweep a_meazo): --set train.eval_evry: unknown key`},
		{"experiment's", fmt.Sprintf(head, "train.eval_every=3") + fmt.Sprintf("  - name: b\n    config: %s\n    optimizers: [meazo]\n    set:\n      - adapter.kind=prompt\n      - train.batch_size=-2\n", cfg),
			`study.yaml:16: experiments.1 (sweep b_meazo): --set train.batch_size`},
		{"variant's", fmt.Sprintf(head, "train.eval_every=3") + fmt.Sprintf("  - name: c\n    config: %s\n    optimizers: [meazo]\n    variants:\n      - {name: v0}\n      - name: v1\n        set: [optimizer.epz=1]\n", cfg),
			`study.yaml:17: experiments.1 (sweep c_meazo_v1): --set optimizer.epz: unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeStudy(t, tc.body)
			st, err := LoadStudy(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CheckConfigs(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckConfigsSlurmLeavesFiles: on Slurm the runs' model and data are
// the jobs' to find (a compute node may see other files than the machine
// that submits), so a missing model does not refuse the study there.
func TestCheckConfigsSlurmLeavesFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := train.WriteDemo(filepath.Join(dir, "demo"), 10); err != nil {
		t.Fatal(err)
	}
	p := writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-2]\nset: [model.path=%s/gone]\nexperiments:\n  - {name: e, config: %s/demo/demo.yaml}\nexecutor: {kind: slurm}\n", dir, dir, dir))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CheckConfigs(); err != nil {
		t.Errorf("slurm: %v, want no check of the model", err)
	}
}
