package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// FuzzLoadStudy: a study file from a stranger through LoadStudy and, when
// it loads, the runs of its first stage: an error naming the file, never a
// panic, a hang or gigabytes (fuzzguard). (Its seeds run in every go test;
// make fuzz fuzzes it.)
func FuzzLoadStudy(f *testing.F) {
	exp := "experiments:\n  - {name: e, config: ../configs/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo, zo-sgd]}\n"
	f.Add("out: x\n" + exp)
	f.Add("out: x\nseeds: [0, 1, 2]\ncoarse: [1e-4, 1e-3]\nfine: true\n" + exp)
	f.Add("name: paper\nout: x\nseeds: [0]\ncoarse: [1e-3]\nfine: false\n" + exp + "executor: {kind: slurm, slurm: {time: \"0-4\", partition: gpu}}\n")
	f.Add("out: x\n" + exp + "executor: {kind: local, parallel: 2}\nset: [train.steps=10]\n")
	dir := f.TempDir()
	p := filepath.Join(dir, "study.yaml")
	f.Fuzz(func(t *testing.T, body string) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		fuzzguard.Run(func() {
			st, err := LoadStudy(p)
			if err != nil {
				if !strings.Contains(err.Error(), "study.yaml") {
					t.Fatalf("the error does not name the file: %v", err)
				}
				return
			}
			for _, sw := range st.Sweeps() {
				sw.Stage1()
			}
		})
	})
}
