package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/sweep"
)

func TestOneMethodEach(t *testing.T) {
	for _, tc := range []struct {
		exps []string // the experiment of each sweep
		want bool
	}{
		{[]string{"fig20_fzoo", "fig20_zo-sgd", "fig20_meazo"}, true},
		{[]string{"a", "b"}, true},
		{[]string{"a"}, false},                              // one sweep: no table to turn
		{[]string{"a", "a", "b"}, false},                    // a has two optimizers or variants
		{[]string{"squad", "squad", "sst2", "sst2"}, false}, // the paper's study
		{nil, false},
	} {
		if got := oneMethodEach(tc.exps); got != tc.want {
			t.Errorf("oneMethodEach(%q) = %v, want %v", tc.exps, got, tc.want)
		}
	}
}

// TestMethodTable checks a report laid out by method: a row per experiment
// in the paper's order of methods, its η*, q and ε, the value bold where
// best, ⚠ on an η* at the grid's end, "–" without η*; a metric column where
// the rows' metrics differ; the runs whose q and ε are unknown under the
// tables.
func TestMethodTable(t *testing.T) {
	acc := "accuracy (%) of the best adapter"
	full := func(exp, opt string, mean float64, q, eps string) cell {
		return cell{exp: exp, optimizer: opt, adapter: "full", task: "sst2", eta: 1e-5, metric: acc, mean: mean, std: 0.5, n: 3, seeds: 3, q: q, eps: eps}
	}
	zoSGD := full("fig20_zo-sgd", "zo-sgd", 88, "1", "1e-3")
	zoSGD.eta, zoSGD.edge, zoSGD.coarseEta = 2.6e-7, "the smallest", 2.6e-7
	fzoo := full("fig20_fzoo", "fzoo", 90, "8", "?")
	fzoo.unread = []string{"config runs/x/config.yaml: open: no such file"}
	rep := &Report{byMethod: true, cells: []cell{
		fzoo, zoSGD, full("fig20_meazo", "meazo", 89.5, "1", "1e-3 / 1e-4"),
		{sweep: "late_radazo_radazo", exp: "late_radazo", optimizer: "radazo", seeds: 3, note: "stage 2 not run yet"},
		{exp: "lora_meazo", optimizer: "meazo", adapter: "lora", eta: 1e-3, metric: acc, mean: 70, std: math.NaN(), n: 1, seeds: 3, q: "1", eps: "1e-3"},
		{exp: "lora_zo-adam", optimizer: "zo-adam", variant: "β1 = 0", adapter: "lora", eta: 1e-4, metric: lossMetric, mean: 0.5, std: 0.01, n: 3, seeds: 3, q: "1", eps: "1e-3"},
	}}
	md := rep.Markdown()
	for _, want := range []string{
		"Each experiment of this study runs one method",
		"## Table 1: full-parameter (every weight)\n\n| method | experiment | η* | q | ε | accuracy (%) of the best adapter, higher is better |\n|---|---|---|---|---|---|\n" +
			"| MEAZO | fig20_meazo | 1e-5 | 1 | 1e-3 / 1e-4 | 89.50 ± 0.50 |\n" +
			"| ZO-SGD | fig20_zo-sgd | 2.6e-7 ⚠ | 1 | 1e-3 | 88.00 ± 0.50 |\n" +
			"| FZOO | fig20_fzoo | 1e-5 | 8 | ? | **90.00 ± 0.50** |\n",
		"## Table 2: no results yet\n\n| method | experiment | η* | q | ε | value |\n|---|---|---|---|---|---|\n| R-AdaZO | late_radazo | – | – | – | – |\n",
		"## Table 3: LoRA\n\n| method | experiment | η* | q | ε | metric | value |\n|---|---|---|---|---|---|---|\n" +
			"| MEAZO | lora_meazo | 1e-3 | 1 | 1e-3 | accuracy (%) of the best adapter, higher is better | 70.00 (1/3 seeds) |\n" +
			"| ZO-Adam (β1 = 0) | lora_zo-adam | 1e-4 | 1 | 1e-3 | best validation loss, lower is better | 0.5000 ± 0.0100 |\n",
		"- fig20_zo-sgd, ZO-SGD: the coarse η* 2.6e-7 is the smallest rate of its grid",
		"? q and ε unread:\n\n- fig20_fzoo, FZOO: config runs/x/config.yaml: open: no such file\n",
		"- late_radazo_radazo: stage 2 not run yet",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "best of its row") {
		t.Errorf("the legend of the table by experiment × method:\n%s", md)
	}
}

// TestEstimatorOf reads q and ε of the runs at η* from their config.yaml:
// one value for seeds that agree, both where they differ, "?" and why for
// a run without one.
func TestEstimatorOf(t *testing.T) {
	write := func(name, optimizer string) sweep.Run {
		dir := filepath.Join(t.TempDir(), name)
		os.MkdirAll(dir, 0o755)
		if optimizer != "" {
			y := "model:\n  path: m\ntask:\n  name: sst2\n  train: t.tsv\noptimizer:\n  name: " + optimizer + "\n  q: 8\n  eps: 1e-3\n"
			if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return sweep.Run{Dir: dir}
	}
	a, b := write("a", "fzoo"), write("b", "fzoo")
	if q, eps, unread := estimatorOf([]sweep.Run{a, b}); q != "8" || eps != "1e-3" || unread != nil {
		t.Errorf("two seeds alike: q %q, ε %q, %q", q, eps, unread)
	}
	b.Changes = []rundir.ConfigChange{{Step: 5, Key: "optimizer.eps", Old: 1e-2, New: 1e-3}}
	if _, eps, _ := estimatorOf([]sweep.Run{a, b}); eps != "1e-3 / 0.01" {
		t.Errorf("ε changed on a resume: %q", eps)
	}
	missing := write("missing", "")
	q, eps, unread := estimatorOf([]sweep.Run{a, missing, {Dir: "x", Failed: true}})
	if q != "8 / ?" || eps != "1e-3 / ?" || len(unread) != 1 || !strings.Contains(unread[0], filepath.Join(missing.Dir, rundir.ConfigFile)) {
		t.Errorf("a run without config.yaml: q %q, ε %q, %q", q, eps, unread)
	}
}

// TestMethodSets: in a study laid out by method, the experiments of one
// model, task and adapter are drawn together, named after them, in the
// paper's order; not those whose methods repeat, nor a joint and grouped
// pair of one optimizer (GroupedPairs'), nor in another study.
func TestMethodSets(t *testing.T) {
	exp := func(name, opt string, grouped bool, task string) Experiment {
		r := run(opt, grouped, 1e-3, 0, 1, false)
		r.Task = task
		return Experiment{Name: name, Runs: []sweep.Run{r}}
	}
	rep := &Report{byMethod: true, Experiments: []Experiment{
		exp("fig20_fzoo", "fzoo", false, "sst2"), exp("fig20_zo-sgd", "zo-sgd", false, "sst2"), exp("fig20_meazo", "meazo", false, "sst2"),
		exp("squad_meazo", "meazo", false, "squad"), exp("squad_meazo_again", "meazo", false, "squad"),
		exp("xsum", "meazo", false, "xsum"), exp("xsum_grouped", "meazo", true, "xsum"),
		exp("pets", "meazo", false, "pets"), {Name: "pets_empty"},
	}}
	sets := rep.MethodSets()
	if len(sets) != 1 || sets[0].Name != "fig20_meazo_vs_zo-sgd_vs_fzoo" || len(sets[0].Runs) != 3 || sets[0].Runs[0].Optimizer != "meazo" {
		t.Errorf("MethodSets = %+v", sets)
	}
	rep.byMethod = false
	if sets := rep.MethodSets(); sets != nil {
		t.Errorf("a study of experiments × methods: %+v", sets)
	}
	if got := commonPrefix([]string{"ab_c", "ab_d", "abx"}); got != "ab" {
		t.Errorf("commonPrefix = %q", got)
	}
}

// TestStudyOtherArithmetic: the report lists the runs with a result that a
// resume continued on another arithmetic (an upgrade across noise v2, a
// requeue on another CPU), and only those; a run without a result, or one
// resumed by another build alone, is not listed.
func TestStudyOtherArithmetic(t *testing.T) {
	moved := run("meazo", false, 1e-3, 0, 1, false)
	moved.Dir = "runs/moved"
	moved.Changes = []rundir.ConfigChange{{Step: 510, Key: rundir.ArithmeticChange, Old: "cpu amd64, GEMM path avx512", New: "cpu amd64, GEMM path avx2; noise v2"},
		{Step: 510, Key: rundir.ProgramChange, Old: "v1", New: "v2"}}
	rebuilt := run("meazo", false, 1e-3, 1, 1, false)
	rebuilt.Changes = []rundir.ConfigChange{{Step: 5, Key: rundir.ProgramChange, Old: "v1", New: "v2"}}
	failed := run("meazo", false, 1e-4, 0, 1, false)
	failed.Failed, failed.Changes = true, moved.Changes
	rep := &Report{Experiments: []Experiment{{Name: "e", Runs: []sweep.Run{moved, rebuilt, failed}}}}
	md := rep.Markdown()
	want := "## Resumed on another arithmetic (1)\n"
	line := "- runs/moved: from step 511 on, cpu amd64, GEMM path avx2; noise v2 (before: cpu amd64, GEMM path avx512)\n"
	if !strings.Contains(md, want) || !strings.Contains(md, line) {
		t.Errorf("markdown lacks %q and %q:\n%s", want, line, md)
	}
	rep.Experiments[0].Runs = []sweep.Run{rebuilt}
	if md := rep.Markdown(); strings.Contains(md, "another arithmetic") {
		t.Errorf("a run resumed by another build on the same arithmetic is listed:\n%s", md)
	}
}
