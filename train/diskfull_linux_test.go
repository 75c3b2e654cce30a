//go:build linux

package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fsizeChildEnv carries a limitedRun's request to the test binary it starts.
const fsizeChildEnv = "MEAZO_TEST_FSIZE_CHILD"

type fsizeRequest struct {
	Limit     uint64
	Config    string
	Overrides []string
}

// limitedRun runs meazo-train's Run in a child process (this test binary
// again) whose files may be at most limit bytes, as a full disk limits
// them (EFBIG where ENOSPC would be), and returns Run's error ("" for
// none). The limit is the process's: in this one it would also fail the
// testing package's own log.
func limitedRun(t *testing.T, limit uint64, cfg string, overrides []string) string {
	t.Helper()
	req, err := json.Marshal(fsizeRequest{limit, cfg, overrides})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFSizeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"="+string(req))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the limited run: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RUN-ERROR: "); ok {
			return rest
		}
		if line == "RUN-OK" {
			return ""
		}
	}
	if strings.Contains(string(out), "SKIP-LIMIT") {
		t.Skip(string(out))
	}
	t.Fatalf("the limited run printed no result:\n%s", out)
	return ""
}

// TestFSizeChild is limitedRun's child; it does nothing in a test run.
func TestFSizeChild(t *testing.T) {
	env := os.Getenv(fsizeChildEnv)
	if env == "" {
		t.Skip("run by limitedRun only")
	}
	var req fsizeRequest
	if err := json.Unmarshal([]byte(env), &req); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil || lim.Max < req.Limit {
		fmt.Println("SKIP-LIMIT", lim.Max, err)
		return
	}
	lim.Cur = req.Limit
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("SKIP-LIMIT", err)
		return
	}
	if _, err := Run(Options{ConfigPath: req.Config, Log: io.Discard, Overrides: req.Overrides}); err != nil {
		fmt.Println("RUN-ERROR: " + strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Println("RUN-OK")
}

// TestFullCheckpointFailureLeavesNoPart: a full-parameter checkpoint that
// cannot be written stops the run with the error, keeps the previous
// checkpoint and leaves no checkpoint.tmp/ behind, which would hold up to
// a whole model of the disk the run stopped for.
func TestFullCheckpointFailureLeavesNoPart(t *testing.T) {
	demo, cfg := demoConfig(t, 2)
	dir := filepath.Join(t.TempDir(), "run")
	st, err := os.Stat(filepath.Join(demo, "model", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	// ZO-Adam's moments are twice the model: step 0's checkpoint (moments of
	// zero are not written) fits, step 2's (the last) writes its
	// model.safetensors and fails on optimizer_state.safetensors.
	msg := limitedRun(t, uint64(st.Size())*3/2, cfg, []string{"adapter.kind=full", "optimizer.name=zo-adam", "optimizer.lr=0.005", "task.max_train=40",
		"task.max_validation=8", "eval.skip=true", "output.dir=" + dir})
	if !strings.Contains(msg, "file too large") || !strings.Contains(msg, "checkpoint of step 2:") || !strings.Contains(msg, "the checkpoint of step 0 is kept") {
		t.Fatalf("a run whose checkpoint cannot be written: %q", msg)
	}
	if _, serr := os.Stat(filepath.Join(dir, "checkpoint.tmp")); serr == nil {
		ents, _ := os.ReadDir(filepath.Join(dir, "checkpoint.tmp"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("checkpoint.tmp/ left behind after %v, holding %v", msg, names)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint", "state.json")); err != nil {
		t.Errorf("the checkpoint of step 0: %v", err)
	}
	// With room again the run goes on from there.
	if s, err := Run(Options{Resume: dir, Log: io.Discard}); err != nil || s.StepsDone != 2 {
		t.Errorf("resume after the failed checkpoint: %+v, %v", s, err)
	}
}

// TestFullFirstCheckpointFailure: a full-parameter run writes its first
// checkpoint right after step 0's validation; when that one cannot be
// written (a full disk) there is nothing to resume, and the error says to
// start the run again, which the same output directory then takes.
func TestFullFirstCheckpointFailure(t *testing.T) {
	_, cfg := demoConfig(t, 2)
	dir := filepath.Join(t.TempDir(), "run")
	set := []string{"adapter.kind=full", "task.max_train=40", "task.max_validation=8", "eval.skip=true", "output.dir=" + dir}
	// The logs and config.yaml fit, the weights (about 400 kB) do not.
	msg := limitedRun(t, 64<<10, cfg, set)
	if !strings.Contains(msg, "checkpoint of step 0") || !strings.Contains(msg, "file too large") ||
		!strings.HasSuffix(msg, "no checkpoint was written yet: start the run again with the settings it started with: --config "+filepath.Join(dir, "config.yaml")+" --out "+dir) {
		t.Fatalf("a run whose first checkpoint cannot be written: %q", msg)
	}
	// As the error says: from the run's own config.yaml.
	if s, err := Run(Options{ConfigPath: filepath.Join(dir, "config.yaml"), Log: io.Discard, Overrides: []string{"output.dir=" + dir}}); err != nil || s.StepsDone != 2 {
		t.Errorf("the run started again in the same output.dir from its config.yaml: %+v, %v", s, err)
	}
}
