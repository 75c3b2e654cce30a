#!/bin/bash
# Alternated rounds: ViT-B/16 LoRA MEAZO step, batch 4, before/after the encoder attention change, and PyTorch's MeZO step.
set -e
cd /work/main
out=docs/bench/2026-11-30-vit-attention-xeon6
{ date -u; lscpu | grep -E "Model name|Flags" | cut -c1-300; grep -E "^model\s" /proc/cpuinfo | head -1; uptime; } > $out/env.txt
for round in 1 2 3; do
  for b in fa139ae_1 fa139ae; do
    echo "## round $round: meazo-bench at ${b/_1/~1}" >> $out/vitstep.txt
    /tmp/bb/bench_$b vitstep -model scripts/gpu/vit-b16-pets-config.json -batch 4 -reps 3 >> $out/vitstep.txt 2>&1
  done
  echo "## round $round: PyTorch" >> $out/vitstep.txt
  PYTHONPATH=/work/shared/pylib /usr/bin/python3 scripts/gpu/bench_torch_cuda.py --config scripts/gpu/vit-b16-pets-config.json --shapes 4x224 --vit-step --device cpu --reps 3 >> $out/vitstep.txt 2>&1
done
uptime >> $out/env.txt
