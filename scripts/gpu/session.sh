#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a GPU machine (no Go
# needed), from the repository root, with gpu-kit/ made by scripts/gpu/kit.sh.
# Every result goes to OUT_DIR (one file per part) so it can be committed
# under docs/bench/ with the commit it ran (gpu-kit/commit).
#
#   scripts/gpu/session.sh OUT_DIR [parts...]
#   parts: env conformance memcheck zoagree bench train (default: all, in that order)
set -uo pipefail
out=${1:?usage: session.sh OUT_DIR [parts...]}
shift
parts=${*:-env conformance memcheck zoagree bench train}
kit=/tmp/meazo-gpu-kit
rm -rf "$kit" && mkdir -p "$kit" && tar -C "$kit" -xJf gpu-kit/kit.tar.xz || { echo "no gpu-kit/kit.tar.xz: run scripts/gpu/kit.sh first"; exit 2; }
bin=$kit/bin
export MEAZO_SHARED=$kit/shared
mkdir -p "$out"
cp "$kit/commit" "$out/commit"

# cuBLAS: the system's, else the one in PyTorch's pip tree.
if [ -z "${MEAZO_CUDA_LIB_PATH:-}" ]; then
  d=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null) && export MEAZO_CUDA_LIB_PATH=$d
fi
fx=$MEAZO_SHARED/fixtures/models

for part in $parts; do
  echo "== $part $(date -u +%FT%TZ)"
  case $part in
  env)
    { nvidia-smi; echo "MEAZO_CUDA_LIB_PATH=${MEAZO_CUDA_LIB_PATH:-}"; ls "${MEAZO_CUDA_LIB_PATH:-/nonexistent}" 2>&1 | head;
      python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'; } >"$out/env.txt" 2>&1
    ;;
  conformance) # the suite on the GPU, the TF32 canary, the kernels' CPU bits
    (cd tensor/cuda && "$bin/cuda.test" -test.v -test.count=1 -test.run 'TestConformance|TestOpen|TestPTX|TestKernelTable') >"$out/conformance.txt" 2>&1
    tail -3 "$out/conformance.txt"
    ;;
  memcheck) # one forward and one generation of a fixture model under compute-sanitizer
    echo '{"input_ids": [[1, 5, 9, 200, 3]], "labels": [[1, 5, 9, 200, 3]]}' >"$out/in.json"
    compute-sanitizer --tool memcheck --leak-check full "$bin/meazo-inspect" forward --backend cuda \
      --model "$fx/llama-tiny" --input "$out/in.json" --out "$out/memcheck-logits.safetensors" >"$out/memcheck.txt" 2>&1
    rm -f "$out/in.json" "$out/memcheck-logits.safetensors"
    tail -3 "$out/memcheck.txt"
    ;;
  zoagree) # projected gradients, CPU vs GPU, 64 directions, eps 1e-3 and 1e-6
    for m in llama-tiny qwen3-tiny; do
      "$bin/meazo-bench" zoagree -model "$fx/$m" -a cpu -b cuda -directions 64 -eps 1e-3,1e-6
    done >"$out/zoagree.txt" 2>&1
    cat "$out/zoagree.txt"
    ;;
  bench) # ours vs PyTorch in one run, same GPU
    for m in Llama-3.2-1B Qwen3-0.6B; do
      cfg=$fx/full-configs/$m
      # Every position supervised, the loss on the device: the same work on both sides with no
      # host copy of the logits (ours returns -logits to the host, PyTorch keeps them on the GPU).
      "$bin/meazo-bench" forward --backend cuda --model "$cfg/config.json" --shapes 8x128 --reps 5 --loss-all
      python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 5 --loss-all
      "$bin/meazo-bench" forward --backend cuda --model "$cfg/config.json" --shapes 8x128 --reps 5
      python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 5
      "$bin/meazo-bench" zostep --backend cuda --model "$cfg/config.json" --shapes 8x80,8x300 --q 1 --reps 5
      python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step
    done >"$out/bench.txt" 2>&1
    cat "$out/bench.txt"
    ;;
  train) # end to end: a random model of Llama-3.2-1B's shapes, real SQuAD, 200 steps
    w=$(mktemp -d)
    "$bin/meazo-inspect" random-model --config "$fx/full-configs/Llama-3.2-1B/config.json" --out "$w/model" >"$out/train.txt" 2>&1
    cp "$MEAZO_SHARED"/fixtures/tokenizers/llama3.2/* "$w/model/"
    "$bin/meazo-train" --config configs/llama1b_squad_lora_meazo.yaml --backend cuda --out "$w/run" \
      --set model.path="$w/model" --set task.train="$MEAZO_SHARED/data/squad/train-v1.1-subset.json" \
      --set task.test="$MEAZO_SHARED/data/squad/dev-v1.1.json" --set task.max_test=50 \
      --set train.steps=200 --set train.eval_every=100 >>"$out/train.txt" 2>&1
    cp "$w/run/summary.json" "$out/train-summary.json" 2>/dev/null
    cp "$w/run/metrics.jsonl" "$out/train-metrics.jsonl" 2>/dev/null
    tail -5 "$out/train.txt"
    ;;
  *) echo "unknown part $part" ;;
  esac
done
