#!/usr/bin/env bash
# The CPU measurement of a full-parameter ZO step (docs/PERFORMANCE.md's row):
# Qwen3-0.6B's shapes with random weights, 16x64, q = 1, 2 threads.
#   scripts/bench/fullstep_cpu.sh OUT [PAIRS]
# writes into OUT: lscpu.txt, commit.txt; pairs.txt (a step and two plain
# forwards alternated in one process, PAIRS pairs after one warm-up: the time
# ratio); step.txt and forward.txt with their /usr/bin/time -v (*.time), each
# its own process (peak RSS since the model was built); pytorch-step.txt and
# pytorch-forward.txt (MeZO's step in PyTorch, the peer). Run it on a quiet
# machine: the figures are wall times.
set -euo pipefail
out=${1:?usage: fullstep_cpu.sh OUT [PAIRS]}
pairs=${2:-6}
cd "$(dirname "$0")/../.."
# Debian's torch calls whatever libblas.so.3 points at; netlib's reference BLAS
# is some 40x slower than OpenBLAS and would make the peer's figure meaningless:
# refuse before the Go half runs rather than after.
blas=$(readlink -f "$(ldconfig -p | awk '/libblas\.so\.3 /{print $NF; exit}')" 2>/dev/null || true)
case $blas in
*openblas* | *mkl* | *blis*) ;;
*)
	echo "fullstep_cpu.sh: libblas.so.3 is ${blas:-not installed}, not an optimised BLAS: install libopenblas0-pthread so that PyTorch's times are PyTorch's" >&2
	exit 2
	;;
esac
mkdir -p "$out"
lscpu >"$out/lscpu.txt"
git rev-parse HEAD >"$out/commit.txt"
git status --short >>"$out/commit.txt"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOEXPERIMENT=simd go build -o "$bin/" ./cmd/meazo-bench
args=(-model qwen06b -shape 16x64 -threads 2)
"$bin/meazo-bench" fullstep -what pair -reps "$pairs" -warm 1 "${args[@]}" >"$out/pairs.txt"
for what in step forward; do
	/usr/bin/time -v "$bin/meazo-bench" fullstep -what $what -reps 2 -warm 1 "${args[@]}" >"$out/$what.txt" 2>"$out/$what.time"
done
for what in step forward; do
	PYTHONPATH=${MEAZO_SHARED:-../shared}/pylib /usr/bin/python3 scripts/bench/mezo_full_step.py \
		--model qwen06b --shape 16x64 --what $what --threads 2 >"$out/pytorch-$what.txt" 2>&1
done
grep -h "median\|pair [0-9]*:\|peak\|s (" "$out"/*.txt
