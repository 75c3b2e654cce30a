package sweep

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/filelock"
	"github.com/meazo-go/meazo/train"
)

// A Slurm submission: one job array per stage (split above MaxArraySize),
// then a selection job that depends on them with afterany (a failed run does
// not block it) and runs "meazo-sweep run --slurm-select STUDY", which
// submits the next stage the same way, or writes sweep.json when the study is
// complete.

type slurmArray struct {
	stage          int
	runs           []RunSpec
	offset         int
	script, tasks  string // file contents
	scriptPath     string
	tasksPath      string
	jobID          string
	partIndex, all int
}

type slurmSubmission struct {
	arrays       []*slurmArray
	selectScript string
	selectPath   string
}

// slurmCandidates lists the runs to submit now, stage 1 first.
func (st *Study) slurmCandidates(mode Mode, selectJob bool, log io.Writer) ([]RunSpec, error) {
	var out []RunSpec
	// The queue, read once, when a run is first found queued: a job that
	// ends meanwhile only leaves it, and its run then reads as ended.
	var queue slurmQueue
	alive := func(s RunState) (bool, error) {
		if queue == nil {
			var err error
			if queue, err = readSlurmQueue(); err != nil {
				return false, err
			}
		}
		return queue[strings.TrimPrefix(s.Detail, "Slurm job ")], nil
	}
	for _, sp := range st.Sweeps() {
		ss, err := sp.State()
		if err != nil {
			return nil, err
		}
		if selectJob {
			// Every job this selection waited for has ended: a run still
			// marked queued whose job is gone was cancelled before it ran, or
			// lost with its node, without a word. It did not fail: it is
			// interrupted (its sweep waits for it, and no η* is chosen
			// without it), and meazo-sweep resume continues it.
			stale := false
			for dir, s := range ss.States {
				if s.Status != StatusQueued {
					continue
				}
				if ok, err := alive(s); err != nil {
					return nil, err
				} else if !ok {
					why := s.Detail + " ended without an exit status (cancelled, or lost with its node)"
					fmt.Fprintf(log, "meazo-sweep: %s: %s: interrupted; meazo-sweep resume continues it\n", dir, why)
					if err := writeExitWhy(dir, train.ExitInterrupted, why); err != nil {
						return nil, err
					}
					stale = true
				}
			}
			if stale {
				if ss, err = sp.State(); err != nil {
					return nil, err
				}
			}
		}
		for _, r := range ss.Runs() {
			s := ss.States[r.Dir]
			if s.Status == StatusRunning {
				fmt.Fprintf(log, "meazo-sweep: %s is running (%s): not submitting it again\n", r.Dir, s.Detail)
			}
			if !mode.startable(s) {
				continue
			}
			if s.Status == StatusQueued {
				if ok, err := alive(s); err != nil {
					return nil, err
				} else if ok {
					continue
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// slurmQueue is the set of this user's jobs that squeue shows (pending or
// running), an entry per array task ("58_2").
type slurmQueue map[string]bool

// squeueRetries are the waits between tries of a failing squeue (a
// controller restarting, or too busy to answer).
var squeueRetries = []time.Duration{5 * time.Second, 20 * time.Second, time.Minute}

// readSlurmQueue lists this user's jobs with one squeue (a study has
// thousands of runs: one squeue per run took minutes, and could outlast the
// selection job's time limit). A squeue that keeps failing is an error: a
// run cannot be called gone, or submitted again, on a controller's silence.
func readSlurmQueue() (slurmQueue, error) {
	var out []byte
	var err error
	for try := 0; ; try++ {
		var stderr bytes.Buffer
		cmd := exec.Command("squeue", "-h", "-r", "-u", strconv.Itoa(os.Getuid()), "-o", "%i")
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err == nil {
			break
		}
		if try == len(squeueRetries) {
			return nil, fmt.Errorf("squeue, to tell which queued runs still have a job: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		time.Sleep(squeueRetries[try])
	}
	q := slurmQueue{}
	for _, id := range strings.Fields(string(out)) {
		q[id] = true
	}
	return q, nil
}

var maxArrayRe = regexp.MustCompile(`(?m)^MaxArraySize\s*=\s*(\d+)`)

// maxArraySize is executor.slurm.max_array_size, else the cluster's.
func (st *Study) maxArraySize() int {
	if n := st.Executor.Slurm.MaxArraySize; n > 0 {
		return n
	}
	out, err := exec.Command("scontrol", "show", "config").Output()
	if err == nil {
		if m := maxArrayRe.FindSubmatch(out); m != nil {
			if n, err := strconv.Atoi(string(m[1])); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1001 // Slurm's default
}

// buildSlurm makes the scripts for the given runs.
func (st *Study) buildSlurm(studyPath string, runs []RunSpec, maxArray int, dry bool) (*slurmSubmission, error) {
	trainer, err := st.FindTrainer()
	if err != nil && dry {
		trainer, err = "meazo-train", nil
	}
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(st.Out)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(out, "\\\n") { // sbatch's file-name patterns: a backslash turns %A, %a, %j off
		return nil, fmt.Errorf("out: %q holds a backslash or a line break, which the jobs' #SBATCH --output lines cannot carry; use another directory for a Slurm study", out)
	}
	studyAbs, err := filepath.Abs(studyPath)
	if err != nil {
		return nil, err
	}
	stamp := time.Now().Format("20060102-150405")
	sub := &slurmSubmission{}
	for stage := 1; stage <= 2; stage++ {
		var rs []RunSpec
		for _, r := range runs {
			if r.Stage == stage {
				rs = append(rs, r)
			}
		}
		parts := (len(rs) + maxArray - 1) / maxArray
		for p := 0; p < parts; p++ {
			chunk := rs[p*maxArray : min(len(rs), (p+1)*maxArray)]
			a := &slurmArray{stage: stage, runs: chunk, partIndex: p, all: parts}
			name := fmt.Sprintf("%s-stage%d", stamp, stage)
			if parts > 1 {
				name += fmt.Sprintf("-part%d", p+1)
			}
			a.scriptPath = filepath.Join(out, "slurm", name+".sbatch")
			a.tasksPath = filepath.Join(out, "slurm", name+".tasks")
			var tasks strings.Builder
			for _, r := range chunk {
				dir, err := filepath.Abs(r.Dir)
				if err != nil {
					return nil, err
				}
				fields := append([]string{dir}, r.FreshArgs()...)
				for _, f := range fields {
					if strings.ContainsAny(f, "\t\n") {
						return nil, fmt.Errorf("%s: argument %q holds a tab or newline", r.Dir, f)
					}
				}
				tasks.WriteString(strings.Join(fields, "\t") + "\n")
			}
			a.tasks = tasks.String()
			a.script = st.taskScript(name, stage, len(chunk), a.tasksPath, filepath.Join(out, "logs"), cwd, trainer)
			sub.arrays = append(sub.arrays, a)
		}
	}
	sub.selectPath = filepath.Join(out, "slurm", stamp+"-select.sbatch")
	sub.selectScript = st.selectScript(stamp, filepath.Join(out, "logs"), cwd, self, studyAbs)
	return sub, nil
}

// SlurmPlan prints what "run" would submit now (a dry run).
func (st *Study) SlurmPlan(w io.Writer, studyPath string) error {
	runs, err := st.slurmCandidates(ModeRun, false, io.Discard)
	if err != nil {
		return err
	}
	if err := st.Plan(w, "meazo-train"); err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Fprintln(w, "# nothing to submit")
		return nil
	}
	sub, err := st.buildSlurm(studyPath, runs, st.maxArraySize(), true)
	if err != nil {
		return err
	}
	var deps []string
	for i, a := range sub.arrays {
		fmt.Fprintf(w, "\n# ---- sbatch --parsable %s   (%d runs)\n%s# ---- %s\n%s", a.scriptPath, len(a.runs), a.script, a.tasksPath, a.tasks)
		deps = append(deps, fmt.Sprintf("$JOB%d", i+1))
	}
	fmt.Fprintf(w, "\n# ---- sbatch --parsable --dependency=afterany:%s %s\n%s", strings.Join(deps, ":"), sub.selectPath, sub.selectScript)
	return nil
}

// earlySignalWarning warns, where executor.slurm.time leaves too little
// before signal_seconds for the task script to tell the time limit's
// SIGUSR1 from one re-sent at once to a requeued task (earliestSignal),
// that a requeued run may stop after a few steps each time. "" otherwise.
func (st *Study) earlySignalWarning() string {
	if st.earliestSignal() >= 10 {
		return ""
	}
	return fmt.Sprintf("warning: executor.slurm.time %s leaves under %d s before signal_seconds %d: Slurm may send "+
		"the time limit's SIGUSR1 up to 60 s early and sends it again at once to a requeued task, so a requeued run may stop after a "+
		"few steps each time; a time limit longer by a minute or more avoids that",
		st.Executor.Slurm.Time, signalEarly+10, st.Executor.Slurm.SignalSecs)
}

// SlurmSubmit submits the runs this mode starts (stage 1, or stage 2 of the
// sweeps whose stage 1 is settled) and a selection job after them; with
// nothing left to submit it writes sweep.json for the complete sweeps.
func (st *Study) SlurmSubmit(studyPath string, mode Mode, selectJob bool, log io.Writer) error {
	if w := st.earlySignalWarning(); !selectJob && w != "" {
		fmt.Fprintf(log, "meazo-sweep: %s\n", w)
	}
	unlock, err := lockSubmissions(st.Out, log)
	if err != nil {
		return err
	}
	defer unlock()
	if err := st.Prepare(log); err != nil {
		return err
	}
	runs, err := st.slurmCandidates(mode, selectJob, log)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		if err := st.finishSweeps(log); err != nil {
			return err
		}
		if err := st.Status(log, false); err != nil {
			return err
		}
		return st.stoppedErr(nil, selectJob, log)
	}
	if err := needSbatch(); err != nil {
		return err
	}
	sub, err := st.buildSlurm(studyPath, runs, st.maxArraySize(), false)
	if err != nil {
		return err
	}
	for _, dir := range []string{filepath.Dir(sub.selectPath), filepath.Join(st.Out, "logs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var ids []string
	for _, a := range sub.arrays {
		if err := atomicfile.WriteFile(a.tasksPath, []byte(a.tasks)); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(a.scriptPath, []byte(a.script)); err != nil {
			return err
		}
		for _, r := range a.runs {
			if err := os.MkdirAll(r.Dir, 0o755); err != nil {
				return err
			}
			if err := clearMarks(r.Dir); err != nil {
				return err
			}
		}
		id, err := sbatch(a.scriptPath)
		if err != nil {
			return err
		}
		a.jobID = id
		ids = append(ids, id)
		for i, r := range a.runs {
			if err := atomicfile.WriteFile(filepath.Join(r.Dir, JobFile), []byte(fmt.Sprintf("%s_%d\n", id, i))); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "meazo-sweep: stage %d: %d runs as job array %s (%s)\n", a.stage, len(a.runs), id, a.scriptPath)
	}
	if err := atomicfile.WriteFile(sub.selectPath, []byte(sub.selectScript)); err != nil {
		return err
	}
	id, err := sbatch("--dependency=afterany:"+strings.Join(ids, ":"), sub.selectPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "meazo-sweep: selection job %s runs after %s\n", id, strings.Join(ids, ", "))
	submitted := map[string]bool{}
	for _, r := range runs {
		submitted[r.Dir] = true
	}
	return st.stoppedErr(submitted, selectJob, log)
}

// stoppedErr is a stoppedError naming the runs stoppedRuns finds, or nil.
// The selection job only logs them: it did its work, and a failed job state
// would read (and mail, with --mail-type=FAIL) as if it had not.
func (st *Study) stoppedErr(skip map[string]bool, selectJob bool, log io.Writer) error {
	stopped, err := st.stoppedRuns(skip, log)
	if err != nil || len(stopped) == 0 || selectJob {
		return err
	}
	return &stoppedError{stopped}
}

// SubmitLock is the file in the study directory whose lock one Slurm
// submission holds: two at once (two meazo-sweep run, or one beside a
// selection job) would each see no job file yet and submit every run twice.
const SubmitLock = "meazo-sweep.submit.lock"

// lockSubmissions takes dir's SubmitLock, waiting for another submission of
// the study to end (they take seconds), and returns its release.
func lockSubmissions(dir string, log io.Writer) (func(), error) {
	return lockFile(filepath.Join(dir, SubmitLock), "submitting this study", log)
}

// DemoLock is the file in the study directory whose lock the writer of the
// study's demo holds.
const DemoLock = "meazo-sweep.demo.lock"

// lockFile takes the lock of the file at path (made with its directory if
// missing), waiting up to 5 minutes for another meazo-sweep doing what,
// and returns its release.
func lockFile(path, what string, log io.Writer) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	err = filelock.Wait(f, 5*time.Minute, 200*time.Millisecond, func() {
		fmt.Fprintf(log, "meazo-sweep: waiting for another meazo-sweep %s (%s)\n", what, path)
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w (another meazo-sweep is %s)", path, err, what)
	}
	return func() { f.Close() }, nil
}

// lookSbatch finds sbatch (exec.LookPath; a variable for the tests).
var lookSbatch = exec.LookPath

// needSbatch refuses, before a script is written, a submission from a
// machine without sbatch: none of the scripts would run.
func needSbatch() error {
	if _, err := lookSbatch("sbatch"); err != nil {
		return fmt.Errorf("executor slurm: sbatch is not on the PATH here (%v): submit from a machine of the cluster, or see what would be submitted with meazo-sweep plan", err)
	}
	return nil
}

func sbatch(args ...string) (string, error) {
	cmd := exec.Command("sbatch", append([]string{"--parsable"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	return id, nil
}

// parseSlurmTime reads a Slurm time limit (minutes, minutes:seconds,
// hours:minutes:seconds, days-hours, days-hours:minutes,
// days-hours:minutes:seconds) in seconds.
func parseSlurmTime(t string) (int, error) {
	bad := fmt.Errorf("executor.slurm.time: %q is not a Slurm time limit", t)
	days, hasDays := 0, false // "0-4" is 4 hours, as "1-4" is 28: the form, not the number, says which
	if d, rest, ok := strings.Cut(t, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, t, hasDays = n, rest, true
	}
	var nums []int
	for _, f := range strings.Split(t, ":") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return 0, bad
		}
		nums = append(nums, n)
	}
	var secs int
	switch {
	case hasDays && len(nums) == 1:
		secs = nums[0] * 3600
	case hasDays && len(nums) == 2:
		secs = nums[0]*3600 + nums[1]*60
	case len(nums) == 3:
		secs = nums[0]*3600 + nums[1]*60 + nums[2]
	case !hasDays && len(nums) == 1:
		secs = nums[0] * 60
	case !hasDays && len(nums) == 2:
		secs = nums[0]*60 + nums[1]
	default:
		return 0, bad
	}
	return days*86400 + secs, nil
}
