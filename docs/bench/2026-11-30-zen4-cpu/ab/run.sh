#!/bin/bash
# Zen 4 VM, quiet (no helper): (1) the AVX2 GEMM at M = 1024 on 2 threads, bc95815 (2026-11-26's figures) against
# 2d96400, alternated: targets.txt had two Qwen3 shapes at 64-67 % of the peak where 2026-11-26 had 90-92 %;
# (2) the ViT-B/16 LoRA step at 2d96400 and at the encoder attention's pairs (HEAD below: 66955de, built before the run), and PyTorch's, alternated.
set -e
cd /work/main
out=docs/bench/2026-11-30-zen4-cpu/ab
{ date -u; uptime; echo "head: $(git rev-parse HEAD)"; } > $out/env.txt
for round in 1 2 3; do
  for b in bench_old bench_2d96400; do
    echo "## round $round: $b (bench_old = bc95815)" >> $out/gemm-avx2.txt
    /tmp/bb/$b gemm -path avx2 -m 1024 -reps 5 -threads 2 >> $out/gemm-avx2.txt 2>&1
  done
done
uptime >> $out/env.txt
for round in 1 2 3; do
  for b in bench_2d96400 bench_head; do
    echo "## round $round: $b" >> $out/vitstep.txt
    /tmp/bb/$b vitstep -model scripts/gpu/vit-b16-pets-config.json -batch 4 -reps 3 >> $out/vitstep.txt 2>&1
  done
  echo "## round $round: PyTorch" >> $out/vitstep.txt
  PYTHONPATH=/work/shared/pylib /usr/bin/python3 scripts/gpu/bench_torch_cuda.py --config scripts/gpu/vit-b16-pets-config.json --shapes 4x224 --vit-step --device cpu --reps 3 >> $out/vitstep.txt 2>&1
done
uptime >> $out/env.txt
