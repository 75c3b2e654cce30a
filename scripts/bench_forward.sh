#!/usr/bin/env bash
# Forward throughput of our model against PyTorch's CPU forward, in one run:
# Llama-3.2-1B and Qwen3-0.6B shapes with random weights, logits at every
# position, the same thread count, on the shapes 1x128, 8x128 and 8x256. Then
# the GEMM against OpenBLAS (scripts/bench_gemm.sh) unless --no-gemm.
#
#   scripts/bench_forward.sh [--shapes 1x128,8x128,8x256] [--reps 1] [--rounds 2]
#                            [--threads 2] [--models llama1b,qwen06b] [--no-gemm]
#
# The machine may be shared. Each round runs, per model, ours and PyTorch
# back to back (the order alternates between rounds); a row's ratio is
# PyTorch's time over ours from the same round, and the table shows the
# median over rounds. The load average is printed before every run: numbers
# taken while it is above the thread count are contended.
#
# Needs MEAZO_SHARED (default ../shared) for the published configs, Go, and
# Debian's python3-torch at /usr/bin/python3 (run with OMP_WAIT_POLICY=PASSIVE:
# its idle OpenMP threads would otherwise spin against the BLAS threads).
set -euo pipefail
cd "$(dirname "$0")/.."

shapes=1x128,8x128,8x256
reps=1
rounds=2
threads=2
models=llama1b,qwen06b
gemm=1
while [ $# -gt 0 ]; do
	case "$1" in
	--shapes) shapes=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--models) models=$2; shift 2 ;;
	--no-gemm) gemm=0; shift ;;
	*) echo "bench_forward.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

shared=${MEAZO_SHARED:-../shared}
export MEAZO_SHARED=$shared
declare -A config=(
	[llama1b]=$shared/fixtures/models/full-configs/Llama-3.2-1B/config.json
	[qwen06b]=$shared/fixtures/models/full-configs/Qwen3-0.6B/config.json
)
python=/usr/bin/python3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GOEXPERIMENT=simd go build -o "$work/meazo-bench" ./cmd/meazo-bench

load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# shapes $shapes, $reps timed reps (median) after a warm-up, $rounds rounds, $threads threads"
for round in $(seq 1 "$rounds"); do
	for m in ${models//,/ }; do
		order="ours torch"
		if [ $((round % 2)) -eq 0 ]; then order="torch ours"; fi
		for who in $order; do
			out=$work/$who.$m.$round
			echo "## round $round, $m, $who: load average before $(load)"
			if [ "$who" = ours ]; then
				"$work/meazo-bench" forward --model "$m" --shapes "$shapes" --reps "$reps" --threads "$threads" | tee "$out"
			else
				OMP_WAIT_POLICY=PASSIVE "$python" scripts/bench_torch.py --config "${config[$m]}" \
					--shapes "$shapes" --reps "$reps" --threads "$threads" | tee "$out"
			fi
		done
	done
done
echo "# load average after: $(load)"

# The table: both programs print "shape seconds tokens/s ... peakRSS" rows.
"$python" - "$work" "$rounds" "$models" "$shapes" <<'EOF'
import statistics, sys
work, rounds, models, shapes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(",")

def rows(path):
    out = {}
    for line in open(path):
        f = line.split()
        if f and not line.startswith("#") and f[0] != "shape" and "x" in f[0] and len(f) >= 4:
            out[f[0]] = (float(f[1]), float(f[-1]))  # seconds, peak RSS MiB
    return out

print()
print(f"{'model':8} {'shape':7} {'ours s':>8} {'torch s':>8} {'torch/ours':>10} {'per round':>16} {'RSS ours':>9} {'RSS torch':>9}")
for m in models:
    runs = [(rows(f"{work}/ours.{m}.{r}"), rows(f"{work}/torch.{m}.{r}")) for r in range(1, rounds + 1)]
    for s in shapes:
        ours = [o[s][0] for o, _ in runs]
        torch = [t[s][0] for _, t in runs]
        ratios = [t / o for o, t in zip(ours, torch)]
        per = " ".join(f"{r:.2f}" for r in ratios)
        print(f"{m:8} {s:7} {statistics.median(ours):8.2f} {statistics.median(torch):8.2f} "
              f"{statistics.median(ratios):10.2f} {per:>16} {max(o[s][1] for o, _ in runs):9.0f} "
              f"{max(t[s][1] for _, t in runs):9.0f}")
print("(ratio > 1: ours is faster; RSS is each process's peak so far, MiB, build included)")
EOF

if [ "$gemm" = 1 ]; then
	echo
	echo "## GEMM vs OpenBLAS: load average before $(load)"
	# OpenBLAS's pthreads keep spinning for a while after each call (2^28
	# cycles by default); interleaved with ours in one process they take a
	# core from our GEMM and halve it. 2^4 cycles makes them sleep at once.
	OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-4} scripts/bench_gemm.sh -threads "$threads" -m 8,128,1024
fi
