#!/usr/bin/env bash
# Cross-compiles the arm64 test binaries of the CPU backend (tensor/cpu: the
# NEON micro kernels against their Go reference, the GEMM, the ops), the
# backend conformance suite (tensor/backendtest, and its model-level half,
# model/modeltest) and the model (model: the fixture models against the HF
# references) and runs them under qemu user
# emulation, with the shared fixtures, with -test.short (model/modeltest then
# runs the CPU backend alone, not behind the stacked or device seams, and
# compares it with itself across the seam on the random models only: the
# native runs do the rest). Extra arguments go to every test binary (e.g. -test.v, -test.run X).
#
# Needs qemu-aarch64-static (Debian: apt-get install qemu-user-static); binfmt
# need not be registered, the binaries are run through qemu explicitly.
# Emulation says nothing about arm64 speed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export MEAZO_SHARED="${MEAZO_SHARED:-$(cd ../shared && pwd)}"
QEMU="${QEMU:-qemu-aarch64-static}"
if ! command -v "$QEMU" >/dev/null; then
  echo "test_arm64.sh: $QEMU not found (apt-get install qemu-user-static)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

pkgs=(tensor/cpu tensor/backendtest model/modeltest model)
for p in "${pkgs[@]}"; do
  env -u GOEXPERIMENT CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go test -c -o "$tmp/${p//\//_}.test" "./$p"
done
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 env -u GOEXPERIMENT go vet "./tensor/..." ./model
# Two at a time (emujobs.sh).
. scripts/emujobs.sh
for p in "${pkgs[@]}"; do
  # A test binary runs in its package's directory, as go test runs it.
  emu_add "$p (arm64 under $QEMU)" "$p" -- "$QEMU" "$tmp/${p//\//_}.test" -test.short "$@"
done
emu_run
