#!/bin/bash
# Alternated rounds: the ViT-B/16 LoRA MEAZO step, batch 4, at fa139ae (the attention change) and at 1578c7c (its
# activation buffers shared by the layers, 0aba0e9; Add and AddBias on 16 lanes, f95a61e), and PyTorch's MeZO step.
set -e
cd /work/main
out=docs/bench/2026-11-30-vit-attention-xeon6/more
{ date -u; lscpu | grep -E "Model name"; grep -E "^model\s" /proc/cpuinfo | head -1; uptime; } > $out/env.txt
for round in 1 2 3; do
  for b in fa139ae head; do
    echo "## round $round: meazo-bench at $([ $b = head ] && echo 1578c7c || echo $b)" >> $out/vitstep.txt
    /tmp/bb/bench_$b vitstep -model scripts/gpu/vit-b16-pets-config.json -batch 4 -reps 3 >> $out/vitstep.txt 2>&1
  done
  echo "## round $round: PyTorch" >> $out/vitstep.txt
  PYTHONPATH=/work/shared/pylib /usr/bin/python3 scripts/gpu/bench_torch_cuda.py --config scripts/gpu/vit-b16-pets-config.json --shapes 4x224 --vit-step --device cpu --reps 3 >> $out/vitstep.txt 2>&1
done
uptime >> $out/env.txt
