package main

import (
	"io"
	"strings"
	"testing"
)

// TestHelp: every mode's -h says what it measures, what it reads, what it
// prints and an example (cli.CheckHelp); vitstep's names the config it
// needs.
func TestHelp(t *testing.T) {
	if err := modes.CheckHelp(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if status := modes.Exec([]string{"vitstep", "-h"}, nil, io.Discard, &stderr); status != 0 ||
		!strings.Contains(stderr.String(), "Reads:    -model: a ViTForImageClassification config.json") {
		t.Errorf("vitstep -h: status %d\n%s", status, stderr.String())
	}
}
