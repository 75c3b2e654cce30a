package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/results"
	"github.com/meazo-go/meazo/sweep"
)

// fakeRun describes a synthetic run directory written per docs/RUNDIR.md.
type fakeRun struct {
	opt        string
	grouped    bool
	lr         float64
	seed       uint64
	steps      int
	diverged   bool
	best, last float64
	groups     []int // units for v (MEAZO only)
	stateBytes int64
	// The experiment (default models/Llama-3.2-1B, squad, lora), the test
	// metrics summary.json records ("best" → key → value; none if nil),
	// and the config.yaml meazo-train writes (none if nil).
	model, task, adapter string
	test                 map[string]map[string]float64
	config               []byte
}

// write creates dir with summary.json and metrics.jsonl: training loss
// 2 − step/steps + seed/100, validation every 5 steps at best + (1 − step/steps).
func (f fakeRun) write(t *testing.T, dir string) {
	t.Helper()
	if err := f.writeFiles(dir); err != nil {
		t.Fatal(err)
	}
}

func (f fakeRun) writeFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var m bytes.Buffer
	done := f.steps
	if f.diverged {
		done = f.steps / 2
	}
	for s := 1; s <= done; s++ {
		// Seeds differ by a small deterministic wobble so that bands show.
		line := map[string]any{"kind": "train", "step": s, "loss": 2 - float64(s)/float64(f.steps) + float64(f.seed)/100 + 0.1*math.Sin(1.7*float64(s)+float64(f.seed)),
			"d": [][]float64{{0.1}}, "groups": []int{-1}, "v": nil, "lr": f.lr}
		if f.groups != nil {
			v := make([]float64, len(f.groups))
			for u := range v {
				v[u] = 1e-3 * float64(u+1) * math.Exp(-float64(s)/float64(f.steps))
			}
			line["groups"], line["v"] = f.groups, v
		}
		b, _ := json.Marshal(line)
		m.Write(append(b, '\n'))
		if s%5 == 0 {
			fmt.Fprintf(&m, `{"kind":"val","step":%d,"val_loss":%g,"elapsed_s":1}`+"\n", s, f.best+1-float64(s)/float64(f.steps)+0.02*math.Sin(float64(s+int(f.seed))))
		}
	}
	model, task, adapter := cmp.Or(f.model, "models/Llama-3.2-1B"), cmp.Or(f.task, "squad"), cmp.Or(f.adapter, "lora")
	sum := map[string]any{"model": model, "task": task, "adapter": adapter, "grouped": f.grouped,
		"optimizer": f.opt, "lr": f.lr, "seed": f.seed, "steps": f.steps, "steps_done": done,
		"diverged": f.diverged, "diverged_at": nil, "message": "", "best_val_loss": f.best, "best_step": 5, "last_val_loss": f.last,
		"trainable_params": 1000, "optimizer_state_bytes": f.stateBytes, "peak_rss_bytes": 3 << 30}
	if f.diverged {
		sum["diverged_at"] = done + 1
		sum["message"] = "loss is NaN"
	}
	if f.test != nil {
		sum["test"] = f.test
	}
	b, _ := json.Marshal(sum)
	files := map[string][]byte{"metrics.jsonl": m.Bytes(), "summary.json": b}
	if f.config != nil {
		files["config.yaml"] = f.config
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkSVG parses an SVG file as XML and returns its text.
func checkSVG(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: invalid XML: %v", path, err)
		}
	}
	return string(data)
}

// runCmd runs a meazo-plot command as main does (warnings go to stderr) and
// returns its stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := commands.Run(args[0], args[1:], nil, &out)
	return out.String(), err
}

// TestFigures writes MEAZO (3 seeds, one diverged at one rate, two groups),
// ZO-SGD (grouped) and ZO-Adam runs at several rates and runs every command.
func TestFigures(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	add := func(f fakeRun) {
		dir := filepath.Join(root, fmt.Sprintf("%s_g%v_lr=%g_seed=%d", f.opt, f.grouped, f.lr, f.seed))
		f.write(t, dir)
		dirs = append(dirs, dir)
	}
	for seed := uint64(0); seed < 3; seed++ {
		for _, lr := range []float64{1e-5, 1e-4, 1e-3} {
			best := map[float64]float64{1e-5: 1.5, 1e-4: 1.1, 1e-3: 1.3}[lr] + 0.01*float64(seed)
			add(fakeRun{opt: "meazo", lr: lr, seed: seed, steps: 40, best: best, last: best + 0.05, groups: []int{0, 1}, diverged: lr == 1e-3 && seed == 2, stateBytes: 8})
			add(fakeRun{opt: "zo-sgd", grouped: true, lr: lr, seed: seed, steps: 40, best: best + 0.2, last: best + 0.3, diverged: lr == 1e-3, stateBytes: 0})
		}
		add(fakeRun{opt: "zo-adam", lr: 1e-4, seed: seed, steps: 40, best: 1.05, last: 1.1, stateBytes: 8000})
	}
	out := filepath.Join(root, "plots")
	if keep := os.Getenv("MEAZO_PLOT_KEEP"); keep != "" {
		out = keep // to look at the figures: MEAZO_PLOT_KEEP=/tmp/figs go test -run TestFigures
	}

	stdout, err := runCmd(t, append([]string{"all", "--out", out}, dirs...)...)
	if err != nil {
		t.Fatalf("all: %v", err)
	}
	for _, name := range []string{"train_loss.svg", "val_loss.svg", "robustness_best.svg", "robustness_last.svg", "vt_meazo.svg", "memory.md"} {
		if !strings.Contains(stdout, filepath.Join(out, name)) {
			t.Errorf("all did not write %s:\n%s", name, stdout)
		}
	}
	val := checkSVG(t, filepath.Join(out, "val_loss.svg"))
	for _, want := range []string{"MEAZO (3 seeds, η*=1e-4 of 3 rates)", "ZO-SGD (grouped) (3 seeds, η*=1e-4 of 3 rates)", "ZO-Adam (3 seeds, η=1e-4)", "<polygon", "stroke-dasharray", results.MethodColor(sweep.Method{Optimizer: "meazo"}), results.MethodColor(sweep.Method{Optimizer: "zo-sgd", Grouped: true})} {
		if !strings.Contains(val, want) {
			t.Errorf("val_loss.svg lacks %q", want)
		}
	}
	train := checkSVG(t, filepath.Join(out, "train_loss.svg"))
	if !strings.Contains(train, "running mean of 1 steps") {
		t.Error("train_loss.svg does not state its smoothing window")
	}
	rob := checkSVG(t, filepath.Join(out, "robustness_best.svg"))
	for _, want := range []string{"MEAZO, η*=1e-4", "ZO-SGD (grouped), η*=1e-4", "ZO-Adam, η*=1e-4", "× on the top edge", "<path d="} {
		if !strings.Contains(rob, want) {
			t.Errorf("robustness_best.svg lacks %q", want)
		}
	}
	vt := checkSVG(t, filepath.Join(out, "vt_meazo.svg"))
	if !strings.Contains(vt, ">group 0<") || !strings.Contains(vt, ">group 1<") || strings.Count(vt, "<polyline") != 2 {
		t.Error("vt_meazo.svg does not draw one line per group")
	}
	table, _ := os.ReadFile(filepath.Join(out, "memory.md"))
	for _, want := range []string{"| MEAZO | 9 | 1000 | 8 B | 0.008 | 3.0 GiB |", "| ZO-Adam | 3 | 1000 | 7.8 KiB | 8 | 3.0 GiB |", "| ZO-SGD (grouped) | 9 | 1000 | 0 B | 0 |"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("memory.md lacks %q:\n%s", want, table)
		}
	}
	// The diverged ZO-SGD runs left out of its line at 1e-3: one cross per figure.
	if _, err := runCmd(t, append([]string{"memory", "--out", out}, dirs[:2]...)...); err != nil {
		t.Errorf("memory: %v", err)
	}
	if _, err := runCmd(t, "vt", "--out", out, dirs[1]); err == nil || !strings.Contains(err.Error(), "only MEAZO logs v") {
		t.Errorf("vt on a ZO-SGD run: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "good")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, good)
	broken := filepath.Join(root, "broken")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, broken)
	os.WriteFile(filepath.Join(broken, "metrics.jsonl"), []byte("{\"kind\":\"train\",\"step\":1,\"loss\":1}\nnot json\n{\"kind\":\"train\",\"step\":3}\n"), 0o644)
	cut := filepath.Join(root, "cut")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, cut)
	f, _ := os.OpenFile(filepath.Join(cut, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"train","st`)
	f.Close()
	noLR := filepath.Join(root, "nolr")
	os.MkdirAll(noLR, 0o755)
	os.WriteFile(filepath.Join(noLR, "summary.json"), []byte(`{"optimizer":"meazo"}`), 0o644)
	other := filepath.Join(root, "other")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, other)
	os.WriteFile(filepath.Join(other, "summary.json"), []byte(`{"optimizer":"meazo","lr":1e-4,"steps":10,"steps_done":10,"task":"sst2"}`), 0o644)
	// A run's best/, last/ and checkpoint/ are named as such, with the run
	// directory to give.
	saved := filepath.Join(root, "saved")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, saved)
	for _, d := range []string{"best", "last", "checkpoint/best"} {
		os.MkdirAll(filepath.Join(saved, d), 0o755)
	}
	out := filepath.Join(root, "plots")
	for _, c := range []struct {
		args []string
		want string // in the error; "" means success
	}{
		{[]string{"all", "--out", out, filepath.Join(saved, "best")}, filepath.Join(saved, "best") + ": not a run directory but " + saved + "'s best/: give " + saved},
		{[]string{"curves", "--out", out, filepath.Join(saved, "last") + "/"}, "not a run directory but " + saved + "'s last/: give " + saved},
		{[]string{"memory", "--out", out, filepath.Join(saved, "checkpoint")}, "not a run directory but " + saved + "'s checkpoint/: give " + saved},
		{[]string{"vt", "--out", out, filepath.Join(saved, "checkpoint", "best")}, "not a run directory but " + saved + "'s checkpoint/best/: give " + saved},
		{[]string{"vt-stats", "--out", out, filepath.Join(saved, "best")}, "it is " + saved + "'s best/: give " + saved + " or its checkpoint/"},
		{[]string{"all", "--out", out, filepath.Join(root, "missing", "best")}, filepath.Join(root, "missing", "best")},
		{[]string{"curves", "--out", out, filepath.Join(root, "missing")}, filepath.Join(root, "missing")},
		{[]string{"curves", "--out", out, broken}, filepath.Join(broken, "metrics.jsonl") + " line 2"},
		{[]string{"curves", "--out", out, cut}, ""},
		{[]string{"memory", "--out", out, noLR}, filepath.Join(noLR, "summary.json") + `: field "lr"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"curves", "--out", out, good, other}, "runs from different experiments"},
		{[]string{"robustness", "--out", out, root + "/plots-none"}, "plots-none"},
		{[]string{"vt-stats", "--out", out, good}, good + ": no checkpoint (no optimizer.bin)"},
		{[]string{"vt-stats", "--out", out}, "no run or checkpoint directories given"},
	} {
		_, err := runCmd(t, c.args...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestOutNeverInsideARun: the figures are not written into a run's
// directory (an input, or not), nor into a model's.
func TestOutNeverInsideARun(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, run)
	os.WriteFile(filepath.Join(run, "run.lock"), nil, 0o644)
	for _, out := range []string{filepath.Join(run, "plots"), run} {
		err := commands.Run("all", []string{"--out", out, run}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--out "+out) || !strings.Contains(err.Error(), run) {
			t.Errorf("--out %s: %v, want it refused", out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(run, "plots")); !os.IsNotExist(err) {
		t.Error("plots/ was made in the run")
	}
}

// TestOutKeepsUsersFiles: in a directory meazo-plot did not make, a file of
// the name it would write is refused untouched (nothing written); in one it
// made, its own figures are replaced on the next run.
func TestOutKeepsUsersFiles(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	fakeRun{opt: "meazo", lr: 1e-4, steps: 10, best: 1, last: 1}.write(t, run)
	mine := filepath.Join(root, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "train_loss.svg"), []byte("my figure"), 0o644)
	if _, err := runCmd(t, "curves", "--out", mine, run); err == nil || !strings.Contains(err.Error(), "train_loss.svg is already there") {
		t.Errorf("curves into a user's directory: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "train_loss.svg")); string(b) != "my figure" {
		t.Error("the user's train_loss.svg was replaced")
	}
	if ents, _ := os.ReadDir(mine); len(ents) != 1 {
		t.Errorf("%d entries in the user's directory, want 1", len(ents))
	}
	// Its own directories: one it makes, and one it finds empty.
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	for _, out := range []string{filepath.Join(root, "plots"), empty} {
		for range 2 {
			if _, err := runCmd(t, "curves", "--out", out, run); err != nil {
				t.Fatalf("curves into its own directory %s: %v", out, err)
			}
		}
		if _, err := os.Stat(filepath.Join(out, ".meazo-plot")); err != nil {
			t.Errorf("%s has no marker: %v", out, err)
		}
	}
	// An older meazo-plot's directory (no marker) is refused until one is added.
	os.Remove(filepath.Join(empty, ".meazo-plot"))
	if _, err := runCmd(t, "curves", "--out", empty, run); err == nil || !strings.Contains(err.Error(), "add an empty .meazo-plot") {
		t.Errorf("curves into an unmarked directory of its figures: %v", err)
	}
	os.WriteFile(filepath.Join(empty, ".meazo-plot"), nil, 0o644)
	if _, err := runCmd(t, "curves", "--out", empty, run); err != nil {
		t.Errorf("curves once the marker is added: %v", err)
	}
	// A user's directory inside one of its own is the user's: the marker
	// above it once made its files meazo-plot's to replace.
	inside := filepath.Join(root, "plots", "mine")
	os.MkdirAll(inside, 0o755)
	os.WriteFile(filepath.Join(inside, "train_loss.svg"), []byte("my figure"), 0o644)
	if _, err := runCmd(t, "curves", "--out", inside, run); err == nil || !strings.Contains(err.Error(), "train_loss.svg is already there") {
		t.Errorf("curves into a user's directory inside its own: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(filepath.Join(inside, "train_loss.svg")); string(b) != "my figure" {
		t.Error("the user's train_loss.svg inside meazo-plot's directory was replaced")
	}
}
