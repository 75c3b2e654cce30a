//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meazo-go/meazo/train"
)

// The test here signals this process and runs a shell script as the
// trainer: Unix only.

// TestStopSignals: SIGHUP (a lost ssh session), like SIGTERM, stops a local
// study: its runs get SIGTERM, checkpoint and exit 3, meazo-sweep exits 3
// and the runs read as interrupted.
func TestStopSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			trainer := filepath.Join(dir, "train.sh") // meazo-train's part: exit 3 on SIGTERM
			os.WriteFile(trainer, []byte("#!/bin/sh\ntrap 'exit 3' TERM\ntouch "+started+"\nwhile :; do sleep 0.05; done\n"), 0o755)
			if _, err := train.WriteDemo(filepath.Join(dir, "demo"), 10); err != nil { // a config whose model and data are there
				t.Fatal(err)
			}
			study := filepath.Join(dir, "study.yaml")
			os.WriteFile(study, []byte("out: "+dir+"/out\nseeds: [0]\ncoarse: [1e-3]\nfine: false\nexperiments:\n  - {name: e, config: "+dir+"/demo/demo.yaml, optimizers: [meazo]}\nexecutor: {parallel: 1, trainer: "+trainer+"}\n"), 0o644)
			go func() {
				for range 500 {
					if _, err := os.Stat(started); err == nil {
						break // the trainer runs: meazo-sweep catches the signal by now
					}
					time.Sleep(10 * time.Millisecond)
				}
				syscall.Kill(os.Getpid(), sig)
			}()
			var stdout, stderr bytes.Buffer
			status := newCommands(&stderr).Exec([]string{"run", study}, nil, &stdout, &stderr)
			if status != 3 || !strings.Contains(stderr.String(), "interrupted: meazo-sweep resume continues the study") {
				t.Fatalf("status %d, stderr:\n%s\nwant 3 and interrupted", status, stderr.String())
			}
			stdout.Reset()
			if newCommands(&stderr).Exec([]string{"status", study}, nil, &stdout, &stderr) != 0 || !strings.Contains(stdout.String(), "1 interrupted") {
				t.Errorf("status after the signal:\n%s", stdout.String())
			}
		})
	}
}
