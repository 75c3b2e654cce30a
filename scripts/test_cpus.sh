#!/usr/bin/env bash
# Runs the test binaries of every package with SIMD or assembly code paths
# (tensor/cpu: the GEMM paths, the element-wise kernels and the peak loops;
# noise: the AVX2 and AVX-512 noise kernels; zo; cmd/meazo-bench: the
# bandwidth probe) and of the packages that run them end to end
# (tensor/backendtest, model/modeltest, model, with the shared fixtures),
# built with GOEXPERIMENT=simd, on CPUs that lack features this machine may
# have, emulated by qemu user mode:
#
#   EPYC-Rome    AVX2 and FMA, no AVX-512 (AMD Zen 2, the host of many A100s)
#   SandyBridge  AVX, no AVX2 nor FMA (only the SIMD packages: the end-to-end
#                ones take the paths they take under Nehalem)
#   Nehalem      SSE4.2, no AVX (x86-64 before 2011; Go's default GOAMD64=v1 needs only SSE2)
#
# (SandyBridge found that 8-lane archsimd code needs AVX2, not just AVX: Go
# zeroes a Float32x8 with VPXOR ymm.)
#
# Each code path must be chosen by CPUID: a kernel the CPU lacks dies with
# SIGILL under qemu (which implements AVX and AVX2 but not AVX-512, and
# refuses what the model lacks). MEAZO_EXPECT_CPU tells the tests which
# features the model has, and they fail if the paths chosen do not match
# (TestPathsFollowCPU, TestKernelsFollowCPU, TestLoadsFollowCPU), so a qemu
# that emulated more than asked cannot make this pass on the fast paths. The binaries run with
# -test.short (noise's every-word check then takes every 37th word: the full
# one is native CI's, and takes minutes under emulation); extra arguments go
# to every test binary (e.g. -test.v, -test.run X). About 6 minutes on 2
# quiet cores (347 s, 11 minutes of CPU time, most of it the AVX2 kernels under
# EPYC-Rome, which qemu emulates 100 to 1,000 times slower than native).
#
# Needs qemu-x86_64-static (Debian: apt-get install qemu-user-static); binfmt
# need not be registered. Emulation says nothing about speed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export MEAZO_SHARED="${MEAZO_SHARED:-$(cd ../shared && pwd)}"
QEMU="${QEMU:-qemu-x86_64-static}"
if ! command -v "$QEMU" >/dev/null; then
  echo "test_cpus.sh: $QEMU not found (apt-get install qemu-user-static)" >&2
  exit 1
fi
if [[ $(go env GOARCH) != amd64 ]]; then
  echo "test_cpus.sh: amd64 only (the CPU models are x86-64)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

simd=(tensor/cpu noise zo cmd/meazo-bench)
pkgs=("${simd[@]}" tensor/backendtest model/modeltest model)
for p in "${pkgs[@]}"; do
  GOEXPERIMENT=simd CGO_ENABLED=0 go test -c -o "$tmp/${p//\//_}.test" "./$p"
done

# cmd/meazo-bench runs its SIMD tests only under emulation: they must all
# still exist, or a rename would leave the run checking nothing.
bench_simd='^(TestVectorSums|TestLoadsFollowCPU|TestSumLoads)$'
n=$("$tmp/cmd_meazo-bench.test" -test.list "$bench_simd" | grep -c '^Test' || true)
if ((n != 3)); then
  echo "test_cpus.sh: cmd/meazo-bench has $n of the 3 tests $bench_simd names (renamed? update this script)" >&2
  exit 1
fi

# model:level:packages, the level being the widest vector extension the
# model has. The runs go two at a time (emujobs.sh).
. scripts/emujobs.sh
cpus=(EPYC-Rome:avx2:all SandyBridge:avx:simd Nehalem:sse:all)
for c in "${cpus[@]}"; do
  IFS=: read -r model level which <<<"$c"
  run=("${pkgs[@]}")
  if [[ $which == simd ]]; then run=("${simd[@]}"); fi
  for p in "${run[@]}"; do
    # cmd/meazo-bench: its SIMD code only (the bandwidth probe); its
    # commands' end-to-end runs take the kernels the other packages check
    # (90 s a CPU model under emulation).
    only=()
    if [[ $p == cmd/meazo-bench ]]; then only=(-test.run "$bench_simd"); fi
    # A test binary runs in its package's directory, as go test runs it.
    emu_add "$p (-cpu $model, $level)" "$p" MEAZO_EXPECT_CPU=$level -- "$QEMU" -cpu "$model" "$tmp/${p//\//_}.test" -test.short "${only[@]}" "$@"
  done
done
emu_run
