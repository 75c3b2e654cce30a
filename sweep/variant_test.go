package sweep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStudyVariants: an experiment's variants are one sweep each per
// optimizer, named after them, whose runs get the variant's --set lines after
// the study's and the experiment's and before the sweep's own; their runs and
// sweep.json carry the variant's label, and a Method tells them apart.
func TestStudyVariants(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	t.Setenv("MEAZO_SWEEP_TEST_TRAINER", "1")
	p := writeStudy(t, fmt.Sprintf(`out: %s/out
seeds: [0]
coarse: [1e-3, 1e-2]
fine: false
set: [train.steps=5]
experiments:
  - name: e
    config: "`+testConfigs+`/qwen06b_sst2_lora_{optimizer}.yaml"
    optimizers: [zo-adam]
    set: [optimizer.beta1=0.5]
    variants:
      - {name: beta1=0, label: "β1 = 0", set: [optimizer.beta1=0]}
      - {name: beta1=0.9, set: [optimizer.beta1=0.9]}
executor: {kind: local, parallel: 2, trainer: %s}
`, dir, self))
	st, err := LoadStudy(p)
	if err != nil {
		t.Fatal(err)
	}
	var names, titles []string
	for _, sp := range st.Sweeps() {
		names, titles = append(names, sp.Name), append(titles, sp.VariantTitle())
	}
	if want := []string{"e_zo-adam_beta1=0", "e_zo-adam_beta1=0.9"}; !slices.Equal(names, want) {
		t.Fatalf("sweeps %v, want %v", names, want)
	}
	if want := []string{"β1 = 0", "beta1=0.9"}; !slices.Equal(titles, want) {
		t.Fatalf("variant titles %v, want %v (the label, else the name)", titles, want)
	}
	args := strings.Join(st.Sweeps()[0].Stage1()[0].FreshArgs(), " ")
	if want := "--set train.steps=5 --set optimizer.beta1=0.5 --set optimizer.beta1=0 --set optimizer.name=zo-adam"; !strings.Contains(args, want) {
		t.Fatalf("run arguments %q lack %q (study, experiment, variant, then the sweep's own)", args, want)
	}
	if err := st.CheckConfigs(); err != nil {
		t.Fatalf("CheckConfigs: %v", err)
	}
	var log bytes.Buffer
	if err := st.RunLocal(context.Background(), ModeRun, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	sw := readSweep(t, filepath.Join(dir, "out/e_zo-adam_beta1=0/sweep.json"))
	if sw.Variant != "β1 = 0" {
		t.Errorf("sweep.json variant %q, want the label", sw.Variant)
	}
	var methods []Method
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sp.Results(ss.Runs(), ss.States) {
			if r.Failed || r.Variant != sp.VariantTitle() {
				t.Errorf("%s: run %s failed %v, variant %q", sp.Name, r.Dir, r.Failed, r.Variant)
			}
			if m := r.Method(); !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
	}
	var labels []string
	for _, m := range methods {
		labels = append(labels, m.String())
	}
	if want := []string{"ZO-Adam (β1 = 0)", "ZO-Adam (beta1=0.9)"}; !slices.Equal(labels, want) {
		t.Errorf("methods %v, want %v", labels, want)
	}
	if got := (Method{Optimizer: "meazo", Grouped: true, Variant: "sphere"}).String(); got != "MEAZO (grouped, sphere)" {
		t.Errorf("grouped variant: %q", got)
	}
}
