#!/usr/bin/env bash
# Measures what each optimizer costs in memory on the same run: every
# optimizer trains the same config for a few steps in its own process, then
# meazo-plot memory prints optimizer-state bytes and peak RSS side by side.
#
#   scripts/memory_report.sh CONFIG.yaml OUT_DIR [steps] [--set key=value ...]
#
# The paper's claim to check: MEAZO keeps ZO-SGD's memory (one scalar per
# group), while ZO-Adam and R-AdaZO add 2·d floats.
set -euo pipefail
config=${1:?usage: memory_report.sh CONFIG.yaml OUT_DIR [steps] [--set k=v ...]}
out=${2:?usage: memory_report.sh CONFIG.yaml OUT_DIR [steps] [--set k=v ...]}
shift 2
steps=3
if [[ ${1:-} =~ ^[0-9]+$ ]]; then # the optional step count, else the --set list starts here
  steps=$1
  shift
fi
# The runs are started afresh each time, in directories this script made
# (marked): a directory it did not make is never removed.
marker="$out/.memory_report"
for opt in zo-sgd meazo zo-adam radazo fzoo; do
  if [ -e "$out/$opt" ] && [ ! -e "$marker" ]; then
    echo "memory_report.sh: $out/$opt exists and was not made by this script: choose another OUT_DIR" >&2
    exit 1
  fi
done
export GOEXPERIMENT=simd
mkdir -p "$out/bin"
touch "$marker"
touch "$out/.meazo-plot" # this script's directory: meazo-plot may replace the memory.md it wrote before
go build -o "$out/bin/" ./cmd/meazo-train ./cmd/meazo-plot
for opt in zo-sgd meazo zo-adam radazo fzoo; do
  q=1
  [ "$opt" = fzoo ] && q=2
  rm -rf "$out/$opt"
  echo "== $opt" >&2
  "$out/bin/meazo-train" --config "$config" "$@" --set optimizer.name=$opt --set optimizer.q=$q \
    --set train.steps="$steps" --set eval.skip=true --set train.checkpoint_every=0 --out "$out/$opt"
done
"$out/bin/meazo-plot" memory --out "$out" "$out"/zo-sgd "$out"/meazo "$out"/zo-adam "$out"/radazo "$out"/fzoo
