#!/bin/bash
# Zen 4 VM, 2026-11-30: the ViT-B/16 LoRA MEAZO step (batch 4) against PyTorch's MeZO step, alternated in
# three rounds, then scripts/bench_cpu_targets.sh (GEMM, forward, LoRA step). Quiet machine, commit in commit.txt.
set -e
cd /work/main
out=docs/bench/2026-11-30-zen4-cpu
{ date -u; lscpu | grep -E "Model name|^CPU family|^Model:"; uptime; } > $out/env.txt
git rev-parse HEAD > $out/commit.txt
for round in 1 2 3; do
  echo "## round $round: meazo-bench" >> $out/vitstep.txt
  /tmp/bb/meazo-bench vitstep -model scripts/gpu/vit-b16-pets-config.json -batch 4 -reps 3 >> $out/vitstep.txt 2>&1
  echo "## round $round: PyTorch" >> $out/vitstep.txt
  PYTHONPATH=/work/shared/pylib /usr/bin/python3 scripts/gpu/bench_torch_cuda.py --config scripts/gpu/vit-b16-pets-config.json --shapes 4x224 --vit-step --device cpu --reps 3 >> $out/vitstep.txt 2>&1
done
uptime >> $out/env.txt
scripts/bench_cpu_targets.sh > $out/targets.txt 2>&1
uptime >> $out/env.txt
