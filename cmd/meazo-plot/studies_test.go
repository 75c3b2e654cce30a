package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/sweep"
	"github.com/meazo-go/meazo/train"
)

var update = flag.Bool("update", false, "rewrite testdata/studies/*.golden from the reports made now")

// TestShippedStudyReports renders the report of every study configs/studies
// ships over made-up runs of it (each sweep's runs with its config's model,
// task, adapter and settings) and compares results.md, results.csv and the
// figures written (names and SHA-256) with testdata/studies/NAME.golden, so
// that a change of what `meazo-plot study` makes of a study shows as a diff
// of its golden file (go test -run TestShippedStudyReports -update rewrites
// them).
func TestShippedStudyReports(t *testing.T) {
	paths, _ := filepath.Glob("../../configs/studies/*.yaml")
	if len(paths) < 8 {
		t.Fatalf("found %v", paths)
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		t.Run(name, func(t *testing.T) {
			got := renderShippedStudy(t, p)
			golden := filepath.Join("testdata", "studies", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestShippedStudyReports -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the report of %s differs from %s at\n%s\n(go test -run TestShippedStudyReports -update rewrites it; review the diff)",
					p, golden, firstDiff(string(want), got))
			}
		})
	}
}

// renderShippedStudy writes made-up runs of the study file at path into a
// temporary directory, runs `meazo-plot study` on them and returns what it
// wrote, the temporary directory's path replaced by TMP.
func renderShippedStudy(t *testing.T, path string) string {
	tmp, _, out := reportShippedStudy(t, path)
	var b strings.Builder
	for _, f := range []string{"results.md", "results.csv"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s", f, data)
	}
	b.WriteString("== files\n")
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		fmt.Fprintf(&b, "%x %s\n", sha256.Sum256([]byte(strings.ReplaceAll(string(data), tmp, "TMP"))), rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), tmp, "TMP")
}

// reportShippedStudy copies the study file at path into a temporary
// directory tmp, its runs going under tmp (writeStudyRuns), and writes its
// report into out; study is the copy.
func reportShippedStudy(t *testing.T, path string) (tmp, study, out string) {
	tmp = t.TempDir()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body = regexp.MustCompile(`(?m)^out: .*$`).ReplaceAll(body, []byte("out: "+tmp+"/out"))
	body = regexp.MustCompile(`(?m)^demo: .*$`).ReplaceAll(body, []byte("demo: "+tmp+"/demo-data"))
	study = filepath.Join(tmp, filepath.Base(path))
	if err := os.WriteFile(study, body, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sweep.LoadStudy(study)
	if err != nil {
		t.Fatal(err)
	}
	writeStudyRuns(t, st, tmp)
	out = filepath.Join(tmp, "report")
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
		t.Fatal(err)
	}
	return tmp, study, out
}

// TestFigure20Report: the Figure 20 study, whose experiments run one method
// each, has a row per method with the q and ε of its config (FZOO's q 8),
// and its three methods' curves in one figure; a run whose config.yaml is
// gone shows "?" and is named under the table.
func TestFigure20Report(t *testing.T) {
	tmp, study, out := reportShippedStudy(t, "../../configs/studies/opt-figure20.yaml")
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	for _, want := range []string{
		"| method | experiment | η* | q | ε | accuracy (%) of the best weights, higher is better |",
		"| MEAZO | fig20_meazo | 1e-5 | 1 | 1e-3 | 88.20 ± 1.00 |",
		"| ZO-SGD | fig20_zo-sgd | 2.6e-7 | 1 | 1e-3 | 88.60 ± 1.00 |",
		"| FZOO | fig20_fzoo | 1e-5 | 8 | 1e-3 | **89.00 ± 1.00** |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"train_loss.svg", "val_loss.svg"} {
		svg := checkSVG(t, filepath.Join(out, "fig20_meazo_vs_zo-sgd_vs_fzoo", f))
		for _, m := range []string{"MEAZO (3 seeds", "ZO-SGD (3 seeds", "FZOO (3 seeds"} {
			if !strings.Contains(svg, m) {
				t.Errorf("%s lacks %q", f, m)
			}
		}
	}
	gone := filepath.Join(tmp, "out", "fig20_fzoo_fzoo", "lr=1e-5_seed=1", "config.yaml")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "study", "--out", out, "--png=false", study); err != nil {
		t.Fatal(err)
	}
	md, _ = os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "| FZOO | fig20_fzoo | 1e-5 | 8 / ? | 1e-3 / ? |") || !strings.Contains(string(md), "- fig20_fzoo, FZOO: config: open "+gone) {
		t.Errorf("results.md without a run's config.yaml:\n%s", md)
	}
}

// writeStudyRuns writes stage-1 runs of every sweep of st, with values that
// differ by sweep, rate and seed: the best rate inside the grid, or at its
// smallest end for every fifth sweep; one diverged seed (at the largest of
// several rates) in every fourth sweep. The paper's study gets three rates of each sweep and none of its
// last experiment's (a study under way), the others their whole stage 1.
func writeStudyRuns(t *testing.T, st *sweep.Study, tmp string) {
	t.Helper()
	paper := st.Name == "paper"
	lastExp := st.Experiments[len(st.Experiments)-1].Name
	for i, sp := range st.Sweeps() {
		if paper && sp.Exp.Name == lastExp {
			continue
		}
		cfg := sweepConfig(t, sp, tmp)
		coarse := sp.Exp.Coarse
		best := min(len(coarse)-1, max(0, (len(coarse)-1)/2+i%3-1))
		if paper {
			best = 4 + i%3
		} else if i%5 == 4 {
			best = 0
		}
		for _, spec := range sp.Stage1() {
			lr := rateOf(t, spec.LR)
			j := sweep.IndexRate(coarse, lr)
			if paper && (j < 4 || j > 6) {
				continue
			}
			d := math.Abs(float64(j - best))
			score := 0.9 - 0.02*d - 0.01*float64(spec.Seed) - 0.004*float64(i%4)
			key, _, _ := results.TaskMetric(cfg.Task.Name)
			scale := map[string]float64{"accuracy": 1, "f1": 80, "rougeL": 25}[key]
			cfg.Optimizer.LR, cfg.Train.Seed, cfg.Output.Dir = lr, spec.Seed, spec.Dir
			y, err := cfg.YAML()
			if err != nil {
				t.Fatal(err)
			}
			f := fakeRun{opt: sp.Optimizer, grouped: cfg.Adapter.Grouped, lr: lr, seed: spec.Seed, steps: 20,
				best: 1 + 0.05*d + 0.01*float64(spec.Seed) + 0.001*float64(i), last: 1.1 + 0.05*d,
				diverged: i%4 == 1 && len(coarse) > 1 && j == len(coarse)-1 && spec.Seed == 0,
				model:    cfg.ModelName(), task: cfg.Task.Name, adapter: cfg.Adapter.Kind, config: y,
				test: map[string]map[string]float64{"best": {key: score * scale}, "base": {key: 0.5 * scale}}}
			if sp.Optimizer == "meazo" {
				f.groups = []int{0}
			}
			f.write(t, spec.Dir)
		}
	}
}

// sweepConfig is the meazo-train config a sweep's runs start from: its file
// under the repository root (the demo's written on the spot) with the
// study's, the experiment's and the variant's --set lines.
func sweepConfig(t *testing.T, sp *sweep.SweepPlan, tmp string) *train.Config {
	t.Helper()
	path := filepath.Join("../..", sp.Config())
	if _, err := os.Stat(path); os.IsNotExist(err) && strings.Contains(sp.Config(), "demo-data") {
		if path, err = train.WriteDemo(filepath.Join(tmp, "demo-data"), 150); err != nil {
			t.Fatal(err)
		}
	}
	var sets []string
	args := sp.Stage1()[0].FreshArgs()
	for k, a := range args {
		if a == "--set" {
			sets = append(sets, args[k+1])
		}
	}
	cfg, err := train.Load(path, sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func rateOf(t *testing.T, s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, a, b)
		}
	}
	return "(no line differs)"
}
