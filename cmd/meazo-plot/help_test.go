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

// TestBadCommandLines: a flag value the command cannot use (a negative
// --smooth, taken as 0; a rate or η* that is not one, exit 1) is a bad
// command line, exit 2, before any directory is read.
func TestBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"curves", "--smooth", "-1", "/nonexistent"}, `invalid value "-1" for flag -smooth: want a whole number of steps, 0`},
		{[]string{"all", "--smooth", "x", "/nonexistent"}, `invalid value "x" for flag -smooth`},
		{[]string{"study", "--smooth", "-3", "/nonexistent.yaml"}, `invalid value "-3" for flag -smooth`},
		{[]string{"sweep-fine", "--coarse", "abc", "1e-3"}, `--coarse: "abc" is not a positive learning rate`},
		{[]string{"sweep-fine", "--coarse", "1e-3,1e-2", "abc"}, `η* "abc": not a number`},
		{[]string{"sweep-select", "--rates", "abc", "--seeds", "0", "/nonexistent"}, `--rates: "abc" is not a positive learning rate`},
		{[]string{"sweep-select", "--rates", "1e-3", "--seeds", "x", "/nonexistent"}, `--seeds: `},
		{[]string{"sweep-select", "--rates", "1e-3", "--seeds", "0", "--coarse", "-1", "/nonexistent"}, `--coarse: "-1" is not a positive learning rate`},
	} {
		var stderr strings.Builder
		if status := commands.Exec(c.args, nil, io.Discard, &stderr); status != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", c.args, status, stderr.String(), c.want)
		}
	}
}
