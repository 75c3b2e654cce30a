package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/diskspace"
)

func TestDiskWarning(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		size int64
		free uint64
		want string // "" for no warning
	}{
		{6 * gib, 12 * gib, ""},
		{6 * gib, 500 * gib, ""},
		{6 * gib, 12*gib - 1, "has 12.0 GiB free, and a checkpoint takes 6.0 GiB (step 40's): the checkpoints to come need up to 12.0 GiB more"},
		{28 * gib, 3 * gib, "has 3.0 GiB free, and a checkpoint takes 28.0 GiB (step 40's): the checkpoints to come need up to 56.0 GiB more"},
		{1000, 0, "has 0 B free, and a checkpoint takes 1000 B (step 40's)"},
		{1 << 40, 1<<64 - 1, ""},
	} {
		got := diskWarning("runs/x", 40, c.size, c.free)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("size %d, free %d: %q, want one with %q", c.size, c.free, got, c.want)
		}
		if c.want != "" && !strings.HasPrefix(got, "warning: the disk of runs/x ") {
			t.Errorf("size %d, free %d: %q does not name the run directory", c.size, c.free, got)
		}
	}
}

// TestRunWarnsOfDisk: a run whose file system cannot take two more of its
// checkpoints says so after its first step, from the checkpoint on disk;
// one with room says nothing.
func TestRunWarnsOfDisk(t *testing.T) {
	defer func(f func(string) (uint64, bool)) { diskFree = f }(diskFree)
	dir, cfg := demoConfig(t, 2)
	for _, c := range []struct {
		name string
		free uint64
		warn bool
	}{{"room", 1 << 50, false}, {"tight", 1000, true}} {
		t.Run(c.name, func(t *testing.T) {
			var asked string
			diskFree = func(d string) (uint64, bool) { asked = d; return c.free, true }
			var log syncBuilder
			out := dir + "/r-" + c.name
			if _, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + out, "task.max_validation=8",
				"task.max_test=8", "eval.batch_size=8", "model.backend=cpu", "adapter.kind=full"}}); err != nil {
				t.Fatal(err)
			}
			got := log.String()
			if warned := strings.Contains(got, "warning: the disk of "+out+" has 1000 B free, and a checkpoint takes "); warned != c.warn {
				t.Errorf("warned %v, want %v:\n%s", warned, c.warn, got)
			}
			if asked != out {
				t.Errorf("free space read for %q, want the run directory %q", asked, out)
			}
		})
	}
}

// TestRunWarnsOfDiskWithMoments: the warning after the first step counts
// the optimizer's moments a full-parameter ZO-Adam checkpoint holds from
// then on, which step 0's checkpoint on disk does not (a run with room for
// two more step-0 checkpoints but not for two of its later ones was not
// warned).
func TestRunWarnsOfDiskWithMoments(t *testing.T) {
	defer func(f func(string) (uint64, bool)) { diskFree = f }(diskFree)
	dir, cfg := demoConfig(t, 2)
	set := []string{"task.max_validation=8", "eval.skip=true", "adapter.kind=full", "optimizer.name=zo-adam", "optimizer.lr=1e-3",
		"train.checkpoint_every=1"}
	run := func(out string, free uint64) string {
		diskFree = func(string) (uint64, bool) { return free, true }
		var log syncBuilder
		if _, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: append(slices.Clone(set), "output.dir="+out)}); err != nil {
			t.Fatal(err)
		}
		return log.String()
	}
	run(dir+"/sized", 1<<50)
	later, err := diskspace.Size(dir + "/sized/checkpoint") // step 2's: the weights and the moments
	if err != nil {
		t.Fatal(err)
	}
	first, err := diskspace.Size(dir + "/sized/checkpoint/model.safetensors") // about step 0's
	if err != nil {
		t.Fatal(err)
	}
	free := uint64(2 * later * 9 / 10) // short of two later checkpoints, room for two of step 0's
	if free <= uint64(3*first) {
		t.Fatalf("checkpoints of %d and %d bytes: the moments do not make the difference this test needs", first, later)
	}
	if log := run(dir+"/tight", free); !strings.Contains(log, "warning: the disk of ") {
		t.Errorf("%d bytes free for checkpoints of %d bytes: no warning\n%s", free, later, log)
	}
}

// TestProjectionCountsMoments: the projection after a full-parameter
// ZO-Adam run's first step times its checkpoints as step 0's with the
// moments it did not hold yet (three times its bytes).
func TestProjectionCountsMoments(t *testing.T) {
	_, cfg := demoConfig(t, 3)
	for _, tc := range []struct {
		opt  string
		says bool
	}{{"zo-adam", true}, {"meazo", false}} {
		var log syncBuilder
		if _, err := Run(Options{ConfigPath: cfg, Log: &log, Overrides: []string{"output.dir=" + t.TempDir(), "task.max_validation=8", "eval.skip=true",
			"adapter.kind=full", "optimizer.name=" + tc.opt, "optimizer.lr=1e-3"}}); err != nil {
			t.Fatal(err)
		}
		if says := strings.Contains(log.String(), "as step 0's with the optimizer's moments"); says != tc.says {
			t.Errorf("%s: the projection scales the checkpoints: %v, want %v\n%s", tc.opt, says, tc.says, log.String())
		}
	}
}
