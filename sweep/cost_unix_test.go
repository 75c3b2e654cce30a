//go:build unix

package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckCostStopped: a signal during a check stops the trainer and what
// it started (here a wrapper script's child, which holds the check's
// pipes): check returns at once, not when that child ends, and leaves
// nothing running.
func TestCheckCostStopped(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	trainer := filepath.Join(dir, "wrapper.sh")
	if err := os.WriteFile(trainer, []byte("#!/bin/sh\nsleep 30 &\necho $! > "+pidFile+".tmp\nmv "+pidFile+".tmp "+pidFile+"\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := LoadStudy(writeStudy(t, fmt.Sprintf("out: %s/out\nseeds: [0]\ncoarse: [1e-3, 1e-2]\nexperiments:\n  - {name: e, config: "+testConfigs+"/qwen06b_sst2_lora_meazo.yaml, optimizers: [meazo]}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for !exists(pidFile) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	err = st.CheckCost(ctx, io.Discard, io.Discard, trainer, nil, false)
	if err == nil || !strings.Contains(err.Error(), "stopped by a signal") {
		t.Errorf("a stopped check: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("check returned %v after it was stopped: it waited for the trainer's child", d)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; pid > 0 && i < 200 && running(pid); i++ {
		time.Sleep(25 * time.Millisecond)
	}
	if pid > 0 && running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the trainer's child %d still runs after the check was stopped", pid)
	}
}

// running says whether process pid runs (neither gone nor a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
