#!/usr/bin/env bash
# The CPU figures issue 12 asks for, in one run on this machine: the GEMM at
# M = 8 and 1024 on every model shape against the FMA peak of its path
# (AVX-512 and AVX2 where the CPU has them), the whole forward at 8x128 of
# both models against the peak, and a ZO step (LoRA, MEAZO, q = 1) at 8x80
# and 8x300 against two loss-only forwards of the same batch.
#
#   scripts/bench_cpu_targets.sh [--reps 5] [--threads 2] > out.txt
#
# About 15 minutes on 2 Zen 4 cores. The targets: AVX-512 GEMM >= 90 % of
# the peak at M = 1024 and >= 50 % at M = 8; AVX2 >= 85 % of the AVX2 peak at
# M = 1024; forward >= 85 %; step within 1.05x of two forwards. Every
# figure depends on the machine being quiet: the load average is printed
# before each part, and a part run above the thread count is contended.
# Needs Go (meazo-bench carries the published configs).
set -euo pipefail
cd "$(dirname "$0")/.."

reps=5
threads=2
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	*) echo "bench_cpu_targets.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GOEXPERIMENT=simd go build -o "$work/meazo-bench" ./cmd/meazo-bench
bench() {
	echo
	echo "\$ meazo-bench $*    # load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%T)"
	"$work/meazo-bench" "$@" 2>&1
}

cpu() { grep -m1 "$1" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'; }
flags=$(cpu flags)
echo "# commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'), $(date -u +%FT%TZ)"
echo "# $(nproc) CPUs: $(cpu 'model name'), family $(cpu 'cpu family') model $(cpu 'model'); $threads threads"

if [[ " $flags " == *" avx512f "* ]]; then
	bench gemm -path avx512 -m 8,1024 -reps "$reps" -threads "$threads"
fi
if [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]]; then
	bench gemm -path avx2 -m 1024 -reps "$reps" -threads "$threads"
fi
for m in qwen06b llama1b; do
	bench forward -model "$m" -shapes 8x128 -reps 3 -threads "$threads"
done
for m in qwen06b llama1b; do
	bench zostep -model "$m" -shapes 8x80,8x300 -q 1 -reps 2 -threads "$threads"
done
