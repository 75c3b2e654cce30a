#!/usr/bin/env bash
# Measures the GEMM on the model shapes against OpenBLAS in the same run
# (installs libopenblas-dev with apt-get if it is missing) and against the
# machine's FMA peak. Extra arguments go to `meazo-bench gemm`, e.g.
#   scripts/bench_gemm.sh -m 8,1024 -reps 9 -lmhead
# The machine may be shared: ours and OpenBLAS are timed interleaved and
# medians are reported, so the ratio column is fairer than the absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! [ -e /usr/include/x86_64-linux-gnu/cblas.h ] && ! [ -e /usr/include/cblas.h ]; then
	echo "installing libopenblas-dev ..." >&2
	apt-get install -y libopenblas-dev >&2
fi

# OpenBLAS's idle pthreads spin for 2^28 cycles after every call; timed
# interleaved with ours they would take a core from our GEMM and halve it.
export OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-4}

bin=$(mktemp -d)/meazo-bench
trap 'rm -rf "$(dirname "$bin")"' EXIT
GOEXPERIMENT=simd CGO_ENABLED=1 go build -tags openblas -o "$bin" ./cmd/meazo-bench
"$bin" gemm "$@"
