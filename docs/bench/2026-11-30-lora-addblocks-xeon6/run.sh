#!/bin/bash
# Alternated rounds: the all-linear LoRA MEAZO step (Qwen3-0.6B shapes, 16x64, q 1) before/after MatMulNTAdd by blocks of rows.
set -e
cd /work/main
out=docs/bench/2026-11-30-lora-addblocks-xeon6
{ date -u; lscpu | grep -E "Model name" ; grep -E "^model\s" /proc/cpuinfo | head -1; uptime; } > $out/env.txt
for round in 1 2; do
  for b in 88335ad_1 88335ad; do
    echo "## round $round: meazo-bench at ${b/_1/~1}" >> $out/zostep.txt
    /tmp/bb/bench_$b zostep -model qwen06b -shapes 16x64 -q 1 -targets all-linear -reps 2 >> $out/zostep.txt 2>&1
  done
done
for b in 88335ad_1 88335ad; do
  echo "## q_proj,v_proj: meazo-bench at ${b/_1/~1}" >> $out/zostep.txt
  /tmp/bb/bench_$b zostep -model qwen06b -shapes 16x64 -q 1 -reps 2 >> $out/zostep.txt 2>&1
done
uptime >> $out/env.txt
