package sweep

import (
	"fmt"
	"strings"

	"github.com/meazo-go/meazo/internal/shell"
	"github.com/meazo-go/meazo/rundir"
)

// The scripts of a Slurm submission: each stage's array job (taskScript)
// and the selection job between stages (selectScript).

// commonSbatch writes the #SBATCH lines every job of the study gets: its
// partition, account and qos, and the study's own sbatch lines.
func (st *Study) commonSbatch(b *strings.Builder) {
	s := st.Executor.Slurm
	for _, kv := range [][2]string{{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QOS}} {
		if kv[1] != "" {
			fmt.Fprintf(b, "#SBATCH --%s=%s\n", kv[0], kv[1])
		}
	}
	for _, l := range s.Sbatch {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#SBATCH"))
		fmt.Fprintf(b, "#SBATCH %s\n", l)
	}
}

// sbatchPath is an #SBATCH file name: path with its % doubled (sbatch reads
// %j, %A, … in it as patterns, %% as %), then the pattern tail, in double
// quotes where it holds a space, a quote or a backslash (sbatch splits an
// #SBATCH line at white space outside quotes and reads \" and \\ in them as
// " and \).
func sbatchPath(path, pattern string) string {
	s := strings.ReplaceAll(path, "%", "%%") + pattern
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// setupLines writes a job's first commands: into the directory meazo-sweep
// ran in (relative paths are to it), then the study's setup lines.
func (st *Study) setupLines(b *strings.Builder, cwd string) {
	fmt.Fprintf(b, "cd %s || exit 1\n", shell.Quote(cwd))
	for _, l := range st.Executor.Slurm.Setup {
		b.WriteString(l + "\n")
	}
}

// taskScript is one stage's array job: task i runs line OFFSET+i+1 of the
// tasks file (the run directory, then meazo-train's arguments for a fresh
// start), with --resume when the directory holds a checkpoint. SIGUSR1 (sent
// signal_seconds before the time limit) and SIGTERM (scancel, or the job
// killed) are forwarded to meazo-train, which checkpoints and exits 3 on
// either. The script remembers which came first: after SIGUSR1 the task
// requeues itself and resumes; after SIGTERM alone it ends, the run
// interrupted (meazo-sweep resume continues it), since requeueing there
// would undo a scancel.
func (st *Study) taskScript(name string, stage, n int, tasksPath, logDir, cwd, trainer string) string {
	var b strings.Builder
	st.taskSbatch(&b, name, stage, n, logDir)
	fmt.Fprintf(&b, "# meazo-sweep, study %s, stage %d: one task per run (docs/SWEEPS.md).\nset -u\n", st.Name, stage)
	st.setupLines(&b, cwd)
	fmt.Fprintf(&b, "TASKS=%s\nTRAIN=%s\n", shell.Quote(tasksPath), shell.Quote(trainer))
	fmt.Fprintf(&b, "# SIGUSR1 earlier than this many seconds after the start is not the time limit's (Slurm 22.05 re-sends\n"+
		"# it at once to a requeued job): ignored, so that a requeued run is not stopped again after one step.\nEARLIEST=%d\nstart=$SECONDS\n", st.earliestSignal())
	b.WriteString(taskBody)
	return b.String()
}

// taskSbatch writes the task script's first line and its #SBATCH lines: an
// array of n tasks, requeued on SIGUSR1, with the study's settings.
func (st *Study) taskSbatch(b *strings.Builder, name string, stage, n int, logDir string) {
	s := st.Executor.Slurm
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(b, "#SBATCH --job-name=meazo-%s-s%d\n", st.Name, stage)
	fmt.Fprintf(b, "#SBATCH --array=0-%d%%%d\n", n-1, s.Throttle)
	fmt.Fprintf(b, "#SBATCH --output=%s\n", sbatchPath(logDir+"/"+name+"_", "%A_%a.out"))
	b.WriteString("#SBATCH --open-mode=append\n")
	fmt.Fprintf(b, "#SBATCH --time=%s\n", s.Time)
	fmt.Fprintf(b, "#SBATCH --cpus-per-task=%d\n", s.CPUsPerTask)
	if s.Mem != "" {
		fmt.Fprintf(b, "#SBATCH --mem=%s\n", s.Mem)
	}
	if s.Gres != "" {
		fmt.Fprintf(b, "#SBATCH --gres=%s\n", s.Gres)
	}
	fmt.Fprintf(b, "#SBATCH --signal=B:USR1@%d\n", s.SignalSecs)
	b.WriteString("#SBATCH --requeue\n")
	st.commonSbatch(b)
}

// taskBody is the task script after its settings (TASKS, TRAIN, EARLIEST,
// start): it reads its task's line, starts or resumes meazo-train, forwards
// the signals and requeues after SIGUSR1 (taskScript says how).
const taskBody = `task_id=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}
IFS=$'\t' read -r -a task <<< "$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$TASKS")"
dir=${task[0]}
mkdir -p "$dir" || exit 1
echo "meazo-sweep: task $task_id (restart ${SLURM_RESTART_COUNT:-0}) on $(hostname): $dir"
if [[ -f $dir/` + rundir.SummaryFile + ` ]] && grep -Eq '"status": "(done|diverged)"' "$dir/` + rundir.SummaryFile + `"; then
	echo "meazo-sweep: $dir already finished"
	rm -f "$dir/` + JobFile + `"
	exit 0
fi
rm -f "$dir/` + ExitFile + `"
if [[ -f $dir/checkpoint/state.json || -f $dir/checkpoint.old/state.json ]]; then
	args=(--resume "$dir")
else
	args=("${task[@]:1}")
fi
"$TRAIN" "${args[@]}" &
pid=$!
# The signal that stopped meazo-train: USR1 (the time limit is near: requeue)
# or TERM (scancel, or the job killed: do not requeue). The first one decides:
# a TERM after USR1 is the time limit itself, reached before meazo-train's
# checkpoint was done.
stopped_by=
on_usr1() {
	if ((SECONDS - start < EARLIEST)); then
		echo "meazo-sweep: ignoring a SIGUSR1 $((SECONDS - start)) s after the start (the time limit is not near)"
		return
	fi
	echo "meazo-sweep: SIGUSR1 (time limit near): meazo-train checkpoints and stops; the task requeues"
	stopped_by=${stopped_by:-USR1}
	kill -USR1 $pid 2>/dev/null
}
on_term() {
	stopped_by=${stopped_by:-TERM}
	if [[ $stopped_by == TERM ]]; then
		echo "meazo-sweep: SIGTERM (scancel or the job killed): meazo-train checkpoints and stops; no requeue"
	fi
	kill -TERM $pid 2>/dev/null
}
trap on_usr1 USR1
trap on_term TERM
# A trapped signal interrupts wait, which then returns 128+n: wait again while
# meazo-train runs, and once more if it ended meanwhile, for its own status
# (bash keeps it until waited for; 127: nothing kept, the status stands).
wait $pid
rc=$?
while kill -0 $pid 2>/dev/null; do
	wait $pid
	rc=$?
done
if ((rc > 128)); then
	wait $pid 2>/dev/null
	last=$?
	((last == 127)) || rc=$last
fi
echo $rc > "$dir/` + ExitFile + `.tmp" && mv -f "$dir/` + ExitFile + `.tmp" "$dir/` + ExitFile + `"
if [[ $rc -eq 3 && $stopped_by == USR1 ]]; then
	# While requeued, the run reads as queued (its job file), not interrupted.
	echo "meazo-sweep: interrupted after a checkpoint: requeueing $task_id"
	rm -f "$dir/` + ExitFile + `"
	scontrol requeue "$task_id" && exit 0
	echo $rc > "$dir/` + ExitFile + `"
elif [[ $rc -eq 3 ]]; then
	echo "meazo-sweep: interrupted${stopped_by:+ by SIG$stopped_by} after a checkpoint: not requeued; meazo-sweep resume continues it"
fi
rm -f "$dir/` + JobFile + `"
echo "meazo-sweep: meazo-train exit status $rc"
exit $rc
`

// signalEarly is how much earlier than --signal's time Slurm may send the
// signal (sbatch(1): "up to 60 seconds earlier than specified"), plus 5 s.
const signalEarly = 65

// earliestSignal is the task script's EARLIEST: the seconds after a task's
// start before which a SIGUSR1 cannot be the time limit's, even sent as early
// as Slurm may send it. 0 when the time limit is unknown or too short to tell
// (then a requeued run may be stopped at once by the re-sent signal: it still
// progresses, a few steps each time; SlurmSubmit warns).
func (st *Study) earliestSignal() int {
	limit, err := parseSlurmTime(st.Executor.Slurm.Time)
	if err != nil {
		return 0
	}
	return max(0, limit-st.Executor.Slurm.SignalSecs-signalEarly)
}

// selectScript is the job between stages: it submits the next stage (or
// writes sweep.json); its dependency is added by sbatch's command line.
func (st *Study) selectScript(stamp, logDir, cwd, self, studyAbs string) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=meazo-%s-select\n", st.Name)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", sbatchPath(logDir+"/"+stamp+"-select_", "%j.out"))
	fmt.Fprintf(&b, "#SBATCH --time=%s\n#SBATCH --cpus-per-task=1\n", st.Executor.Slurm.SelectTime)
	st.commonSbatch(&b)
	fmt.Fprintf(&b, "# meazo-sweep, study %s: after a stage, pick each sweep's η* and submit the next stage.\n", st.Name)
	st.setupLines(&b, cwd)
	fmt.Fprintf(&b, "exec %s run --slurm-select %s\n", shell.Quote(self), shell.Quote(studyAbs))
	return b.String()
}
