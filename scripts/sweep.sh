#!/usr/bin/env bash
# The paper's two-stage learning-rate search for one config and optimizer
# (docs/SWEEPS.md):
#   1. coarse grid (default 1e-6 5e-6 1e-5 5e-5 ... 5e-2 1e-1) × seeds (default 0 1 2);
#      η*_coarse = the rate with the lowest mean best validation loss over seeds
#      (a diverged seed counts as +inf);
#   2. fine grid: every m·10^k (m = 1..9) strictly between η*_coarse's coarse
#      neighbours, coarse rates excluded (meazo-plot sweep-fine), × seeds;
#   η* = the best of all rates; everything recorded in OUT/sweep.json.
# One directory per run, OUT/lr=<rate>_seed=<seed>, the rate spelled as
# meazo-sweep spells it (1e-2, 2.5e-4: rate_names); a run directory of
# another spelling of the same rate (lr=0.01_seed=0) is found and used.
# Rerunning the same command resumes: finished or diverged runs are skipped,
# a run with a checkpoint is continued with --resume, the rest are started.
#
# Needs only bash, meazo-train and meazo-plot (on PATH, or named by the
# MEAZO_TRAIN and MEAZO_PLOT environment variables).
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: scripts/sweep.sh --config FILE.yaml [--optimizer NAME] [--out DIR]
                        [--seeds "0 1 2"] [--coarse "1e-6 5e-6 ..."] [--set key=value ...]
  --config     the experiment's meazo-train config
  --optimizer  sets optimizer.name (meazo, zo-sgd, zo-adam, radazo, fzoo); default: the config's
  --out        sweep directory (default sweeps/<config name>_<optimizer>; without --optimizer
               sweeps/<config name>_default)
  --seeds      seeds per rate, spaces or commas (env SWEEP_SEEDS; default "0 1 2")
  --coarse     the coarse grid (env SWEEP_COARSE; default 1e-6 5e-6 1e-5 ... 5e-2 1e-1)
  --set        passed to every meazo-train run (repeatable), e.g. --set train.steps=200
environment: MEAZO_TRAIN (default meazo-train), MEAZO_PLOT (default meazo-plot)
USAGE
}

train=${MEAZO_TRAIN:-meazo-train}
plot=${MEAZO_PLOT:-meazo-plot}
seeds=${SWEEP_SEEDS:-"0 1 2"}
coarse=${SWEEP_COARSE:-"1e-6 5e-6 1e-5 5e-5 1e-4 5e-4 1e-3 5e-3 1e-2 5e-2 1e-1"}
config="" optimizer="" out=""
sets=()

die() { echo "sweep.sh: $*" >&2; exit 1; }

while (($#)); do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--config | --optimizer | --out | --seeds | --coarse | --set)
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--config) config=$2 ;;
		--optimizer) optimizer=$2 ;;
		--out) out=$2 ;;
		--seeds) seeds=$2 ;;
		--coarse) coarse=$2 ;;
		--set) sets+=(--set "$2") ;;
		esac
		shift 2 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

[[ -n $config ]] || { usage >&2; die "--config is required"; }
[[ -f $config ]] || die "config $config: no such file"
command -v "$train" >/dev/null || die "trainer $train not found (install meazo-train or set MEAZO_TRAIN)"
command -v "$plot" >/dev/null || die "$plot not found (install meazo-plot or set MEAZO_PLOT)"
if [[ -n $optimizer ]]; then
	sets+=(--set "optimizer.name=$optimizer")
fi
if [[ -z $out ]]; then
	name=$(basename "$config")
	out="sweeps/${name%.*}_${optimizer:-default}"
fi

# rate_names: each rate read (one a line) as run directory names spell it:
# the shortest e-notation that reads back as the same number, 1e-2 for 0.01,
# 2.5e-4, 1e0 (sweep.RateName; its tests check that the two agree); "-" for
# what is not a positive number.
rate_names() {
	awk '{
		v = $0 + 0
		if ($0 !~ /^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ || !(v > 0)) { print "-"; next }
		for (p = 0; p < 17; p++) { s = sprintf("%." p "e", v); if (s + 0 == v) break }
		split(s, a, "e"); print a[1] "e" (a[2] + 0)
	}'
}

# index_runs: the run directories already in OUT (dir_names) and their rates
# as rate_names spells them (dir_rates), for run_dir.
index_runs() {
	dir_names=() dir_rates=()
	local d spellings="" r
	for d in "$out"/lr=*_seed=*; do
		[[ -d $d ]] || continue
		d=${d##*/}
		dir_names+=("$d")
		r=${d#lr=}
		spellings+="${r%_seed=*}"$'\n'
	done
	while IFS= read -r r; do
		dir_rates+=("$r")
	done < <(printf '%s' "$spellings" | rate_names)
}

# run_dir RATE SEED: the run directory of RATE (as rate_names spells it) and
# SEED, as meazo-sweep picks it (sweep.runDirIndex): the one OUT holds for them
# whatever the rate's spelling there (lr=0.01_seed=0 is lr=1e-2_seed=0), else
# one in the spelling the rate already has in OUT, else RATE's.
run_dir() {
	local rate=$1 seed=$2 i spelling=""
	if [[ -d $out/lr=${rate}_seed=$seed ]]; then
		echo "$out/lr=${rate}_seed=$seed"
		return
	fi
	for ((i = 0; i < ${#dir_names[@]}; i++)); do
		[[ ${dir_rates[i]} == "$rate" ]] || continue
		if [[ ${dir_names[i]} == *"_seed=$seed" ]]; then
			echo "$out/${dir_names[i]}"
			return
		fi
		if [[ -z $spelling || ${dir_names[i]} == "lr=${rate}_seed="* ]]; then
			spelling=${dir_names[i]%_seed=*}
		fi
	done
	echo "$out/${spelling:-lr=$rate}_seed=$seed"
}

# run_one LR SEED: make sure LR's and SEED's run directory (run_dir) holds a
# finished (or diverged) run.
run_one() {
	local lr=$1 seed=$2
	local dir status
	dir=$(run_dir "$lr" "$seed")
	status=$("$plot" sweep-status "$dir") || die "cannot read the state of $dir"
	local args
	case $status in
	done | diverged)
		echo "sweep.sh: skip $dir ($status)"
		return ;;
	resume)
		# The run continues with its own recorded config: the sweep's --set are not given again
		# (on --resume, meazo-train would record them as changes to the run).
		echo "sweep.sh: resume $dir"
		args=(--resume "$dir") ;;
	new)
		# The sweep's settings come after the user's --set so that they win.
		echo "sweep.sh: run $dir"
		args=(--config "$config" "${sets[@]}" --set "optimizer.lr=$lr" --set "train.seed=$seed" --out "$dir") ;;
	*) die "$plot sweep-status $dir said '$status'" ;;
	esac
	"$train" "${args[@]}" || die "$train failed for $dir (exit $?); fix the cause and rerun the same command to continue"
	status=$("$plot" sweep-status "$dir") || die "cannot read the state of $dir"
	[[ $status == done || $status == diverged ]] || die "$train exited 0 but $dir/summary.json does not say the run finished"
}

# run_grid "RATES": every rate × every seed.
run_grid() {
	local lr seed names
	names=$(tr ', \t' '\n\n\n' <<<"$1" | grep . | rate_names) || true
	! grep -qx -- - <<<"$names" || die "not a list of positive learning rates: $1"
	index_runs
	for lr in $names; do
		for seed in $seeds; do
			run_one "$lr" "$seed"
		done
	done
}

# The seeds (spaces or commas, as the rates) and the coarse grid, checked
# before any run: a seed or a rate given twice (0.01 and 1e-2 are one rate)
# would count one run as two seeds, or make a rate its own neighbour.
seeds=$(tr ',\t\n' '   ' <<<"$seeds")
for seed in $seeds; do
	[[ $seed =~ ^[0-9]+$ ]] || die "--seeds: '$seed' is not a non-negative integer"
done
dup=$(printf '%s\n' $seeds | sed 's/^0*\([0-9]\)/\1/' | sort | uniq -d | head -1)
[[ -z $dup ]] || die "--seeds: $dup given twice"
dup=$(tr ', \t' '\n\n\n' <<<"$coarse" | grep . | rate_names | grep -vx -- - | sort | uniq -d | head -1) || true
[[ -z $dup ]] || die "--coarse: $dup given twice"
! tr ', \t' '\n\n\n' <<<"$coarse" | grep . | rate_names | grep -qx -- - || die "--coarse: not a list of positive learning rates: $coarse"
# Only now, with the arguments checked, is the sweep directory made: a
# refused command leaves nothing behind.
mkdir -p "$out"

echo "sweep.sh: stage 1, coarse grid: $coarse; seeds: $seeds"
run_grid "$coarse"
eta_coarse=$("$plot" sweep-select --rates "$coarse" --seeds "$seeds" "$out") || die "coarse stage: no η*"
fine=$("$plot" sweep-fine --coarse "$coarse" "$eta_coarse") || die "coarse stage: no fine grid"
echo "sweep.sh: coarse η* = $eta_coarse; stage 2, fine grid: ${fine:-(empty)}"
run_grid "$fine"
eta=$("$plot" sweep-select --rates "$coarse $fine" --seeds "$seeds" --coarse "$coarse" --write "$out/sweep.json" "$out") ||
	die "fine stage: no η*"
echo "sweep.sh: η* = $eta (written to $out/sweep.json)"
