#!/usr/bin/env bash
# End-to-end test of meazo-sweep's Slurm executor on a real single-node Slurm
# started here (daemons as /work/shared/notes/SLURM.md describes; state in a
# temp dir; stopped at exit). It runs a small study on the built-in demo:
#   - two sweeps (MEAZO, ZO-SGD) × 3 coarse rates × 2 seeds, then the fine grid,
#     through job arrays throttled to %2 and a selection job between stages;
#   - one long run killed by its time limit (--time=2, SIGUSR1 20 s before, which
#     Slurm may send up to 60 s early: 40-100 s after the start; its
#     steps sized from a probe run so that it lasts about 150 s here):
#     meazo-train checkpoints, the task requeues itself and resumes;
#   - one run (a third of the long one) cancelled with scancel once it
#     trains: meazo-train checkpoints, and the task is not requeued (the run
#     stays interrupted);
#   - one such run whose meazo-train is killed with SIGKILL (as by an
#     out-of-memory killer) after its first checkpoint: it reads as
#     interrupted, not failed, and its sweep waits (no sweep.json);
#   - their uninterrupted twin (the same config, rate and seed);
#   - one run that fails (a data file that does not parse: a missing one would stop
#     the local study before it starts) and must not block stage 2;
# and runs the same study with the local executor beside it, then checks that
# every run's metrics.jsonl is byte-identical and every sweep's η* equal;
# then meazo-sweep resume continues the cancelled and the killed runs on
# Slurm, which must end byte-identical to their twin.
# Needs root (apt-get install slurm-wlm munge when missing). About 3.5 minutes
# on 2 quiet cores before the resume (195 s measured; 355 s when the local
# study ran after the Slurm one rather than beside it); the resume adds under
# a minute (it added 190 s while the cancelled and killed runs were the long
# run's twins: 390 s in all in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
t0=$(date +%s)
say() { echo "test_slurm: [$(($(date +%s) - t0))s] $*"; }
fail() { echo "test_slurm: FAIL: $*" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	say "installing slurm-wlm and munge"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null; }
fi

R=$(mktemp -d /tmp/meazo-slurm-test.XXXXXX)
S="$R/slurm out" # the Slurm study's directory
chmod 755 "$R"
stop_daemons() {
	local f pids=() p
	for f in "$R/state/slurmd.pid" "$R/state/slurmctld.pid" "$R/munge/munged.pid"; do
		[[ -f $f ]] && p=$(cat "$f") && kill "$p" 2>/dev/null && pids+=("$p") || true
	done
	# Wait for them to exit (up to 20 s): slurmctld writes its state files as it stops,
	# and removing $R under it failed ("Directory not empty").
	for _ in $(seq 40); do
		p=
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && break; p=; done
		[[ -z ${p:-} ]] && break
		sleep 0.5
	done
	return 0
}
local_pid=
cleanup() {
	local rc=$?
	# a failure while the local study runs: SIGTERM stops it and its runs
	if [[ -n $local_pid ]] && kill -TERM "$local_pid" 2>/dev/null; then
		wait "$local_pid" 2>/dev/null || true
	fi
	stop_daemons
	if ((rc == 0)); then
		rm -rf "$R"
	else
		echo "test_slurm: logs kept in $R (slurm logs: $R/log, $S/logs)" >&2
	fi
}
trap cleanup EXIT

say "building meazo-train and meazo-sweep into $R/bin"
GOEXPERIMENT=simd go build -o "$R/bin/" ./cmd/meazo-train ./cmd/meazo-sweep

host=$(hostname -s)
mkdir -p "$R/munge" "$R/state/ctld" "$R/state/d" "$R/log"
chown munge:munge "$R/munge" && chmod 0711 "$R/munge"
dd if=/dev/urandom of="$R/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$R/munge/munge.key" && chmod 0600 "$R/munge/munge.key"
export SLURM_CONF=$R/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$R/munge/munge.socket,cred_expire=10
StateSaveLocation=$R/state/ctld
SlurmdSpoolDir=$R/state/d
SlurmctldPidFile=$R/state/slurmctld.pid
SlurmdPidFile=$R/state/slurmd.pid
SlurmctldLogFile=$R/log/slurmctld.log
SlurmdLogFile=$R/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$R/log/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
runuser -u munge -- munged --socket="$R/munge/munge.socket" --key-file="$R/munge/munge.key" \
	--pid-file="$R/munge/munged.pid" --log-file="$R/munge/munged.log" --seed-file="$R/munge/munged.seed"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 120); do
	[[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break
	sleep 0.5
done
[[ $(sinfo -h -o %t) == idle ]] || fail "the node did not become idle: $(sinfo 2>&1)"
say "slurm is up ($(sinfo -h -o '%P %D %t %c'))"

# The long run must outlast the moment its time-limit signal comes (40-100 s
# after the start) on this machine at its present speed, and not by much (the
# same run goes on locally beside it): measure seconds per step on two probe
# runs side by side, as the two long runs will be (the slower counts), which
# also writes the demo's model and data, and size the run for ~150 s.
cat >"$R/probe.yaml" <<PROBE
name: probe
out: $R/probe
demo: $R/demo-data
seeds: [0, 1]
coarse: [2e-2]
fine: false
set: [train.steps=400, train.eval_every=400, train.checkpoint_every=400, task.max_validation=16, eval.skip=true, train.threads=1]
experiments:
  - name: probe
    config: $R/demo-data/demo.yaml
    optimizers: [meazo]
executor:
  kind: local
  trainer: $R/bin/meazo-train
  parallel: 2
PROBE
"$R/bin/meazo-sweep" run "$R/probe.yaml" >"$R/probe.log" 2>&1 || fail "probe run: $(tail -3 "$R/probe.log")"
sps=$(grep -ho '"seconds_per_step": [0-9.e+-]*' "$R"/probe/probe_meazo/*/summary.json | awk '$2 > s { s = $2 } END { print s }')
long_steps=$(awk -v s="$sps" 'BEGIN { n = int(150 / s / 100 + 1) * 100; if (n < 750) n = 750; if (n > 50000) n = 50000; print n }')
# The cancelled and the killed runs, and their uninterrupted twin, a third of
# it: long enough to be cancelled while training and killed after a
# checkpoint, short enough that resuming them on Slurm adds under a minute.
twin_steps=$(((long_steps / 3 + 9) / 10 * 10))
say "probe: $sps s/step; the long run gets $long_steps steps, the cancelled and killed runs and their twin $twin_steps"

# study OUT EXECUTOR: the test study, with the given output directory and
# executor; on Slurm, with the run to scancel (task 1 of stage 1, so that it
# starts at once beside the long run), the run to kill and their
# uninterrupted twin.
study() {
	local cancel="" name
	[[ $2 == slurm ]] && for name in cancel killed twin; do cancel+="
  - name: $name
    config: $R/demo-data/demo.yaml
    optimizers: [meazo]
    seeds: [0]
    coarse: [2e-2]
    fine: false
    set: [train.steps=$twin_steps, train.checkpoint_every=$((twin_steps / 10)), train.eval_every=$((twin_steps / 10))]"
	done
	cat <<STUDY
name: t
out: $R/$1
demo: $R/demo-data
seeds: [0, 1]
coarse: [1e-2, 2e-2, 5e-2]
set: [train.steps=20, train.eval_every=10, train.checkpoint_every=10, task.max_validation=16, eval.skip=true, train.threads=1]
experiments:
  # first, so that task 0 of stage 1 is the long run and the short ones overlap it
  - name: long
    config: $R/demo-data/demo.yaml
    optimizers: [meazo]
    seeds: [0]
    coarse: [2e-2]
    fine: false
    set: [train.steps=$long_steps, train.checkpoint_every=$((long_steps / 10)), train.eval_every=$((long_steps / 10))]$cancel
  - name: broken
    config: $R/demo-data/demo.yaml
    optimizers: [meazo]
    seeds: [0]
    coarse: [2e-2]
    fine: false
    set: [task.train=$R/broken.tsv]
  - name: demo
    config: $R/demo-data/demo.yaml
    optimizers: [meazo, zo-sgd]
executor:
  kind: $2
  trainer: $R/bin/meazo-train
  parallel: 2
  slurm: {time: "2", signal_seconds: 20, throttle: 2, cpus_per_task: 1, select_time: "5"}
STUDY
}
printf 'not a TSV\n' >"$R/broken.tsv" # the broken run's training data: no header, so meazo-train exits 1
study "slurm out" slurm >"$R/slurm.yaml" # a space in the path: sbatch must read each #SBATCH --output whole
study local-out local >"$R/local.yaml"

"$R/bin/meazo-sweep" plan "$R/slurm.yaml" >"$R/plan.txt"
grep -q -- '--array=0-16%2' "$R/plan.txt" || fail "plan: no stage-1 array of 17 runs throttled to 2: $(grep -- --array "$R/plan.txt")"
grep -q -- '--signal=B:USR1@20' "$R/plan.txt" || fail "plan: no --signal"
say "plan ok; submitting"
"$R/bin/meazo-sweep" run "$R/slurm.yaml"
# The same study with the local executor, at the same time: once Slurm's
# short runs are done its long run leaves a core idle, and the local one is
# the reference the Slurm runs are compared with at the end (it must exit
# non-zero: the broken run).
"$R/bin/meazo-sweep" run "$R/local.yaml" >"$R/local.log" 2>&1 &
local_pid=$!
say "the same study started locally beside it (pid $local_pid)"

# scancel the cancel run once it trains (a line in its metrics.jsonl: meazo-train
# catches signals by then); it must checkpoint and stay cancelled, not requeue.
cancel_dir=$S/cancel_meazo/lr=2e-2_seed=0
cancel_job=$(cat "$cancel_dir/meazo-sweep.job") || fail "the cancel run has no meazo-sweep.job"
for _ in $(seq 240); do
	[[ -s $cancel_dir/metrics.jsonl ]] && break
	sleep 0.5
done
[[ -s $cancel_dir/metrics.jsonl ]] || fail "the cancel run did not start training: $(squeue 2>&1)"
# meazo-sweep reads the queue with one squeue, an array task a line, as its job files name them.
q=$(squeue -h -r -u "$(id -u)" -o %i)
grep -qx "$cancel_job" <<<"$q" || fail "squeue -h -r -u $(id -u) -o %i does not list $cancel_job as meazo-sweep reads it: $q"
scancel "$cancel_job"
say "scancel $cancel_job (the cancel run, training)"

# SIGKILL the killed run's meazo-train once it has a checkpoint, as an
# out-of-memory killer would: the task records exit status 137.
killed_dir=$S/killed_meazo/lr=2e-2_seed=0
for _ in $(seq 480); do
	[[ -f $killed_dir/checkpoint/state.json ]] && break
	sleep 0.5
done
[[ -f $killed_dir/checkpoint/state.json ]] || fail "the killed run wrote no checkpoint: $(squeue 2>&1)"
pkill -KILL -f "meazo-train .*$killed_dir" || fail "no meazo-train of the killed run to kill"
say "SIGKILL to the killed run's meazo-train (after its first checkpoint)"

# Wait for the chain (stage 1, selection, stage 2, selection) to drain.
deadline=$((t0 + 600)) # 183-195 s on 2 quiet cores: a guard against a hang, not a timing
maxrun=0
while :; do
	q=$(squeue -h -o '%T %j' 2>/dev/null || true)
	n=$(grep -c '^RUNNING meazo-t-s' <<<"$q" || true)
	((n > maxrun)) && maxrun=$n
	[[ -z $q ]] && break
	(($(date +%s) > deadline)) && fail "the study did not finish in time: $q"
	sleep 1
done
say "slurm queue drained; at most $maxrun runs at once"
((maxrun <= 2)) || fail "throttle: $maxrun runs at once"
"$R/bin/meazo-sweep" status "$R/slurm.yaml" | tee "$R/status.txt"
grep -q 'long_meazo: 1 runs: 1 done' "$R/status.txt" || fail "the long run did not finish"
grep -q 'broken_meazo: 1 runs: 1 failed' "$R/status.txt" || fail "the broken run is not failed"
grep -q 'cancel_meazo: 1 runs: 1 interrupted' "$R/status.txt" || fail "the cancelled run is not interrupted"
grep -q 'killed_meazo: 1 runs: 1 interrupted' "$R/status.txt" || fail "the killed run is not interrupted"
[[ $(cat "$killed_dir/meazo-sweep.exit") == 137 ]] || fail "the killed run's exit status is not 137: $(cat "$killed_dir/meazo-sweep.exit")"
[[ ! -e $S/killed_meazo/sweep.json ]] || fail "the killed run's sweep chose η* without it: $(cat "$S/killed_meazo/sweep.json")"
grep -q '"signal": "SIGTERM"' "$cancel_dir/summary.json" || fail "the cancelled run's summary: $(cat "$cancel_dir/summary.json")"
[[ $(cat "$cancel_dir/meazo-sweep.exit") == 3 ]] || fail "the cancelled run's exit status is not 3"
! grep -q 'requeueing\|restart 1' "$S"/logs/*stage1_*_1.out || fail "the cancelled task was requeued: $(cat "$S"/logs/*stage1_*_1.out)"
grep -q 'not requeued' "$S"/logs/*stage1_*_1.out || fail "the cancelled task did not say it is not requeued"
grep -Eq 'demo_meazo: [0-9]+ runs: [0-9]+ done; complete' "$R/status.txt" || fail "demo_meazo is not complete"
grep -Eq 'demo_zo-sgd: [0-9]+ runs: [0-9]+ done; complete' "$R/status.txt" || fail "demo_zo-sgd is not complete"
grep -l 'requeueing' "$S"/logs/*stage1_*_0.out >/dev/null || fail "no task was requeued"
grep -q "\"steps_done\": $long_steps" "$S/long_meazo/lr=2e-2_seed=0/summary.json" || fail "long run: not $long_steps steps"
grep -q '^resuming .* at step' "$S"/logs/*stage1_*_0.out || fail "the requeued run did not resume from its checkpoint"
say "time limit: $(grep -h 'SIGUSR1 (time\|requeueing\|restart 1\|^resuming\|^done:' "$S"/logs/*stage1_*_0.out | tr '\n' ';')"

say "waiting for the local study"
local_rc=0
wait "$local_pid" || local_rc=$?
local_pid=
((local_rc != 0)) || fail "local run: the broken run did not make it exit non-zero"
say "local study done"
n=0
while IFS= read -r f; do
	rel=${f#"$S/"}
	cmp -s "$f" "$R/local-out/$rel" || fail "metrics.jsonl differs: $rel"
	n=$((n + 1))
done < <(find "$S" -name metrics.jsonl -not -path '*/cancel_meazo/*' -not -path '*/killed_meazo/*' -not -path '*/twin_meazo/*' | sort)
m=$(find "$R/local-out" -name metrics.jsonl | wc -l)
((n == m && n > 0)) || fail "$n runs on Slurm, $m locally"
for sw in demo_meazo demo_zo-sgd long_meazo; do
	a=$(grep '"eta_star"' "$S/$sw/sweep.json")
	b=$(grep '"eta_star"' "$R/local-out/$sw/sweep.json")
	[[ $a == "$b" ]] || fail "$sw: η* differs: slurm $a, local $b"
	say "$sw: η* equal on Slurm and locally: ${a//[[:space:]]/}"
done
# resume on Slurm continues the cancelled and the SIGKILLed runs from their
# checkpoints (and retries the broken one, which fails again). They are the
# twin run's twins (its config, rate and seed), so each must end with its
# metrics.jsonl, byte for byte, and its sweep with its η*.
grep -q 'twin_meazo: 1 runs: 1 done; complete' "$R/status.txt" || fail "the twin run did not finish: $(grep twin_meazo "$R/status.txt")"
"$R/bin/meazo-sweep" resume "$R/slurm.yaml" || fail "resume on Slurm: exit status $?"
while :; do
	q=$(squeue -h -o '%T %j' 2>/dev/null || true)
	[[ -z $q ]] && break
	(($(date +%s) > deadline + 300)) && fail "the resumed runs did not finish in time: $q"
	sleep 1
done
"$R/bin/meazo-sweep" status "$R/slurm.yaml" >"$R/status2.txt"
for sw in cancel_meazo killed_meazo; do
	grep -q "$sw: 1 runs: 1 done; complete" "$R/status2.txt" || fail "$sw after resume: $(grep "$sw" "$R/status2.txt")"
	cmp -s "$S/$sw/lr=2e-2_seed=0/metrics.jsonl" "$S/twin_meazo/lr=2e-2_seed=0/metrics.jsonl" ||
		fail "$sw: metrics.jsonl after resume differs from the uninterrupted twin's"
	a=$(grep '"eta_star"' "$S/$sw/sweep.json")
	b=$(grep '"eta_star"' "$S/twin_meazo/sweep.json")
	[[ $a == "$b" ]] || fail "$sw: η* $a, its twin's $b"
done
grep -q 'broken_meazo: 1 runs: 1 failed' "$R/status2.txt" || fail "the broken run after resume: $(grep broken_meazo "$R/status2.txt")"
say "resume on Slurm: the cancelled and the SIGKILLed runs ended byte-identical to their uninterrupted twin"

say "PASS: $n runs with byte-identical metrics.jsonl on Slurm and locally; wall time $(($(date +%s) - t0)) s"
