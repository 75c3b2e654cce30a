package train

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/rundir"
)

// trustSet keeps the runs of these tests short.
var trustSet = []string{"train.checkpoint_every=3", "train.eval_every=3", "eval.skip=true", "task.max_train=64", "task.max_validation=8"}

// copyDir copies a run directory (regular files and folders).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func flipByte(path string, at int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if at < 0 {
		at += len(b)
	}
	b[at] ^= 0x10
	return os.WriteFile(path, b, 0o644)
}

// editState rewrites checkpoint/state.json through f and re-signs the
// manifest, as a careful forger (or a bug) would: the state checks, not the
// checksums, must catch it.
func editState(dir string, f func(map[string]any)) error {
	ck := filepath.Join(dir, "checkpoint")
	b, err := os.ReadFile(filepath.Join(ck, "state.json"))
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	f(m)
	if b, err = json.Marshal(m); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ck, "state.json"), b, 0o644); err != nil {
		return err
	}
	return writeManifest(ck)
}

// TestResumeRefusesDamagedRunDir damages an interrupted run's directory in
// every way issue 14 lists and checks that resume refuses with an error
// naming the file, instead of reporting a divergence or repairing silently.
func TestResumeRefusesDamagedRunDir(t *testing.T) {
	dir, cfg := demoConfig(t, 8)
	base := filepath.Join(dir, "base")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+base), StopAfter: 4}); err != nil {
		t.Fatal(err)
	}
	ck := func(d, f string) string { return filepath.Join(d, "checkpoint", f) }
	cases := []struct {
		name   string
		damage func(d string) error
		opts   Options // Resume is set by the loop
		want   []string
	}{
		{"flipped adapter byte", func(d string) error { return flipByte(ck(d, "adapter_model.safetensors"), -3) }, Options{},
			[]string{"checkpoint corrupted", "adapter_model.safetensors", "CRC-32C"}},
		{"flipped optimizer byte", func(d string) error { return flipByte(ck(d, "optimizer.bin"), -1) }, Options{},
			[]string{"checkpoint corrupted", "optimizer.bin"}},
		{"flipped best adapter byte", func(d string) error { return flipByte(ck(d, "best/adapter_model.safetensors"), -2) }, Options{},
			[]string{"checkpoint corrupted", "best/adapter_model.safetensors"}},
		{"missing optimizer state", func(d string) error { return os.Remove(ck(d, "optimizer.bin")) }, Options{},
			[]string{"checkpoint corrupted", "optimizer.bin is missing"}},
		{"extra state", func(d string) error { return os.WriteFile(ck(d, "extra.bin"), []byte("x"), 0o644) }, Options{},
			[]string{"checkpoint corrupted", "extra.bin", "not listed"}},
		{"missing state", func(d string) error { return os.Remove(ck(d, rundir.StateFile)) }, Options{},
			[]string{"checkpoint corrupted", "state.json is missing"}},
		{"missing manifest", func(d string) error { return os.Remove(ck(d, rundir.ManifestFile)) }, Options{},
			[]string{"checkpoint corrupted", "manifest.json is missing"}},
		{"truncated adapter", func(d string) error { return os.Truncate(ck(d, "adapter_model.safetensors"), 100) }, Options{},
			[]string{"checkpoint corrupted", "adapter_model.safetensors is 100 bytes"}},
		{"state.json edited", func(d string) error { return flipByte(ck(d, "state.json"), 15) }, Options{},
			[]string{"checkpoint corrupted", "state.json"}},
		{"negative step", func(d string) error { return editState(d, func(m map[string]any) { m["step"] = -5 }) }, Options{},
			[]string{"state.json", "step -5 is negative"}},
		{"huge step", func(d string) error { return editState(d, func(m map[string]any) { m["step"] = 1e15 }) }, Options{},
			[]string{"state.json", "beyond train.steps"}},
		{"huge sampler", func(d string) error {
			return editState(d, func(m map[string]any) { m["sampler"].(map[string]any)["n"] = 1e15 })
		}, Options{}, []string{"state.json", "sampler over"}},
		{"step disagrees with optimizer", func(d string) error { return editState(d, func(m map[string]any) { m["step"], m["best_step"] = 2, 0 }) }, Options{},
			[]string{"checkpoint corrupted", "optimizer.bin is at step 3, state.json at step 2"}},
		{"short metrics", func(d string) error { return os.Truncate(filepath.Join(d, "metrics.jsonl"), 10) }, Options{},
			[]string{"metrics.jsonl is 10 bytes, shorter than"}},
		{"edited metrics", func(d string) error { return flipByte(filepath.Join(d, "metrics.jsonl"), 2) }, Options{},
			[]string{"metrics.jsonl", "was edited"}},
		{"edited config lr", func(d string) error {
			p := filepath.Join(d, "config.yaml")
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, []byte(strings.Replace(string(b), "lr: 0.05", "lr: 0.02", 1)), 0o644)
		}, Options{}, []string{"config.yaml was edited", "optimizer.lr 0.05 -> 0.02", "restore config.yaml (cp " + filepath.Join(dir, "edited-config-lr", "checkpoint", "config.yaml"), "--set"}},
		{"edited config seed", func(d string) error {
			p := filepath.Join(d, "config.yaml")
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, []byte(strings.Replace(string(b), "    seed: 0", "    seed: 3", 1)), 0o644)
		}, Options{}, []string{"config.yaml was edited", "train.seed 0 -> 3", "train.seed cannot change on resume", "start a new run"}},
		{"set a fixed key", nil, Options{Overrides: []string{"train.seed=3"}}, []string{"--set train.seed: cannot change on resume (the run's 0, --set 3;"}},
		{"config with resume", nil, Options{ConfigPath: cfg}, []string{"--config", "not allowed"}},
		{"bad --set value", nil, Options{Overrides: []string{"optimizer.lr=fast"}}, []string{"--set optimizer.lr"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			copyDir(t, base, d)
			before, _ := os.ReadFile(filepath.Join(d, "metrics.jsonl"))
			if tc.damage != nil {
				if err := tc.damage(d); err != nil {
					t.Fatal(err)
				}
				before, _ = os.ReadFile(filepath.Join(d, "metrics.jsonl"))
			}
			// run.lock as an earlier process left it, a while ago: a refused
			// resume leaves its text and time (docs/RUNDIR.md: a resume that
			// fails changes nothing).
			lock := filepath.Join(d, rundir.LockFile)
			lockText := []byte("pid 1 on host earlier, started 2026-11-01T00:00:00Z\n")
			lockTime := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			if err := os.WriteFile(lock, lockText, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(lock, lockTime, lockTime)
			opts := tc.opts
			opts.Resume = d
			s, err := Run(opts)
			if err == nil {
				t.Fatalf("resume accepted the damaged directory (summary %+v)", s)
			}
			if b, _ := os.ReadFile(lock); string(b) != string(lockText) {
				t.Errorf("a refused resume rewrote run.lock: %q, was %q", b, lockText)
			}
			if fi, err := os.Stat(lock); err != nil {
				t.Error(err)
			} else if !fi.ModTime().Equal(lockTime) {
				t.Errorf("a refused resume changed run.lock's time to %v", fi.ModTime())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "cannot change on resume") && strings.Contains(err.Error(), "--set key=value") {
				t.Errorf("error %q offers --set for a key that cannot change", err)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error is not one line: %q", err)
			}
			after, _ := os.ReadFile(filepath.Join(d, "metrics.jsonl"))
			if string(after) != string(before) {
				t.Error("a refused resume changed metrics.jsonl")
			}
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		d := filepath.Join(dir, "no-such-run")
		if _, err := Run(Options{Resume: d}); err == nil || !strings.Contains(err.Error(), d) {
			t.Errorf("error %v, want one naming %s", err, d)
		}
		if _, err := os.Stat(d); err == nil {
			t.Error("resume created the missing directory")
		}
	})
}

// TestResumeRunLockOwner: a resume refused once it holds the lock (a
// setting that cannot change, inputs that moved) leaves no run.lock where
// there was none, and one that goes ahead names this process in it.
func TestResumeRunLockOwner(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	run := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+run), StopAfter: 3}); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(run, rundir.LockFile)
	os.Remove(lock) // a copy of the run without it
	for _, set := range [][]string{{"train.seed=3"}, {"model.path=" + filepath.Join(dir, "nowhere")}} {
		if _, err := Run(Options{Resume: run, Overrides: set}); err == nil {
			t.Fatalf("--set %v: resumed", set)
		}
		if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--set %v: a refused resume left a run.lock where there was none (%v)", set, err)
		}
	}
	if _, err := Run(Options{Resume: run}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(lock); err != nil || !strings.HasPrefix(string(b), fmt.Sprintf("pid %d on host ", os.Getpid())) {
		t.Errorf("run.lock after the resume: %q, %v; want this process's owner line", b, err)
	}
}

// TestResumeRecoversInterruptedSwap: a run interrupted while swapping in a
// new checkpoint has only checkpoint.old; resume puts it back and goes on
// from it, ending as the uninterrupted run does.
func TestResumeRecoversInterruptedSwap(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	whole, cut := filepath.Join(dir, "whole"), filepath.Join(dir, "cut")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+whole)}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+cut), StopAfter: 4}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(cut, "checkpoint"), filepath.Join(cut, "checkpoint.old")); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: cut}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cut, "checkpoint.old")); err == nil {
		t.Error("checkpoint.old is still there after the resumed run")
	}
	a, b := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(cut, "metrics.jsonl"))
	if !slices.Equal(a, b) {
		t.Errorf("metrics.jsonl of the recovered run differs from the uninterrupted run:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	// A crash after the swap, before the old checkpoint went, and one in
	// the middle of writing the next: a resume of the finished run removes
	// both, and is refused (there is nothing left to run).
	copyDir(t, filepath.Join(cut, "checkpoint"), filepath.Join(cut, "checkpoint.old"))
	os.MkdirAll(filepath.Join(cut, "checkpoint.tmp"), 0o755)
	os.WriteFile(filepath.Join(cut, "checkpoint.tmp", "state.json"), []byte("{"), 0o644)
	if _, err := Run(Options{Resume: cut}); err == nil || !strings.Contains(err.Error(), "is finished") {
		t.Fatalf("resume of the finished run: %v, want a refusal", err)
	}
	for _, d := range []string{"checkpoint.old", "checkpoint.tmp"} {
		if _, err := os.Stat(filepath.Join(cut, d)); err == nil {
			t.Errorf("%s is still there after a resume", d)
		}
	}
}

// TestResumeWithSetIsRecorded changes the learning rate and the step count
// on resume: the change is used from the checkpoint's step on, and recorded
// in changes.jsonl and summary.json.
func TestResumeWithSetIsRecorded(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	out := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out), StopAfter: 4}); err != nil {
		t.Fatal(err)
	}
	s, err := Run(Options{Resume: out, Overrides: []string{"optimizer.lr=0.001", "train.steps=7"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.StepsDone != 7 || s.LR != 0.001 || len(s.Changes) != 2 {
		t.Fatalf("summary: steps %d, lr %g, changes %+v", s.StepsDone, s.LR, s.Changes)
	}
	for i, want := range []ConfigChange{{Step: 3, Key: "optimizer.lr", Old: 0.05, New: 0.001}, {Step: 3, Key: "train.steps", Old: 6.0, New: 7.0}} {
		got := readSummary(t, out).Changes[i]
		if got.Step != want.Step || got.Key != want.Key || fmt.Sprint(got.Old) != fmt.Sprint(want.Old) || fmt.Sprint(got.New) != fmt.Sprint(want.New) {
			t.Errorf("change %d: %+v, want %+v", i, got, want)
		}
	}
	if lines := readLines(t, filepath.Join(out, rundir.ChangesFile)); len(lines) != 2 {
		t.Errorf("changes.jsonl: %q", lines)
	}
	for _, line := range readLines(t, filepath.Join(out, "metrics.jsonl")) {
		var rec struct {
			Kind string
			Step int
			LR   float64
		}
		json.Unmarshal([]byte(line), &rec)
		if want := map[bool]float64{true: 0.05, false: 0.001}[rec.Step <= 3]; rec.Kind == "train" && rec.LR != want {
			t.Errorf("step %d logged lr %g, want %g", rec.Step, rec.LR, want)
		}
	}
	c, err := Load(filepath.Join(out, "config.yaml"), nil)
	if err != nil || c.Optimizer.LR != 0.001 || c.Train.Steps != 7 {
		t.Errorf("config.yaml after the change: %+v %v", c, err)
	}
	// changes.jsonl cut short (as a power loss could, before it was synced)
	// is refused: the run would read as trained at 0.001 throughout.
	if err := os.Truncate(filepath.Join(out, rundir.ChangesFile), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: out, Overrides: []string{"train.steps=8"}}); err == nil || !strings.Contains(err.Error(), "changes.jsonl is 0 bytes, shorter than the") {
		t.Errorf("resume with changes.jsonl emptied: %v", err)
	}
}

// TestRunDirLock: a second process (here a second Run, or a child process)
// on a run directory in use is refused with the holder named; a crashed
// holder's lock is released by the OS.
func TestRunDirLock(t *testing.T) {
	if os.Getenv("MEAZO_TEST_LOCK_HOLDER") != "" {
		return // the child's work is in TestLockHolderHelper
	}
	dir, cfg := demoConfig(t, 100)
	out := filepath.Join(dir, "run")

	// Two runs into one directory, the second started while the first holds
	// the lock (its config.yaml, written right after locking, exists): exactly
	// one runs. (Started blindly 50 ms apart, a short first run could end
	// before the second began, and then the second is refused for another
	// reason.)
	first := make(chan error, 1)
	go func() {
		_, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out, "train.seed=7")})
		first <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(out, rundir.ConfigFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run wrote no config.yaml within a minute")
		}
	}
	_, err2 := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out, "train.seed=8")})
	if err1 := <-first; err1 != nil || err2 == nil || !strings.Contains(err2.Error(), "in use by pid") {
		t.Fatalf("two runs at once: errors %v, %v; want the second refused with the holder named", err1, err2)
	}
	if c, err := Load(filepath.Join(out, "config.yaml"), nil); err != nil || c.Train.Seed != 7 {
		t.Errorf("config.yaml of the run that ran: %v %v", c, err)
	}

	// A child process holds the lock; resume is refused, naming its pid; once
	// the child is killed, the lock is free without any clean-up.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderHelper$")
	cmd.Env = append(os.Environ(), "MEAZO_TEST_LOCK_HOLDER="+out)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "locked") {
		cmd.Process.Kill()
		t.Fatalf("helper: %q", line)
	}
	_, err := Run(Options{Resume: out, Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by pid %d", cmd.Process.Pid)) {
		t.Errorf("resume while another process holds the run: %v", err)
	}
	// So is a new run there: not "continue it with --resume", which the
	// lock would then refuse.
	_, err = Run(Options{ConfigPath: cfg, Log: io.Discard, Overrides: append(trustSet, "output.dir="+out)})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by pid %d", cmd.Process.Pid)) {
		t.Errorf("a new run while another process holds the directory: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := LockDir(out)
	if err != nil {
		t.Fatalf("the lock of a killed process is still held: %v", err)
	}
	l.Unlock()
}

// TestLockHolderHelper is the child process of TestRunDirLock: it takes the
// lock, says so, and waits to be killed.
func TestLockHolderHelper(t *testing.T) {
	dir := os.Getenv("MEAZO_TEST_LOCK_HOLDER")
	if dir == "" {
		t.Skip("helper process of TestRunDirLock")
	}
	if _, err := LockDir(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestNewRunKeepsWhatIsThere: a new run goes only into a directory that is
// absent, empty, or holds what an earlier start left before its first
// checkpoint; a finished run (even without its checkpoint) or a user's
// files are refused untouched, without a run.lock left behind.
func TestNewRunKeepsWhatIsThere(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	finished := filepath.Join(dir, "finished")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+finished)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		make  func(dir string) // fills the output directory
		want  string           // "" : the run starts
		other string           // a file that must survive, relative to the directory
	}{
		{"absent", func(string) {}, "", ""},
		{"empty", func(d string) { os.MkdirAll(d, 0o755) }, "", ""},
		{"a start that never checkpointed", func(d string) {
			os.MkdirAll(filepath.Join(d, "best"), 0o755)
			for _, f := range []string{"config.yaml", "run.lock", "metrics.jsonl", "timing.jsonl", "meazo-sweep.log", ".meazo-sweep.exit.tmp81", ".meazo-demo", ".summary.json.tmp5"} {
				os.WriteFile(filepath.Join(d, f), []byte("x"), 0o644)
			}
		}, "", ""},
		{"a finished run", func(d string) { copyDir(t, finished, d) }, "holds a finished run (2 steps): choose another output.dir", "summary.json"},
		{"an interrupted run", func(d string) {
			copyDir(t, finished, d)
			os.WriteFile(filepath.Join(d, "summary.json"), []byte(strings.Replace(readFile(t, filepath.Join(d, "summary.json")), `"status": "done"`, `"status": "interrupted"`, 1)), 0o644)
		}, "already holds a run: continue it with --resume", "summary.json"},
		{"a finished run without its checkpoint", func(d string) {
			copyDir(t, finished, d)
			os.RemoveAll(filepath.Join(d, "checkpoint"))
		}, "is not empty (it holds last, summary.json)", "summary.json"},
		{"a user's files", func(d string) {
			os.MkdirAll(filepath.Join(d, "notes"), 0o755)
			os.WriteFile(filepath.Join(d, "notes", "important.txt"), []byte("keep"), 0o644)
		}, "is not empty (it holds notes)", "notes/important.txt"},
		{"an experiment's config kept there (no run.lock: not a start's)", func(d string) {
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "config.yaml"), []byte("# my notes\n"), 0o644)
		}, "is not empty (it holds config.yaml)", "config.yaml"},
		{"a user's best/ and checkpoint.tmp/ (no run.lock)", func(d string) {
			os.MkdirAll(filepath.Join(d, "checkpoint.tmp", "sub"), 0o755)
			os.WriteFile(filepath.Join(d, "checkpoint.tmp", "sub", "data"), []byte("keep"), 0o644)
			os.MkdirAll(filepath.Join(d, "best"), 0o755)
		}, "is not empty (it holds best, checkpoint.tmp)", "checkpoint.tmp/sub/data"},
		{"a link to a directory that does not exist", func(d string) {
			os.Symlink(filepath.Join(filepath.Dir(d), "gone"), d)
		}, "which does not exist: create that directory, or choose another output.dir", ""},
		{"a log linked elsewhere", func(d string) {
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "run.lock"), nil, 0o644)
			os.WriteFile(filepath.Join(filepath.Dir(d), "precious.txt"), []byte("keep"), 0o644)
			os.Symlink(filepath.Join(filepath.Dir(d), "precious.txt"), filepath.Join(d, "metrics.jsonl"))
		}, "is not empty (it holds metrics.jsonl)", "metrics.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			tc.make(out)
			var before []byte
			if tc.other != "" {
				before, _ = os.ReadFile(filepath.Join(out, tc.other))
			}
			_, hadLock := os.Stat(filepath.Join(out, "run.lock"))
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out)})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if after, _ := os.ReadFile(filepath.Join(out, tc.other)); !bytes.Equal(before, after) {
				t.Errorf("%s changed", tc.other)
			}
			if _, err := os.Stat(filepath.Join(out, "run.lock")); hadLock != nil && err == nil {
				t.Error("a refused directory got a run.lock")
			}
		})
	}
}

// TestLogHashRuns: the running checksum of a log equals the SHA-256 of its
// first n bytes at every checkpoint, reading only what was appended (a
// shorter size starts again from the start; a log shorter than asked is an
// error, after which it starts again too).
func TestLogHashRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	var content []byte
	var l logHash
	check := func(size int64) {
		t.Helper()
		got, err := l.upTo(path, size)
		want := sha256.Sum256(content[:size])
		if err != nil || got != hex.EncodeToString(want[:]) || l.n != size {
			t.Fatalf("upTo(%d): %s, %v (hashed to %d); want %x", size, got, err, l.n, want)
		}
	}
	for i := range 5 {
		content = append(content, []byte(strings.Repeat("x", 100*i)+"\n")...)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		check(int64(len(content)))
	}
	check(int64(len(content) - 50)) // cut back, as resume does
	if _, err := l.upTo(path, int64(len(content)+1)); err == nil || l.h != nil {
		t.Fatalf("a log shorter than asked: %v (state kept: %v)", err, l.h != nil)
	}
	check(int64(len(content)))
}

// TestResumeOfNothing: --resume of a directory that a run stopped before it
// wrote anything left missing, or without config.yaml, says that a new
// start is what it needs.
func TestResumeOfNothing(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "missing"), empty} {
		_, err := Run(Options{Resume: dir})
		if err == nil || !strings.HasPrefix(err.Error(), "resume "+dir+": ") || !strings.HasSuffix(err.Error(), "has nothing to resume: start it again with --config)") {
			t.Errorf("--resume %s: %v", dir, err)
		}
	}
	// What a run saved (best/, last/, checkpoint/, whose config.yaml is the
	// checkpoint's) given for the run names the run to resume.
	run := filepath.Join(root, "run")
	for _, sub := range []string{"best", "last", "checkpoint"} {
		os.MkdirAll(filepath.Join(run, sub), 0o755)
	}
	os.WriteFile(filepath.Join(run, "config.yaml"), []byte("model: {path: m}\n"), 0o644)
	os.WriteFile(filepath.Join(run, "checkpoint", "config.yaml"), []byte("model: {path: m}\n"), 0o644)
	for _, sub := range []string{"best", "last", "checkpoint"} {
		dir := filepath.Join(run, sub)
		_, err := Run(Options{Resume: dir})
		if want := "resume " + dir + ": what a run saved, not its run directory: resume the run, --resume " + run; err == nil || err.Error() != want {
			t.Errorf("--resume %s: %v, want %q", dir, err, want)
		}
	}
}

// TestResumeRefusesChangedInputs: a resume whose model directory or data
// differ from those the run started with (a model re-downloaded at another
// revision, a data file regenerated) is refused, naming the file; with them
// restored, it resumes. A file rewritten with the same content, or a JSON
// file respaced, is the same input.
func TestResumeRefusesChangedInputs(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	model := filepath.Join(dir, "model")
	train := filepath.Join(dir, "data", "train.tsv")
	for _, tc := range []struct {
		file   string
		change func([]byte) []byte
		want   string // "": the resume goes on
	}{
		{train, func(b []byte) []byte { b[len(b)-2] ^= 1; return b }, // a label
			"inputs changed: " + train + " differs from the file the run's steps so far were computed with (the training data, SHA-256 "},
		{filepath.Join(model, "model.safetensors"), func(b []byte) []byte { b[len(b)-2] ^= 1; return b }, // a weight's low bits
			"inputs changed: " + filepath.Join(model, "model.safetensors") + " differs from the file the run's steps so far were computed with (the model in " + model},
		{filepath.Join(model, "config.json"), func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"rms_norm_eps": 1e-06`), []byte(`"rms_norm_eps": 2e-06`), 1)
		},
			"inputs changed: " + filepath.Join(model, "config.json") + " differs"},
		{filepath.Join(model, "config.json"), func(b []byte) []byte { return append(b, ' ', '\n') }, ""},
		{train, func(b []byte) []byte { return b }, ""}, // rewritten: a new modification time
	} {
		run := filepath.Join(t.TempDir(), "run")
		if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(trustSet), "output.dir="+run), StopAfter: 1}); err != nil {
			t.Fatal(err)
		}
		orig, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // a modification time of its own
		os.WriteFile(tc.file, tc.change(slices.Clone(orig)), 0o644)
		_, err = Run(Options{Resume: run, StopAfter: 1})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s changed: resume gave %v, want %q", tc.file, err, tc.want)
		}
		os.WriteFile(tc.file, orig, 0o644)
		if _, err := Run(Options{Resume: run}); err != nil {
			t.Errorf("%s restored: %v", tc.file, err)
		}
	}
}

// TestFinishedRunResumesOnlyWithWork: a done run is not resumed with
// nothing to do (summary.json stays byte for byte), nor with a change that
// gives it none (threads, a learning rate, fewer steps); more steps
// continue it.
func TestFinishedRunResumesOnlyWithWork(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	out := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(trustSet, "output.dir="+out)}); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(out, "summary.json"))
	for _, set := range [][]string{nil, {"train.threads=1"}, {"optimizer.lr=0.002"}, {"train.steps=2"}, {"train.steps=1"}} {
		if _, err := Run(Options{Resume: out, Overrides: set}); err == nil || !strings.Contains(err.Error(), "is finished (2 of 2 steps): nothing to resume") {
			t.Errorf("--set %v: %v, want a refusal", set, err)
		}
		if readFile(t, filepath.Join(out, "summary.json")) != before {
			t.Fatalf("--set %v: summary.json changed", set)
		}
	}
	s, err := Run(Options{Resume: out, Overrides: []string{"train.steps=3"}})
	if err != nil || s.StepsDone != 3 || s.Status != "done" {
		t.Fatalf("--set train.steps=3: %v, %+v", err, s)
	}
	for _, k := range testKeys {
		if !slices.Contains(resumableKeys, k) {
			t.Errorf("test key %s is not resumable", k)
		}
	}
}

// TestResumeRelocatedInputs: a run whose model and data moved (copied to a
// node's disk, a directory renamed, a relative path resumed from elsewhere)
// is resumed with --set model.path, task.train and task.test pointing at
// the new places, and continues bit for bit; the change is recorded. A
// model at the new place whose files differ from the recorded ones, in
// content or in number, is refused, naming the file.
func TestResumeRelocatedInputs(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	set := append(slices.Clone(trustSet), "eval.skip=false", "task.max_test=8")
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+out), StopAfter: 4}); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "moved")
	if err := os.Mkdir(moved, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"model", "data"} {
		if err := os.Rename(filepath.Join(dir, d), filepath.Join(moved, d)); err != nil {
			t.Fatal(err)
		}
	}
	model, data := filepath.Join(moved, "model"), filepath.Join(moved, "data")
	if _, err := Run(Options{Resume: out}); err == nil || !strings.Contains(err.Error(), "missing") ||
		!strings.Contains(err.Error(), "if the model or the data moved, point the run at their new place: --resume "+out+" --set model.path=DIR") {
		t.Fatalf("resume with the files gone: %v", err)
	}
	relocate := []string{"model.path=" + model, "task.train=" + filepath.Join(data, "train.tsv"), "task.test=" + filepath.Join(data, "dev.tsv")}

	// Another model at the new place: a weight changed, or a file more.
	other := filepath.Join(dir, "other")
	copyDir(t, model, other)
	w := filepath.Join(other, "model.safetensors")
	b := []byte(readFile(t, w))
	b[len(b)-2] ^= 1
	if err := os.WriteFile(w, b, 0o644); err != nil {
		t.Fatal(err)
	}
	otherSet := append(slices.Clone(relocate), "model.path="+other)
	if _, err := Run(Options{Resume: out, Overrides: otherSet}); err == nil ||
		!strings.Contains(err.Error(), "inputs changed: "+w+" differs from the file the run's steps so far were computed with (the model in "+other+", recorded as "+filepath.Join(dir, "model", "model.safetensors")) {
		t.Errorf("resume with a changed model at the new place: %v", err)
	}
	os.RemoveAll(other)
	copyDir(t, model, other)
	if err := os.WriteFile(filepath.Join(other, "merges.txt"), []byte("#version: 0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(Options{Resume: out, Overrides: otherSet}); err == nil ||
		!strings.Contains(err.Error(), "inputs changed: the model in "+other+" has "+filepath.Join(other, "merges.txt")+", which the run's steps so far were not computed with") {
		t.Errorf("resume with a file more in the model at the new place: %v", err)
	}

	s, err := Run(Options{Resume: out, Overrides: relocate})
	if err != nil {
		t.Fatal(err)
	}
	requireSameRun(t, whole, out)
	if w := readSummary(t, whole); fmt.Sprint(s.Test) != fmt.Sprint(w.Test) {
		t.Errorf("test metrics %v, uninterrupted %v", s.Test, w.Test)
	}
	var keys []string
	for _, c := range s.Changes {
		keys = append(keys, c.Key)
	}
	if want := []string{"model.path", "task.train", "task.test"}; !slices.Equal(keys, want) {
		t.Errorf("changes %v, want %v", keys, want)
	}
	var st checkpointState
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, rundir.CheckpointDir, rundir.StateFile))), &st); err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Inputs {
		if !strings.HasPrefix(f.Path, moved+string(filepath.Separator)) {
			t.Errorf("state.json records %s at %s, not at its new place", f.Input, f.Path)
		}
	}
}

// TestTrainLongerIsBitIdentical: a finished run given more steps
// (--resume --set train.steps) trains steps N+1.. as an uninterrupted run of
// the larger count does, bit for bit (docs/RUNDIR.md): its metrics.jsonl is
// that run's but for the validation at step N, which the first run made as
// its end and an uninterrupted run makes only where train.eval_every
// divides N; with it dividing N, everything is the same, last/ and best/
// too.
func TestTrainLongerIsBitIdentical(t *testing.T) {
	dir, cfg := demoConfig(t, 8)
	set := []string{"train.checkpoint_every=3", "eval.skip=true", "task.max_train=64", "task.max_validation=8"}
	whole := filepath.Join(dir, "whole")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "train.eval_every=2", "output.dir="+whole)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first int
		extra string // the validation line the longer run has more, "" none
	}{{4, ""}, {5, `{"kind":"val","step":5,`}} {
		out := filepath.Join(dir, fmt.Sprint("first", tc.first))
		if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "train.eval_every=2", fmt.Sprintf("train.steps=%d", tc.first), "output.dir="+out)}); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(Options{Resume: out, Overrides: []string{"train.steps=8"}}); err != nil {
			t.Fatal(err)
		}
		if tc.extra == "" {
			requireSameRun(t, whole, out)
			continue
		}
		want, got := readLines(t, filepath.Join(whole, "metrics.jsonl")), readLines(t, filepath.Join(out, "metrics.jsonl"))
		i := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, tc.extra) })
		if i < 0 || !slices.Equal(want, slices.Delete(slices.Clone(got), i, i+1)) {
			t.Errorf("first %d steps: metrics.jsonl is not the uninterrupted run's with %s… added:\n%s\nuninterrupted:\n%s", tc.first, tc.extra, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, f := range []string{"last/adapter_model.safetensors", "checkpoint/optimizer.bin"} {
			if readFile(t, filepath.Join(whole, f)) != readFile(t, filepath.Join(out, f)) {
				t.Errorf("first %d steps: %s differs from the uninterrupted run's", tc.first, f)
			}
		}
	}
}

// TestResumeWithoutAdapterInit: a run started from adapter.init resumes
// after that directory moved or was deleted: the checkpoint holds the
// adapter (its shape and its values), and the resumed run is the
// uninterrupted one bit for bit, for LoRA and prompt tuning.
func TestResumeWithoutAdapterInit(t *testing.T) {
	for _, kind := range []string{"lora", "prompt"} {
		t.Run(kind, func(t *testing.T) {
			dir, cfg := demoConfig(t, 6)
			set := append(slices.Clone(trustSet), "adapter.kind="+kind, "adapter.virtual_tokens=4", "adapter.init_text=a review")
			// The adapter to start from: a short run's best/.
			seed := filepath.Join(dir, "seed")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+seed, "train.steps=3")}); err != nil {
				t.Fatal(err)
			}
			init := filepath.Join(dir, "init")
			copyDir(t, filepath.Join(seed, "best"), init)
			set = append(set, "adapter.init="+init, "train.seed=1")
			whole, out := filepath.Join(dir, "whole"), filepath.Join(dir, "run")
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+whole)}); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(Options{ConfigPath: cfg, Overrides: append(slices.Clone(set), "output.dir="+out), StopAfter: 4}); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(init); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(Options{Resume: out}); err != nil {
				t.Fatalf("resume with adapter.init gone: %v", err)
			}
			requireSameRun(t, whole, out)
			for _, f := range []string{"best/adapter_model.safetensors", "last/adapter_model.safetensors"} {
				if readFile(t, filepath.Join(whole, f)) != readFile(t, filepath.Join(out, f)) {
					t.Errorf("%s differs from the uninterrupted run's", f)
				}
			}
		})
	}
}

// TestResumeFromAnotherDirectory: a run whose config has relative paths,
// resumed from another working directory, misses its files there; the
// error names the directory it was started from, which its run directory's
// path less its output.dir gives, and the resume from there goes on.
func TestResumeFromAnotherDirectory(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	t.Chdir(dir)
	set := append(slices.Clone(trustSet), "model.path=model", "task.train=data/train.tsv", "task.test=data/dev.tsv", "output.dir=runs/x")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 3, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	t.Chdir(elsewhere)
	_, err := Run(Options{Resume: filepath.Join("..", "runs", "x"), Log: io.Discard})
	want := "the run was started from " + dir + " (its output.dir is runs/x), to which its relative paths are: resume it from there: cd " + dir + " && meazo-train --resume runs/x"
	if err == nil || !strings.Contains(err.Error(), "model.path model: no such directory") || !strings.Contains(err.Error(), want) {
		t.Fatalf("a resume from another directory: %v\nwant it to say %q", err, want)
	}
	// Where the run's relative paths are not there either, nothing is guessed.
	os.Rename(filepath.Join(dir, "model"), filepath.Join(dir, "model.moved"))
	if _, err := Run(Options{Resume: filepath.Join("..", "runs", "x"), Log: io.Discard}); err == nil || strings.Contains(err.Error(), "was started from") {
		t.Fatalf("a resume whose files are gone from the start directory too: %v", err)
	}
	os.Rename(filepath.Join(dir, "model.moved"), filepath.Join(dir, "model"))
	t.Chdir(dir)
	if s, err := Run(Options{Resume: filepath.Join("runs", "x"), Log: io.Discard}); err != nil || s.StepsDone != 6 {
		t.Fatalf("the resume from the start directory: %+v, %v", s, err)
	}
}

// TestResumeFromALinkToTheStartDirectory: a resume from the directory the
// run was started from, reached through a link, whose preflight fails on
// something else (an absolute path gone) is not told to resume from that
// same directory under its other name.
func TestResumeFromALinkToTheStartDirectory(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	val := filepath.Join(t.TempDir(), "val.tsv")
	if err := os.WriteFile(val, []byte(readFile(t, filepath.Join(dir, "data", "dev.tsv"))), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	set := append(slices.Clone(trustSet), "model.path=model", "task.train=data/train.tsv", "task.validation="+val, "output.dir=runs/x")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, StopAfter: 3, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(link)
	os.Remove(val)
	_, err := Run(Options{Resume: filepath.Join(dir, "runs", "x"), Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "task.validation") || strings.Contains(err.Error(), "was started from") {
		t.Fatalf("a resume from the start directory through a link, with task.validation gone: %v\nwant it to name task.validation, not another directory to resume from", err)
	}
}
