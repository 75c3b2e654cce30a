package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("out: "+dir+"/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: c.yaml, optimizers: [meazo]}\nexecutor: {trainer: /bin/true}\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("out: x\nexperiment: []\n"), 0o644)
	for _, tc := range []struct {
		args       []string
		err, inOut string
	}{
		{[]string{}, "no command", ""},
		{[]string{"frobnicate", good}, `unknown command "frobnicate"`, ""},
		{[]string{"run"}, "want one study file", ""},
		{[]string{"status", filepath.Join(dir, "missing.yaml")}, "missing.yaml: no such file", ""},
		{[]string{"plan", bad}, `study ` + bad + `: unknown key "experiment" (did you mean "experiments"?)`, ""},
		{[]string{"status", good}, "", "e_meazo: 2 runs: 2 new; stage 1 (coarse)"},
		{[]string{"plan", good}, "", "--set optimizer.lr=1e-3 --set train.seed=0 --out " + dir + "/out/e_meazo/lr=1e-3_seed=0"},
		{[]string{"doc"}, "", "| `executor.slurm.throttle` |"},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(strings.TrimSpace(err.Error()), "\n") && tc.args[0] != "frobnicate" && tc.args[0] != "run" {
				t.Errorf("%v: error %v, want one line containing %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !strings.Contains(out.String(), tc.inOut) {
			t.Errorf("%v: %v, output lacks %q:\n%s", tc.args, err, tc.inOut, out.String())
		}
	}
}
