package train

import (
	"strings"
	"testing"
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
