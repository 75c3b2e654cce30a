package main

import (
	"io"
	"strings"
	"testing"
)

// TestHelp: every command's -h says what it does, what it reads, what it
// prints and an example (cli.CheckHelp); fzoo-rate's and study's name the
// files they read and write.
func TestHelp(t *testing.T) {
	if err := commands.CheckHelp(); err != nil {
		t.Fatal(err)
	}
	for cmd, wants := range map[string][]string{
		"fzoo-rate": {"usage: meazo-plot fzoo-rate FZOO_RUN_OR_SWEEP_DIR...\n", "\nReads:    FZOO_RUN_OR_SWEEP_DIR: FZOO run directories",
			"summary.json", "metrics.jsonl", "σ_t", "sweep.json", "\nPrints:   ", "ZO-SGD's η", "\nExample:  meazo-plot fzoo-rate sweeps/"},
		"study":  {"Reads:    STUDY.yaml: the study file", "results.md", "results.csv", "-png"},
		"curves": {"RUN_OR_SWEEP_DIR: run directories", "train_loss.svg", "-smooth"},
	} {
		var stderr strings.Builder
		if status := commands.Exec([]string{cmd, "-h"}, nil, io.Discard, &stderr); status != 0 {
			t.Errorf("%s -h: exit status %d", cmd, status)
		}
		for _, w := range wants {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s -h lacks %q:\n%s", cmd, w, stderr.String())
			}
		}
	}
}
