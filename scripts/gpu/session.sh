#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a GPU machine (no Go
# needed), from the repository root, with gpu-kit/ made by scripts/gpu/kit.sh.
# Every result goes to OUT_DIR (one file per part, at most 8 files: the
# device tool returns no more) so it can be committed under docs/bench/ with
# the commit it ran (first line of env.txt). Each part has its own time limit,
# so a part that hangs or fails costs only its own minutes.
#
#   scripts/gpu/session.sh OUT_DIR [parts...]
#   parts: env conformance zoagree host bench memcheck train demo profile (default: all, in that order);
#   also kvprof (rope and store_kv under ncu, this commit against old/meazo-bench: kit.sh with OLD_REV);
#   also step (the ZO step alone, ours and PyTorch's), loratargets (LoRA steps on every projection and on the top
#   quarter of the layers against q/v, ours alone; ~3 min), default (our forward and step with the default
#   kernels), tiled (the attention kernels against each other), attnprof (ncu on the attention kernels
#   alone), uploads (ZO steps with staged asynchronous uploads against synchronous ones), keptnoise (ZO
#   steps against an older commit's meazo-bench: kit.sh with OLD_REV), grouped (grouped ZO steps and their peak
#   device memory; with OLD_REV=71d86f7, against all groups at once), ab (forwards and ZO steps against an
#   older commit's meazo-bench), chunks (attention's chunks of queries, MEAZO_CUDA_ATTN_CHUNK), stack (stacked projections against
#   apart, MEAZO_CUDA_STACK), sgemm (cuBLAS SGEMM's rate alone,
#   and on the step's projections apart and stacked), stepprofile (ncu per kernel of a ZO step), tf32x3 (the
#   experiment dev/cuda/gemm_tf32x3.cu, products on the tensor cores, against cuBLAS SGEMM and TF32), bf16
#   (weights kept in bfloat16 against float32: time and peak memory), trainbf16 (training from a BF16 checkpoint
#   with the weights kept in bfloat16 and widened at load: identical metrics) and cpuops
#   (the CPU backend's per-op times here), full (full-parameter ZO, tensor.Trainer: its checks on the GPU,
#   compute-sanitizer on full-parameter steps, steps against PyTorch MeZO's and the Qwen3-8B bf16 step; ~8 min),
#   fulltrain (200 full-parameter MEAZO steps of Llama-3.2-1B's shapes on real SST-2, with validation; ~2 min),
#   fullprofile (ncu per kernel of a full-parameter step and of two forwards, Llama-3.2-1B at 16x64 and 8x300),
#   bf16products (bfloat16 weights multiplied on the tensor cores: the check, zoagree, Ministral's step; ~4 min, at most 8),
#   tcgemm (float32-accurate products on Hopper's tensor cores, kernels_sm90a/gemm_3xtf32.cu: dev/cuda/gemm_wgmma.cu
#   built here with nvcc, against cuBLAS SGEMM, TF32 and cuBLAS's own float32 emulation; then in the backend with
#   MEAZO_CUDA_3XTF32=1: its accuracy test, the conformance suite, zoagree; ~4 min), tcbench (forwards and steps with
#   MEAZO_CUDA_3XTF32=1 against the default and PyTorch with TF32 off and on; ~5 min), tcfull (full-parameter steps with it: against the CPU,
#   then timed against the default and PyTorch MeZO's; ~3 min),
#   stepcheck (compute-sanitizer memcheck, racecheck, synccheck on a whole LoRA step of Qwen3-0.6B's shapes at 2x300),
#   tcsanitize (compute-sanitizer racecheck and synccheck on gemm_3xtf32 in the harness, then memcheck, racecheck and
#   synccheck on a LoRA step with MEAZO_CUDA_3XTF32=1; ~3 min), vitprofile (ncu per kernel of the ViT-B/16 step, ours
#   and PyTorch's; ~3 min), bf16profile (the same for Ministral-3 14B's first 4 layers with bfloat16 products; ~3 min),
#   models (issue 31's models on random weights of the real shapes, ours against PyTorch + peft running MeZO's two
#   forwards in the same run, s/step and peak GPU memory: Qwen3-8B LoRA step in float32 at 8x300, Ministral-3 14B's
#   language model with bfloat16 weights multiplied in bfloat16 at 8x300, ViT-B/16 on Pets' 37 classes at batch 32, then 100 ViT steps;
#   expected ~4-5 min, at most 9 by its timeouts), run-qwen3-8b and run-ministral14b (100 MEAZO steps of each at
#   8x300 on new random batches, in memory: ~3.5 min and at most 5 by its timeout, one call each; a meazo-train run would first
#   write the 33 or 28 GB checkpoint to disk), vit (the ViT's encoder attention: ViT-B/16 at batch 32 with the batched
#   GEMMs and with the exact kernel against PyTorch's step, interleaved, and the suite's encoder ops and ViT fixture
#   with each path forced; ~2 min). MODELS_TINY=1 runs these on the CPU with tiny configs of the same
#   architectures, to check them without a GPU (MEAZO_PYTHON: the Python with torch, transformers and peft), here:
#     scripts/gpu/kit.sh && MODELS_TINY=1 MEAZO_PYTHON=/usr/bin/python3 PYTHONPATH=../shared/pylib \
#       scripts/gpu/session.sh /tmp/out models run-qwen3-8b run-ministral14b vit
set -uo pipefail
out=${1:?usage: session.sh OUT_DIR [parts...]}
shift
parts=${*:-env conformance zoagree host bench memcheck train demo profile}
kit=/tmp/meazo-gpu-kit
rm -rf "$kit" && mkdir -p "$kit" && tar -C "$kit" -xJf gpu-kit/kit.tar.xz || { echo "no gpu-kit/kit.tar.xz: run scripts/gpu/kit.sh first"; exit 2; }
bin=$kit/bin
export MEAZO_SHARED=$kit/shared PYTHONUNBUFFERED=1
mkdir -p "$out"

# cuBLAS: the CUDA toolkit's, else the one in PyTorch's pip tree.
if [ -z "${MEAZO_CUDA_LIB_PATH:-}" ]; then
  for f in /usr/local/cuda/lib64/libcublas.so.1[0-9] /usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.1[0-9] \
    $(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null | xargs -I{} find {}/nvidia -name 'libcublas.so.1[0-9]' 2>/dev/null); do
    [ -e "$f" ] && { export MEAZO_CUDA_LIB_PATH=$(dirname "$f"); break; }
  done
fi
fx=$MEAZO_SHARED/fixtures/models

# peakmem FILE CMD...: runs CMD, sampling the GPU's used memory every 50 ms
# (the same measure for our binaries and PyTorch: context, caches and all),
# and appends the peak to FILE.
peakmem() {
  local f=$1; shift
  if ! command -v nvidia-smi >/dev/null; then
    "$@"; local rc=$?
    echo "# peak GPU memory: no nvidia-smi here" >>"$f"
    return $rc
  fi
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$kit/mem.log" 2>/dev/null &
  local p=$!
  "$@"
  local rc=$?
  kill $p 2>/dev/null; wait $p 2>/dev/null
  echo "# peak GPU memory used (nvidia-smi, 50 ms samples): $(sort -n "$kit/mem.log" | tail -1) MiB; baseline $(head -1 "$kit/mem.log") MiB" >>"$f"
  return $rc
}

# suite [VAR=VALUE...]: the conformance suite on the GPU with those variables set.
suite() { (cd tensor/cuda && env "$@" timeout 150 "$bin/cuda.test" -test.count=1 -test.timeout 140s -test.run 'TestConformance'); }

# llamamodel DIR [FLAG...]: a random model of Llama-3.2-1B's shapes (meazo-inspect random-model with those flags)
# and its tokenizer, in DIR.
llamamodel() {
  local dir=$1; shift
  timeout 90 "$bin/meazo-inspect" random-model "$@" --config "$fx/full-configs/Llama-3.2-1B/config.json" --out "$dir" &&
    cp "$MEAZO_SHARED"/fixtures/tokenizers/llama3.2/* "$dir/"
}

# squadrun SECONDS MODEL_DIR RUN_DIR [--set KEY=VALUE...]: configs/llama1b_squad.yaml on the GPU with that model
# and the real SQuAD data, stopped after SECONDS.
squadrun() {
  local secs=$1 model=$2 run=$3; shift 3
  [ -d "$MEAZO_SHARED/data/squad" ] || { echo "# no SQuAD in the kit: make it with KIT_SQUAD=1 scripts/gpu/kit.sh"; return 1; }
  timeout "$secs" "$bin/meazo-train" --config configs/llama1b_squad.yaml --backend cuda --out "$run" --set model.path="$model" \
    --set task.train="$MEAZO_SHARED/data/squad/train-v1.1-subset.json" --set task.test="$MEAZO_SHARED/data/squad/dev-v1.1.json" "$@"
}

# The models parts' inputs: the real shapes on the GPU (ours by the built-in names, PyTorch from the same configs'
# files, held to them by model's TestPublishedMinistral and ./qwen3-8b-config.json's twin), or with MODELS_TINY=1
# tiny configs of the same architectures on the CPU.
py=${MEAZO_PYTHON:-python3}
if [ -n "${MODELS_TINY:-}" ]; then
  mbe=cpu mdev=cpu lm_shape=2x16 vit_batch=4 vit_shape=4x64 run_steps=5
  qwen=$fx/qwen3-tiny/config.json qwen_cfg=$fx/qwen3-tiny/config.json
  ministral=model/testdata/ministral3/ministral3-tiny/config.json ministral_cfg=$ministral vit=model/testdata/vit/vit-tiny/config.json
else
  mbe=cuda mdev=cuda lm_shape=8x300 vit_batch=32 vit_shape=32x224 run_steps=100
  qwen=qwen3-8b qwen_cfg=scripts/gpu/qwen3-8b-config.json
  ministral=ministral14b ministral_cfg=model/testdata/ministral3/Ministral-3-14B-Instruct-2512-BF16.config.json
  vit=scripts/gpu/vit-b16-pets-config.json
fi

# timed FILE SECONDS CMD...: CMD under timeout with its peak GPU memory, output and exit status into FILE.
timed() {
  local f=$1 secs=$2; shift 2
  peakmem "$f" timeout "$secs" "$@" >>"$f" 2>&1 || echo "# exit status $? (124: stopped after ${secs}s)" >>"$f"
}

# modelstep FILE NAME OURS TORCH_CONFIG DTYPE SECONDS [FLAG]: a decoder's LoRA MEAZO step at $lm_shape, ours (meazo-bench
# zostep -model OURS FLAG) then PyTorch's (bench_torch_cuda.py --mezo-step, weights in DTYPE), each under timeout SECONDS.
modelstep() {
  local f=$1 name=$2 ours=$3 cfg=$4 dtype=$5 secs=$6; shift 6
  echo "## $name $lm_shape: ours" >>"$f"
  timed "$f" "$secs" "$bin/meazo-bench" zostep --backend "$mbe" -model "$ours" -shapes "$lm_shape" -q 1 -reps 3 "$@"
  echo "## $name $lm_shape: PyTorch + peft, MeZO" >>"$f"
  timed "$f" "$secs" "$py" scripts/gpu/bench_torch_cuda.py --device "$mdev" --config "$cfg" --shapes "$lm_shape" --reps 3 --mezo-step --dtype "$dtype"
}

# modelrun FILE NAME OURS SECONDS [FLAG]: $run_steps MEAZO steps of OURS at $lm_shape, each on a new random batch.
modelrun() {
  local f=$1 name=$2 ours=$3 secs=$4; shift 4
  { echo "# commit $(cat "$kit/commit")"; echo "## $name $lm_shape: $run_steps steps"; } >"$f"
  timed "$f" "$secs" "$bin/meazo-bench" zostep --backend "$mbe" -model "$ours" -shapes "$lm_shape" -q 1 -reps 1 -steps "$run_steps" "$@"
  grep -E "^##|steps on|peak|exit status" "$f"
}

# build_wgmma: dev/cuda/gemm_wgmma.cu built with the machine's nvcc for sm_90a into $kit/gemm_wgmma (once), linked
# against cuBLAS where the backend found it (the toolkit's, or PyTorch's pip tree with its headers beside it; by the
# versioned file when there is no unversioned libcublas.so); its library path exported. ptxas's report on stdout.
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build_wgmma() {
  export LD_LIBRARY_PATH=${MEAZO_CUDA_LIB_PATH:+$MEAZO_CUDA_LIB_PATH:}${LD_LIBRARY_PATH:-}
  [ -x "$kit/gemm_wgmma" ] && return 0
  local libs=-lcublas
  if [ -n "${MEAZO_CUDA_LIB_PATH:-}" ]; then
    libs="-I$MEAZO_CUDA_LIB_PATH/../include -L$MEAZO_CUDA_LIB_PATH -lcublas"
    [ -e "$MEAZO_CUDA_LIB_PATH/libcublas.so" ] || libs="-I$MEAZO_CUDA_LIB_PATH/../include $(ls "$MEAZO_CUDA_LIB_PATH"/libcublas.so.1[0-9] | head -1)"
  fi
  timeout 240 "$nvcc" -allow-unsupported-compiler -Xptxas -v -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o "$kit/gemm_wgmma" dev/cuda/gemm_wgmma.cu $libs ||
    { echo "# again without cuBLAS's emulation"; timeout 240 "$nvcc" -allow-unsupported-compiler -Xptxas -v -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -DNO_EMULATION \
        -o "$kit/gemm_wgmma" dev/cuda/gemm_wgmma.cu $libs; }
}

for part in $parts; do
  echo "== $part $(date -u +%FT%TZ)"
  case $part in
  env)
    { echo "commit $(cat "$kit/commit")"; date -u; nvidia-smi; echo "MEAZO_CUDA_LIB_PATH=${MEAZO_CUDA_LIB_PATH:-}";
      ls "${MEAZO_CUDA_LIB_PATH:-/nonexistent}" 2>&1 | head; uname -r; nproc; grep -m1 'model name' /proc/cpuinfo;
      echo "avx512: $(grep -m1 -o 'avx512[a-z]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"; cat /sys/fs/cgroup/cpu.max 2>/dev/null;
      timeout 60 python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'
      # the backend as MEAZO_CUDA_3XTF32=auto opens it here (on a Hopper GPU: =1's description and arithmetic)
      MEAZO_CUDA_3XTF32=auto timeout 60 "$bin/meazo-bench" zostep --backend cuda -model "$fx/llama-tiny/config.json" -shapes 1x8 -q 1 -reps 1 2>&1 | head -1
    } >"$out/env.txt" 2>&1
    tail -5 "$out/env.txt"
    ;;
  conformance) # the suite on the GPU, the TF32 canary, the kernels' CPU bits; then the suite with the batched
    # GEMMs' attention on every call, in chunks of 4 queries (the default's 128 take only calls of more than 128)
    (cd tensor/cuda && timeout 150 "$bin/cuda.test" -test.v -test.count=1 -test.timeout 140s -test.run 'TestConformance|TestOpen|TestPTX|TestKernelTable') >"$out/conformance.txt" 2>&1
    echo "## the suite with MEAZO_CUDA_ATTENTION=gemm MEAZO_CUDA_ATTN_CHUNK=4" >>"$out/conformance.txt"
    suite MEAZO_CUDA_ATTENTION=gemm MEAZO_CUDA_ATTN_CHUNK=4 >>"$out/conformance.txt" 2>&1
    grep -E '^(## |--- FAIL|FAIL|ok|PASS)' "$out/conformance.txt" | head -20; tail -3 "$out/conformance.txt"
    ;;
  ab) # forwards and ZO steps of this commit against gpu-kit's old/meazo-bench (kit.sh with OLD_REV),
    # interleaved, both models
    f=$out/ab.txt
    echo "# new: $(cat "$kit/commit"), old: $(cat "$kit/old/commit" 2>/dev/null)" >"$f"
    for m in Qwen3-0.6B Llama-3.2-1B; do
      for v in new old new old; do
        b=$bin/meazo-bench; [ $v = old ] && b=$kit/old/meazo-bench
        echo "## $v $m" >>"$f"
        timeout 60 "$b" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x128,8x300 --reps 5 --loss-all >>"$f" 2>&1
        timeout 60 "$b" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^8x" "$f"
    ;;
  kvprof) # rope and store_kv alone under ncu (GPU time per launch), this commit against gpu-kit's old/meazo-bench
    # (kit.sh with OLD_REV), a ZO step of each model at 8x300: ab's wall times cannot resolve kernels of ~3 % of a step
    f=$out/kvprof.txt
    echo "# new: $(cat "$kit/commit"), old: $(cat "$kit/old/commit" 2>/dev/null)" >"$f"
    for m in Qwen3-0.6B Llama-3.2-1B; do
      for v in new old; do
        b=$bin/meazo-bench; [ $v = old ] && b=$kit/old/meazo-bench
        echo "## $v $m 8x300" >>"$f"
        timeout 60 ncu --kernel-name regex:'rope|store_kv' --launch-count 168 --metrics gpu__time_duration.sum --print-summary per-kernel \
          "$b" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x300 --q 1 --reps 1 >>"$f" 2>&1
      done
    done
    python3 scripts/gpu/ncu_summary.py "$f"
    ;;
  chunks) # attentionGEMM's chunks of queries against all at once (MEAZO_CUDA_ATTN_CHUNK 0, 64, 128), interleaved
    f=$out/chunks.txt
    : >"$f"
    for m in Qwen3-0.6B Llama-3.2-1B; do
      for c in 0 64 128 0 64 128; do
        echo "## MEAZO_CUDA_ATTN_CHUNK=$c $m" >>"$f"
        MEAZO_CUDA_ATTN_CHUNK=$c timeout 60 "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x300,8x512 --reps 5 --loss-all >>"$f" 2>&1
        MEAZO_CUDA_ATTN_CHUNK=$c timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^8x" "$f"
    ;;
  zoagree) # projected gradients, CPU vs GPU, 64 directions, eps 1e-3 and 1e-6
    for m in llama-tiny qwen3-tiny; do
      timeout 60 "$bin/meazo-bench" zoagree -model "$fx/$m" -a cpu -b cuda -directions 64 -eps 1e-3,1e-6
    done >"$out/zoagree.txt" 2>&1
    cat "$out/zoagree.txt"
    ;;
  host) # the host side of a ZO step on this machine: the engine alone (no model), then a profile of zostep on the GPU
    { timeout 60 "$bin/zo.test" -test.run XXX -test.bench 'BenchmarkStep/meazo|BenchmarkFill' -test.benchtime 20x -test.cpu 16;
      timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/Qwen3-0.6B/config.json" --shapes 8x80 --q 1 --reps 20 \
        -cpuprofile "$out/zostep-qwen-8x80.pprof"; } >"$out/host.txt" 2>&1
    cat "$out/host.txt"
    ;;
  step) # the ZO step alone, ours vs PyTorch's MeZO, same GPU, same run
    f=$out/step.txt
    : >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      cfg=$fx/full-configs/$m
      echo "## $m" >>"$f"
      timeout 90 "$bin/meazo-bench" zostep --backend cuda --model "$cfg/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step >>"$f" 2>&1
    done
    cat "$f"
    ;;
  loratargets) # LoRA on every projection (all-linear) and on the top quarter of the layers (adapter.layers)
    # against q/v on every layer: ours alone, same run, both models at 8x80 and 8x300
    f=$out/loratargets.txt
    : >"$f"
    for m in Llama-3.2-1B:4 Qwen3-0.6B:7; do
      cfg=$fx/full-configs/${m%%:*}
      echo "## ${m%%:*}" >>"$f"
      for args in "--targets q_proj,v_proj" "--targets all-linear" "--targets q_proj,v_proj --top ${m##*:}"; do
        timeout 90 "$bin/meazo-bench" zostep --backend cuda --model "$cfg/config.json" --shapes 8x80,8x300 --q 1 --reps 5 $args >>"$f" 2>&1
      done
    done
    cat "$f"
    ;;
  tiled) # the attention kernels: the suite with attention_tiled and with the gemm kernel forced
    # (MEAZO_CUDA_ATTENTION=tiled|gemm; the fixtures' heads are narrower than 128, so the conformance part runs
    # attention), then forwards and ZO steps with each kernel, same run
    f=$out/tiled.txt
    for k in tiled gemm; do
      echo "## the suite with MEAZO_CUDA_ATTENTION=$k" >>"$f"
      suite MEAZO_CUDA_ATTENTION=$k >>"$f" 2>&1
    done
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for k in rows tiled gemm rows tiled gemm; do
        MEAZO_CUDA_ATTENTION=$k timeout 60 "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x128,8x300,8x512 --reps 5 --loss-all >>"$f" 2>&1
      done
      for k in rows tiled gemm; do
        MEAZO_CUDA_ATTENTION=$k timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^(--- FAIL|FAIL|ok|PASS)|^8x|^#.*config.json" "$f"
    ;;
  attnprof) # the attention kernels' GPU time alone (ncu on them only), each kernel, both models, 8x300; for gemm
    # it sees attention_softmax, not the two batched cuBLAS GEMMs (the forwards' difference)
    f=$out/attnprof.txt
    : >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for k in rows tiled gemm; do
        echo "## $m, MEAZO_CUDA_ATTENTION=$k" >>"$f"
        MEAZO_CUDA_ATTENTION=$k timeout 60 ncu --kernel-name regex:attention --metrics gpu__time_duration.sum --print-summary per-kernel \
          "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x300 --reps 1 --loss-all >>"$f" 2>&1
      done
    done
    grep -E "^##|^  attention|gpu__time_duration|^8x" "$f"
    ;;
  uploads) # the suite with the gemm attention forced, then ZO steps with the staged asynchronous uploads
    # (the default) against synchronous ones (MEAZO_CUDA_UPLOADS=sync), interleaved, both models
    f=$out/uploads.txt
    echo "## the suite with MEAZO_CUDA_ATTENTION=gemm" >"$f"
    suite MEAZO_CUDA_ATTENTION=gemm >>"$f" 2>&1
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for u in async sync async sync; do
        MEAZO_CUDA_UPLOADS=$u timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^(--- FAIL|FAIL|ok|PASS)|^8x|^#.*config.json" "$f"
    ;;
  keptnoise) # ZO steps of this commit against gpu-kit's old/meazo-bench (the commit in old/commit, if
    # kit.sh was given OLD_REV), interleaved, both models: the host share with and without a change
    f=$out/keptnoise.txt
    echo "# new: $(cat "$kit/commit"), old: $(cat "$kit/old/commit" 2>/dev/null)" >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for v in new old new old; do
        b=$bin/meazo-bench; [ $v = old ] && b=$kit/old/meazo-bench
        echo "## $v $m" >>"$f"
        timeout 60 "$b" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^8x.*ZO" "$f"
    ;;
  grouped) # grouped estimation (one group per layer, prefix caching), never timed on a GPU: this commit runs one
    # group's variants at a time (f464b2b: 3.1x less memory and 20 % faster on the CPU); with gpu-kit's
    # old/meazo-bench (kit.sh with OLD_REV=71d86f7, if the kit still fits) all groups' at once, interleaved.
    # Both models at 8x80: the ZO steps (zostep -grouped: also without prefix caching), then each version's peak
    # device memory (zomem, a process each)
    f=$out/grouped.txt
    versions=new; [ -x "$kit/old/meazo-bench" ] && versions="new old"
    echo "# new: $(cat "$kit/commit"), old: $(cat "$kit/old/commit" 2>/dev/null)" >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for v in $versions $versions; do
        b=$bin/meazo-bench; [ $v = old ] && b=$kit/old/meazo-bench
        echo "## $v $m zostep" >>"$f"
        timeout 90 "$b" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80 --q 1 --reps 3 -grouped >>"$f" 2>&1
      done
      for v in $versions; do
        b=$bin/meazo-bench; [ $v = old ] && b=$kit/old/meazo-bench
        echo "## $v $m zomem -grouped" >>"$f"
        timeout 90 "$b" zomem --backend cuda --model "$fx/full-configs/$m/config.json" --shape 8x80 -grouped -steps 2 >>"$f" 2>&1
      done
    done
    grep -E "^## |^8x|grouped|peak" "$f"
    ;;
  stack) # stacked projections (MEAZO_CUDA_STACK=1: q|k|v and gate|up as one product each): the suite with
    # them, then forwards and ZO steps with and without, interleaved, both models
    f=$out/stack.txt
    echo "## the suite with MEAZO_CUDA_STACK=1" >"$f"
    suite MEAZO_CUDA_STACK=1 >>"$f" 2>&1
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for s in 1 0 1 0; do
        MEAZO_CUDA_STACK=$s timeout 60 "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x128,8x300 --reps 5 --loss-all >>"$f" 2>&1
        MEAZO_CUDA_STACK=$s timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      done
    done
    grep -E "^## |^(--- FAIL|FAIL|ok|PASS)|^8x|^#.*config.json" "$f"
    ;;
  tf32x3) # dev/cuda/gemm_tf32x3.cu (split float32 products on the tensor cores; no longer in the backend): its
    # registers and the products alone against cuBLAS SGEMM and TF32, from the PTX kit.sh compiled
    f=$out/tf32x3.txt
    timeout 120 python3 dev/cuda/gemm_tf32x3.py --ptx "$kit/dev/gemm_tf32x3.ptx" >"$f" 2>&1
    tail -n 60 "$f"
    ;;
  tcgemm) # dev/cuda/gemm_wgmma.cu (3xTF32 on Hopper's wgmma, the accumulation rounded on the CUDA cores every tile
    # of k) against cuBLAS SGEMM, TF32 and cuBLAS's BF16x9 float32 emulation, same run: built here with the
    # machine's nvcc for sm_90a; its correctness check, then memcheck on the check, then the models' 46 projection
    # shapes and ViT-B/16's 3 at 6,304 rows (time and error against float64; rows 640 and 1,280 first, with the
    # backend's split k where its rule splits). 79 s with the backend's checks at ff46f2f (run5, 46 shapes).
    f=$out/tcgemm.txt
    { echo "# commit $(cat "$kit/commit"); $("$nvcc" --version | tail -1)"
      build_wgmma
      echo "## memcheck of the correctness check"
      timeout 120 compute-sanitizer --tool memcheck "$kit/gemm_wgmma" --check 2>&1 | tail -n 15
      echo "## the models' shapes"
      timeout 240 "$kit/gemm_wgmma"; echo "# exit status $?"; } >"$f" 2>&1
    tail -n 60 "$f"
    # The same kernel in the backend (Options.TF32x3): its accuracy test, the conformance suite, projected
    # gradients against the CPU at eps 1e-3 and 1e-6 (issue 33's conditions for a default), all with it on.
    f=$out/tcgemm-backend.txt
    { echo "# commit $(cat "$kit/commit")"
      (cd tensor/cuda && MEAZO_CUDA_3XTF32=1 timeout 120 "$bin/cuda.test" -test.v -test.count=1 -test.timeout 110s -test.run 'TestGemm3xTF32OnGPU')
      echo "## the suite with MEAZO_CUDA_3XTF32=1"
      suite MEAZO_CUDA_3XTF32=1
      # zoagree on products the kernel takes: the tiny fixtures' (k = 64) are below gemm3xTF32MinK, so a random
      # model of Qwen3-0.6B's shapes (k >= 1024; its first 4 layers, for the CPU's time), its batch's grids too
      # small for the fill rule: =all puts every product on the kernel; =0 (SGEMM) beside it, each against the CPU.
      timeout 60 "$bin/meazo-inspect" random-model --model qwen06b --layers 4 --out "$kit/zoagree-qwen06b" >/dev/null
      for tc in all 0; do
        echo "## zoagree random Qwen3-0.6B shapes, MEAZO_CUDA_3XTF32=$tc"
        MEAZO_CUDA_3XTF32=$tc timeout 120 "$bin/meazo-bench" zoagree -model "$kit/zoagree-qwen06b" -a cpu -b cuda -directions 64 -eps 1e-3,1e-6
      done; } >"$f" 2>&1
    grep -E "^##|^(---|FAIL|ok|PASS)|tf32x3_test|^1e-0" "$f" | head -30
    ;;
  tcsanitize) # issue 33's last condition before gemm_3xtf32 may be the default on Hopper: compute-sanitizer racecheck
    # and synccheck on the harness's correctness check (the kernel unsplit, serial and every2, k in 2 and 3 slices with
    # the reduce), then memcheck (leaks too), racecheck and synccheck on a whole LoRA MEAZO step in the backend with
    # MEAZO_CUDA_3XTF32=1: a 2-layer model of Qwen3-0.6B's shapes at 8x160 (1,280 rows: on 132 multiprocessors its
    # gate/up products take the kernel unsplit, the others in slices or unsplit as split3xTF32 decides). Each tool
    # at most 100 s, so that the part stays inside a first call of about 560 s (gemm_wgmma's build: about a minute).
    f=$out/tcsanitize.txt
    { echo "# commit $(cat "$kit/commit")"
      build_wgmma >"$kit/wgmma-build.txt" 2>&1 || cat "$kit/wgmma-build.txt"
      for tool in racecheck synccheck; do
        echo "## compute-sanitizer --tool $tool: gemm_wgmma --check"
        timeout 100 compute-sanitizer --tool $tool "$kit/gemm_wgmma" --check 2>&1 | tail -n 12
      done
      timeout 60 "$bin/meazo-inspect" random-model --model qwen06b --layers 2 --out "$kit/tcsanitize-qwen06b" >/dev/null
      for tool in memcheck racecheck synccheck; do
        leak=; [ "$tool" = memcheck ] && leak="--leak-check full"
        echo "## compute-sanitizer --tool $tool $leak: zostep, 2 layers of Qwen3-0.6B, 8x160 q=1, MEAZO_CUDA_3XTF32=1"
        MEAZO_CUDA_3XTF32=1 timeout 100 compute-sanitizer --tool $tool $leak "$bin/meazo-bench" zostep --backend cuda \
          --model "$kit/tcsanitize-qwen06b" --shapes 8x160 --q 1 --reps 1 2>&1 | tail -n 14
      done; } >"$f" 2>&1
    grep -E "^##|ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|Target application|3xTF32" "$f"
    ;;
  tcbench) # issue 33's table with MEAZO_CUDA_3XTF32=1 (gemm_3xtf32 for the projections whose grid fills the GPU),
    # =all (for every projection it takes) against the default and PyTorch (TF32 off, then on), in one run: forwards 8x128 and MEAZO LoRA steps 8x80 and 8x300 of
    # both models, each with the GPU's peak memory; then Qwen3-8B's LoRA step at 8x300 with it. About 5 minutes.
    f=$out/tcbench.txt
    echo "# commit $(cat "$kit/commit")" >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      cfg=$fx/full-configs/$m
      for tc in 1 all 0; do
        echo "## $m, ours, MEAZO_CUDA_3XTF32=$tc" >>"$f"
        (export MEAZO_CUDA_3XTF32=$tc
          peakmem "$f" timeout 90 "$bin/meazo-bench" forward --backend cuda --model "$cfg/config.json" --shapes 8x128 --reps 10 --loss-all >>"$f" 2>&1
          peakmem "$f" timeout 90 "$bin/meazo-bench" zostep --backend cuda --model "$cfg/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1)
      done
      echo "## $m, PyTorch" >>"$f"
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 10 --loss-all >>"$f" 2>&1
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step >>"$f" 2>&1
      # Issue 33's last table: the peer with TF32 on (torch.backends.cuda.matmul.allow_tf32), what a careless
      # comparison would run; not float32-accurate, so a reference for speed only.
      echo "## $m, PyTorch, TF32 on" >>"$f"
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 10 --loss-all --tf32 >>"$f" 2>&1
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step --tf32 >>"$f" 2>&1
    done
    # Issue 31's Qwen3-8B step (1.22x PyTorch's on SGEMM, goal 1.3x; `models` times the default and PyTorch's)
    echo "## Qwen3-8B 8x300, ours, MEAZO_CUDA_3XTF32=1" >>"$f"
    (export MEAZO_CUDA_3XTF32=1; timed "$f" 100 "$bin/meazo-bench" zostep --backend cuda -model qwen3-8b -shapes 8x300 -q 1 -reps 3)
    grep -E "^##|^8x|peak|exit status" "$f"
    ;;
  bf16) # weights kept in bfloat16 (a BF16 checkpoint, as published, with model.bf16_weights: meazo-bench -bf16)
    # against float32 weights: forwards and ZO steps of both models, interleaved, each with the GPU's peak memory
    f=$out/bf16.txt
    : >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      for w in bf16 f32 bf16 f32; do
        flag=; [ $w = bf16 ] && flag=-bf16
        peakmem "$f" timeout 60 "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x128,8x300 --reps 5 --loss-all $flag >>"$f" 2>&1
        peakmem "$f" timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 $flag >>"$f" 2>&1
      done
    done
    grep -E "^8x|^#.*(config.json|peak GPU)" "$f"
    ;;
  trainbf16) # end to end from a BF16 checkpoint (as published) of Llama-3.2-1B's shapes: 60 steps on real SQuAD with
    # model.bf16_weights true, then false (the weights widened at load); the two runs' metrics must be identical
    w=$kit/trainbf16 f=$out/trainbf16.txt
    mkdir -p "$w"
    llamamodel "$w/model" --dtype bf16 >"$f" 2>&1
    for keep in true false; do
      echo "## model.bf16_weights=$keep" >>"$f"
      peakmem "$f" squadrun 100 "$w/model" "$w/run-$keep" --set model.bf16_weights=$keep --set task.max_validation=100 \
        --set task.max_test=20 --set train.steps=60 --set train.eval_every=30 --set train.checkpoint_every=30 >>"$f" 2>&1
      grep -hE '"(seconds_per_step|peak_device_bytes)"' "$w/run-$keep/summary.json" >>"$f"
      grep '"kind":"val"' "$w/run-$keep/metrics.jsonl" >>"$f"
    done
    if cmp -s "$w/run-true/metrics.jsonl" "$w/run-false/metrics.jsonl"; then
      echo "metrics.jsonl: identical ($(wc -l <"$w/run-true/metrics.jsonl") records)" >>"$f"
    else
      echo "metrics.jsonl: DIFFERENT" >>"$f"; diff "$w/run-true/metrics.jsonl" "$w/run-false/metrics.jsonl" | head -6 >>"$f"
    fi
    grep -E "^##|peak|seconds_per_step|val_loss|metrics.jsonl|rror" "$f"
    ;;
  default) # the default kernels (no MEAZO_CUDA_ATTENTION) on both models: forward and ZO step
    f=$out/default.txt
    : >"$f"
    for m in Llama-3.2-1B Qwen3-0.6B; do
      timeout 60 "$bin/meazo-bench" forward --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x128,8x512 --reps 10 --loss-all >>"$f" 2>&1
      timeout 60 "$bin/meazo-bench" zostep --backend cuda --model "$fx/full-configs/$m/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
    done
    grep -E "^8x|^#.*config.json" "$f"
    ;;
  sgemm) # cuBLAS SGEMM's rate alone (the bench part measures it too), then the projections at the ZO
    # step's row counts, apart and stacked (would fused q|k|v and gate|up pay?)
    { timeout 60 python3 scripts/gpu/bench_torch_cuda.py --sgemm; timeout 60 python3 scripts/gpu/bench_torch_cuda.py --sgemm --sgemm-step; } >"$out/sgemm.txt" 2>&1
    cat "$out/sgemm.txt"
    ;;
  stepprofile) # where a ZO step's time goes: every kernel's GPU time (ncu), Qwen3-0.6B at 8x300 (the shape whose
    # products leave room for 1.5x PyTorch: docs/PERFORMANCE.md) and Llama-3.2-1B at 8x80 (warm-up, two plain forwards
    # and the steps of one rep; the shares are what count)
    for ms in Qwen3-0.6B:8x300 Llama-3.2-1B:8x80; do
      echo "## ${ms%%:*} ${ms##*:}"
      timeout 150 ncu --metrics gpu__time_duration.sum --print-summary per-kernel "$bin/meazo-bench" zostep --backend cuda \
        --model "$fx/full-configs/${ms%%:*}/config.json" --shapes "${ms##*:}" --q 1 --reps 1 2>&1
    done >"$out/stepprofile.txt"
    grep -E "^## |^ +[A-Za-z_].*\(|gpu__time_duration" "$out/stepprofile.txt" | head -80
    ;;
  fullprofile) # where a full-parameter step's time goes beyond two forwards: every kernel's GPU time (ncu), Llama-3.2-1B
    # at 8x300 (the shape short of 1.5x PyTorch on 2026-11-30: 1.34x, 24 ms over two forwards in evaluating the
    # variants, docs/bench/2026-11-30-h200/run1-febb616/fullbench.txt), one step and, apart, the two plain forwards
    # (ncu replays each kernel alone: its times are shares, not wall time; fullbench.txt has the wall time).
    # perturb_copy and zo_update against the HBM bandwidth: 12 and 8 bytes a weight. FULLPROFILE_SHAPES="16x64 8x300"
    # for both shapes (each run up to 150 s).
    for shape in ${FULLPROFILE_SHAPES:-8x300}; do
      for what in step forward; do
        echo "## llama1b $shape fullstep -what $what"
        timeout 150 ncu --metrics gpu__time_duration.sum --print-summary per-kernel "$bin/meazo-bench" fullstep --backend cuda \
          -model llama1b -shape $shape -what $what -opt meazo -warm 0 -reps 1 2>&1
      done
    done >"$out/fullprofile.txt"
    python3 scripts/gpu/ncu_summary.py "$out/fullprofile.txt" 2>&1 | head -160
    ;;
  cpuops) # the CPU backend on this machine's Intel cores: time per op class of a Qwen3-0.6B forward
    timeout 120 "$bin/meazo-bench" forward --backend cpu --model "$fx/full-configs/Qwen3-0.6B/config.json" --shapes 1x128 --reps 3 -ops >"$out/cpuops.txt" 2>&1
    cat "$out/cpuops.txt"
    ;;
  bench) # ours vs PyTorch in one run, same GPU; cuBLAS SGEMM's rate first
    f=$out/bench.txt
    timeout 60 python3 scripts/gpu/bench_torch_cuda.py --sgemm >"$f" 2>&1
    for m in Llama-3.2-1B Qwen3-0.6B; do
      cfg=$fx/full-configs/$m
      echo "## $m" >>"$f"
      # Every position supervised, the loss on the device: the same work on both sides with no
      # host copy of the logits (ours returns -logits to the host, PyTorch keeps them on the GPU).
      peakmem "$f" timeout 90 "$bin/meazo-bench" forward --backend cuda --model "$cfg/config.json" --shapes 8x128 --reps 10 --loss-all >>"$f" 2>&1
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 10 --loss-all >>"$f" 2>&1
      peakmem "$f" timeout 90 "$bin/meazo-bench" zostep --backend cuda --model "$cfg/config.json" --shapes 8x80,8x300 --q 1 --reps 5 >>"$f" 2>&1
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step >>"$f" 2>&1
      # The same two with TF32 on: what a peer who leaves PyTorch's matmul precision alone runs (issue 33's second table).
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x128 --reps 10 --loss-all --tf32 >>"$f" 2>&1
      peakmem "$f" timeout 90 python3 scripts/gpu/bench_torch_cuda.py --config "$cfg" --shapes 8x80,8x300 --reps 5 --mezo-step --tf32 >>"$f" 2>&1
    done
    cat "$f"
    ;;
  memcheck) # one forward of a fixture model under compute-sanitizer
    echo '{"input_ids": [[1, 5, 9, 200, 3]], "labels": [[1, 5, 9, 200, 3]]}' >"$kit/in.json"
    # the default kernels, the batched GEMMs' attention over all queries and in chunks of 2, and Qwen3's q/k norms
    for run in llama-tiny:default:0 llama-tiny:gemm:0 llama-tiny:gemm:2 qwen3-tiny:default:128; do
      IFS=: read -r m k c <<<"$run"
      echo "## $m MEAZO_CUDA_ATTENTION=$k MEAZO_CUDA_ATTN_CHUNK=$c"
      MEAZO_CUDA_ATTENTION=$k MEAZO_CUDA_ATTN_CHUNK=$c timeout 75 compute-sanitizer --tool memcheck --leak-check full "$bin/meazo-inspect" forward --backend cuda \
        --model "$fx/$m" --input "$kit/in.json" --out "$kit/memcheck-logits.safetensors" 2>&1
    done >"$out/memcheck.txt"
    # Shared-memory races and barrier misuse (store_kv's tile, the tiled attention), 40 tokens: two key tiles.
    python3 -c 'import json; t=[(7*i+3)%200 for i in range(40)]; print(json.dumps({"input_ids":[t],"labels":[t]}))' >"$kit/in40.json"
    # llama-tiny's heads of 16 fill half the tile's columns, qwen3-tiny's of 32 all of them.
    for run in llama-tiny:racecheck qwen3-tiny:racecheck llama-tiny:synccheck qwen3-tiny:synccheck; do
      IFS=: read -r m tool <<<"$run"
      echo "## $m, 40 tokens, --tool $tool"
      timeout 75 compute-sanitizer --tool $tool "$bin/meazo-inspect" forward --backend cuda \
        --model "$fx/$m" --input "$kit/in40.json" --out "$kit/memcheck-logits.safetensors" 2>&1
    done >>"$out/memcheck.txt"
    grep -E "^##|ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$out/memcheck.txt"
    ;;
  stepcheck) # compute-sanitizer on a whole MEAZO LoRA step of the real shapes (issue 33: not only a 5-token forward):
    # Qwen3-0.6B (q/k norms, rope, store_kv, attention at 300 keys, LoRA, the loss) at 2x300, memcheck with leak check,
    # racecheck and synccheck, the default kernels; each tool its own timeout. racecheck on the whole 28 layers did
    # not finish in 150 s (2026-11-30, run6): it checks the first 4 layers (the same kernels and shapes, layer by
    # layer) of a random model of the same config.
    timeout 60 "$bin/meazo-inspect" random-model --model qwen06b --layers 4 --out "$kit/stepcheck-qwen06b" >/dev/null
    for tool in memcheck racecheck synccheck; do
      leak=; [ "$tool" = memcheck ] && leak="--leak-check full"
      model=$fx/full-configs/Qwen3-0.6B/config.json what="Qwen3-0.6B"
      [ "$tool" = racecheck ] && model=$kit/stepcheck-qwen06b what="Qwen3-0.6B's first 4 layers"
      echo "## compute-sanitizer --tool $tool $leak: zostep $what 2x300 q=1"
      timeout 150 compute-sanitizer --tool $tool $leak "$bin/meazo-bench" zostep --backend cuda \
        --model "$model" --shapes 2x300 --q 1 --reps 1 2>&1 | tail -20
    done >"$out/stepcheck.txt"
    grep -E "^##|ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$out/stepcheck.txt"
    ;;
  train) # end to end: a random model of Llama-3.2-1B's shapes, real SQuAD, 200 steps
    w=$kit/train f=$out/train.txt
    mkdir -p "$w"
    llamamodel "$w/model" >"$f" 2>&1
    peakmem "$f" squadrun 180 "$w/model" "$w/run" --set task.max_validation=200 --set task.max_test=50 \
      --set train.steps=200 --set train.eval_every=100 --set train.checkpoint_every=100 >>"$f" 2>&1
    { echo "# summary.json"; cat "$w/run/summary.json"; } >>"$f" 2>&1
    cp "$w/run/metrics.jsonl" "$out/train-metrics.jsonl" 2>/dev/null
    tail -8 "$f"
    ;;
  demo) # the README's demo (three optimizers on the built-in task) on the GPU
    timeout 150 "$bin/meazo-train" --demo --demo-dir "$kit/demo" --backend cuda >"$out/demo.txt" 2>&1
    tail -8 "$out/demo.txt"
    ;;
  profile) # where a forward's time goes: every kernel's GPU time (ncu), Qwen3-0.6B 8x128, warm-up + 1 rep
    timeout 120 ncu --metrics gpu__time_duration.sum --print-summary per-kernel "$bin/meazo-bench" forward --backend cuda \
      --model "$fx/full-configs/Qwen3-0.6B/config.json" --shapes 8x128 --reps 1 --loss-all >"$out/profile.txt" 2>&1
    grep -E "^ +[A-Za-z_].*\(|gpu__time_duration" "$out/profile.txt" | head -60
    ;;
  tcfull) # full-parameter ZO with MEAZO_CUDA_3XTF32=1 (gemm_3xtf32 for the perturbed weights' blocks of columns and
    # the residuals' added products; issue 30's Llama goal waits on faster products): full-parameter steps against the
    # CPU's with it on, then MEAZO steps of Llama-3.2-1B and Qwen3-0.6B at 16x64 and 8x300 with it and without it,
    # ZO-SGD's with it, and PyTorch MeZO's, interleaved, each with its peak device memory. About 2.5 minutes.
    f=$out/tcfull.txt
    { echo "# commit $(cat "$kit/commit")"
      (cd tensor/cuda && MEAZO_CUDA_3XTF32=1 timeout 150 "$bin/cuda.test" -test.v -test.count=1 -test.timeout 140s \
        -test.run 'TestGPUFullParameter|TestGPUBlockedProduct'); } >"$f" 2>&1
    for m in llama1b qwen06b; do
      for s in 16x64 8x300; do
        for run in meazo:1 meazo:0 zo-sgd:1; do # issue 30 asks MEAZO's and ZO-SGD's steps
          opt=${run%%:*} tc=${run##*:}
          echo "## $m $s, $opt, MEAZO_CUDA_3XTF32=$tc" >>"$f"
          MEAZO_CUDA_3XTF32=$tc peakmem "$f" timeout 60 "$bin/meazo-bench" fullstep --backend cuda -model $m -shape $s -what step \
            -opt $opt -warm 1 -reps 3 >>"$f" 2>&1
        done
        echo "## $m $s, PyTorch" >>"$f"
        peakmem "$f" timeout 90 python3 scripts/bench/mezo_full_step.py --device cuda --model $m --shape $s --what step --warm 1 --reps 3 >>"$f" 2>&1
      done
    done
    grep -E "^(--- FAIL|FAIL|ok|PASS)|^## |step|peak" "$f"
    ;;
  full) # full-parameter ZO (tensor.Trainer) on the GPU, in two files. full.txt: the Trainer conformance (the noise
    # on 2^24 elements and the normal transform on every radius and angle, perturbed matrices, updates and moments bit
    # for bit the host's), full-parameter steps against the CPU's, products formed in blocks of rows against the whole
    # matrix, then compute-sanitizer on full-parameter steps of the fixtures' shapes. fullbench.txt: fullstep (step and
    # forward, each its own process) against PyTorch MeZO's full-parameter step (scripts/bench/mezo_full_step.py, TF32
    # off), Llama-3.2-1B and Qwen3-0.6B at 16x64 and 8x300, MEAZO (also with MEAZO_CUDA_PAIRED=1) and ZO-SGD, each with
    # its peak device memory (the backend's, and nvidia-smi's); then Qwen3-8B in bfloat16 (scripts/gpu/qwen3-8b-config.json):
    # a step and the forward.
    f=$out/full.txt
    (cd tensor/cuda && timeout 200 "$bin/cuda.test" -test.v -test.count=1 -test.timeout 190s \
      -test.run 'TestGPUTrainer|TestGPUNoise|TestGPUFullParameter|TestGPUBlockedProduct|TestTrainerKernelsRound|TestKernelTable') >"$f" 2>&1
    echo "## MEAZO_CUDA_PAIRED=1: a direction's + and - products as one batched call" >>"$f"
    (cd tensor/cuda && MEAZO_CUDA_PAIRED=1 timeout 120 "$bin/cuda.test" -test.v -test.count=1 -test.timeout 110s \
      -test.run 'TestGPUTrainer|TestGPUFullParameter') >>"$f" 2>&1
    f=$out/fullbench.txt
    echo "# commit $(cat "$kit/commit")" >"$f"
    for m in llama1b qwen06b; do
      for s in 16x64 8x300; do
        echo "## $m $s" >>"$f"
        for run in forward:meazo:0 step:meazo:0 step:meazo:1 step:zo-sgd:0; do
          IFS=: read -r what opt paired <<<"$run"
          [ "$paired" = 1 ] && echo "# MEAZO_CUDA_PAIRED=1" >>"$f"
          MEAZO_CUDA_PAIRED=$paired peakmem "$f" timeout 60 "$bin/meazo-bench" fullstep --backend cuda -model $m -shape $s -what "$what" \
            -opt "$opt" -warm 1 -reps 3 >>"$f" 2>&1
        done
        peakmem "$f" timeout 90 python3 scripts/bench/mezo_full_step.py --device cuda --model $m --shape $s --what step --warm 1 --reps 3 >>"$f" 2>&1
      done
    done
    echo "## Qwen3-8B bf16 16x64" >>"$f"
    for what in forward step; do
      peakmem "$f" timeout 120 "$bin/meazo-bench" fullstep --backend cuda -model scripts/gpu/qwen3-8b-config.json -bf16 -shape 16x64 \
        -what $what -opt meazo -warm 1 -reps 2 >>"$f" 2>&1
    done
    grep -E "^#|^## |forward|step|peak" "$f"
    # the sanitizer last (the timings above are the goal's evidence), into full.txt
    f=$out/full.txt
    # memcheck (leaks too): float32 MEAZO on Qwen3 (q/k norms: perturbed vectors), bf16 ZO-Adam (moments, stochastic
    # rounding) on Llama; racecheck and synccheck: zo_update's reduction in shared memory
    for run in memcheck:qwen3-tiny:meazo: memcheck:llama-tiny:zo-adam:-bf16 racecheck:qwen3-tiny:radazo: synccheck:llama-tiny:meazo:-bf16; do
      IFS=: read -r tool m opt flag <<<"$run"
      leak=; [ "$tool" = memcheck ] && leak="--leak-check full"
      echo "## compute-sanitizer --tool $tool $leak: fullstep $m -opt $opt -q 2 $flag"
      timeout 75 compute-sanitizer --tool "$tool" $leak "$bin/meazo-bench" fullstep --backend cuda -model "$fx/$m/config.json" \
        -shape 4x16 -q 2 -opt "$opt" -warm 0 -reps 1 $flag 2>&1
    done >>"$f"
    grep -E "^## |ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$f"
    ;;
  bf16products) # bfloat16 weights multiplied on the tensor cores (MEAZO_CUDA_BF16_PRODUCTS=1, cublasGemmEx): its check
    # against SGEMM of the activations rounded to bfloat16; projected gradients with bfloat16 weights, CPU (float32
    # products) vs GPU with and without it (what the rounding costs at eps 1e-3); Ministral-3 14B's LoRA step at $lm_shape
    # with it, then without it and PyTorch's (bfloat16 products) in the same run
    f=$out/bf16products.txt
    echo "# commit $(cat "$kit/commit")" >"$f"
    (cd tensor/cuda && timeout 60 "$bin/cuda.test" -test.v -test.count=1 -test.run 'TestGPUBF16Products|TestGPUWidenedBlocks') >>"$f" 2>&1
    for p in 0 1; do
      for m in "$fx/llama-tiny/bf16" model/testdata/ministral3/ministral3-tiny/bf16; do # BF16 checkpoints (-bf16 keeps only those in bfloat16)
        echo "## zoagree -bf16 $m, MEAZO_CUDA_BF16_PRODUCTS=$p" >>"$f"
        MEAZO_CUDA_BF16_PRODUCTS=$p timeout 30 "$bin/meazo-bench" zoagree -model "$m" -a cpu -b cuda -directions 64 -eps 1e-3,1e-6 -bf16 >>"$f" 2>&1
      done
    done
    echo "## Ministral-3 14B (language model) $lm_shape: ours, bfloat16 products" >>"$f"
    (export MEAZO_CUDA_BF16_PRODUCTS=1; timed "$f" 100 "$bin/meazo-bench" zostep --backend "$mbe" -model "$ministral" -shapes "$lm_shape" -q 1 -reps 3 -bf16)
    (export MEAZO_CUDA_BF16_PRODUCTS=0; modelstep "$f" "Ministral-3 14B (language model)" "$ministral" "$ministral_cfg" bfloat16 100 -bf16)
    grep -E "^##|^---|TestGPUBF16|^1e-0|^8x300|peak|exit status" "$f"
    ;;
  fulltrain) # full-parameter MEAZO end to end (configs/llama1b_sst2_full_meazo.yaml): a random model of Llama-3.2-1B's
    # shapes (meazo-inspect random-model, seed 1: the CPU makes the same one), real SST-2, 200 steps, validation on 200
    # examples every 100 steps; the CPU's first steps of the same run are compared with metrics.jsonl's elsewhere.
    w=$kit/fulltrain f=$out/fulltrain.txt
    mkdir -p "$w"
    llamamodel "$w/model" >"$f" 2>&1 || echo "# no model: meazo-inspect random-model failed" >>"$f"
    timed "$f" 200 "$bin/meazo-train" --config configs/llama1b_sst2_full_meazo.yaml --backend cuda --out "$w/run" \
      --set model.path="$w/model" --set task.train="$MEAZO_SHARED/data/sst2/train.tsv" --set task.test="$MEAZO_SHARED/data/sst2/dev.tsv" \
      --set task.max_validation=200 --set task.max_test=200 --set train.steps=200 --set train.eval_every=100 \
      --set train.checkpoint_every=0 --set train.log_every=20
    { echo "# summary.json"; cat "$w/run/summary.json"; } >>"$f" 2>&1
    cp "$w/run/metrics.jsonl" "$out/fulltrain-metrics.jsonl" 2>/dev/null
    tail -8 "$f"
    ;;
  models) # issue 31's models, ours against PyTorch + peft (MeZO's two forwards) in the same run; each command with
    # nvidia-smi's peak and its own (the backend's; PyTorch's allocator's). Ministral's PyTorch runs in bfloat16 (weights
    # and products, as the paper runs it); ours keeps bfloat16 weights and multiplies them in bfloat16 on the tensor
    # cores too (MEAZO_CUDA_BF16_PRODUCTS=1; bf16products times the float32 products as well).
    f=$out/models.txt
    echo "# commit $(cat "$kit/commit")" >"$f"
    modelstep "$f" Qwen3-8B "$qwen" "$qwen_cfg" float32 100
    MEAZO_CUDA_BF16_PRODUCTS=1 modelstep "$f" "Ministral-3 14B (language model), bfloat16 products" "$ministral" "$ministral_cfg" bfloat16 120 -bf16
    # q|k|v and gate|up as one product each: x rounded to bfloat16 once for them instead of three and two times
    echo "## Ministral-3 14B (language model), bfloat16 products, projections stacked (MEAZO_CUDA_STACK=1) $lm_shape: ours" >>"$f"
    timed "$f" 120 env MEAZO_CUDA_BF16_PRODUCTS=1 MEAZO_CUDA_STACK=1 "$bin/meazo-bench" zostep --backend "$mbe" -model "$ministral" -shapes "$lm_shape" -q 1 -reps 3 -bf16
    echo "## ViT-B/16, Pets' 37 classes, $vit_shape: ours, then $run_steps steps" >>"$f"
    timed "$f" 60 "$bin/meazo-bench" vitstep --backend "$mbe" -model "$vit" -batch "$vit_batch" -reps 3 -steps "$run_steps"
    echo "## ViT-B/16, Pets' 37 classes, $vit_shape: PyTorch + peft, MeZO" >>"$f"
    timed "$f" 60 "$py" scripts/gpu/bench_torch_cuda.py --device "$mdev" --config "$vit" --shapes "$vit_shape" --reps 3 --vit-step --eps 1e-3
    grep -E "^##|^# torch|^[0-9]+x[0-9]+ |peak|exit status" "$f"
    ;;
  vit) # the ViT's encoder attention paths (encoder.go): ViT-B/16 LoRA MEAZO steps at $vit_shape with the batched GEMMs
    # (MEAZO_CUDA_ATTENTION=gemm; the default at 197 tokens) and with the exact kernel (=rows), and PyTorch + peft's
    # MeZO step, interleaved over two rounds; then the conformance suite's encoder ops and ViT fixture with each path
    # forced (KernelsMatchCPUBits runs the exact kernel either way). ~2 min.
    f=$out/vit.txt
    echo "# commit $(cat "$kit/commit")" >"$f"
    for round in 1 2; do
      for k in gemm rows; do
        echo "## round $round: ViT-B/16, Pets' 37 classes, $vit_shape: ours, MEAZO_CUDA_ATTENTION=$k" >>"$f"
        timed "$f" 60 env MEAZO_CUDA_ATTENTION=$k "$bin/meazo-bench" vitstep --backend "$mbe" -model "$vit" -batch "$vit_batch" -reps 3
      done
      if [ -z "${MODELS_TINY:-}" ]; then # the projections of 6,304 rows fill an H100/H200: gemm_3xtf32 under its rule
        echo "## round $round: ViT-B/16, Pets' 37 classes, $vit_shape: ours, MEAZO_CUDA_ATTENTION=gemm MEAZO_CUDA_3XTF32=1" >>"$f"
        timed "$f" 60 env MEAZO_CUDA_ATTENTION=gemm MEAZO_CUDA_3XTF32=1 "$bin/meazo-bench" vitstep --backend "$mbe" -model "$vit" -batch "$vit_batch" -reps 3
      fi
      echo "## round $round: ViT-B/16, Pets' 37 classes, $vit_shape: PyTorch + peft, MeZO" >>"$f"
      timed "$f" 60 "$py" scripts/gpu/bench_torch_cuda.py --device "$mdev" --config "$vit" --shapes "$vit_shape" --reps 3 --vit-step --eps 1e-3
    done
    for k in gemm rows; do
      echo "## the suite's encoder ops and ViT fixture with MEAZO_CUDA_ATTENTION=$k" >>"$f"
      (cd tensor/cuda && MEAZO_CUDA_ATTENTION=$k timeout 100 "$bin/cuda.test" -test.count=1 -test.v -test.timeout 90s \
        -test.run 'TestConformance/(EncoderAttention|ViT|KernelsMatchCPUBits)/(vit|EncoderAttention)') >>"$f" 2>&1 ||
        echo "# exit status $?" >>"$f"
    done
    grep -E "^##|^# torch|^[0-9]+x[0-9]+ |peak|exit status|--- FAIL|^--- |^(ok|FAIL|PASS)" "$f"
    ;;
  vitprofile) # where the ViT-B/16 LoRA step's time goes against PyTorch's (0.095 against 0.072 s on an H200, run7):
    # every kernel's GPU time (ncu) of ours (default kernels: SGEMM, the batched-GEMM attention) and of PyTorch + peft's
    # MeZO step, at batch 32, one timed rep after the warm-up each (ncu replays each kernel alone: shares, not wall time;
    # its summary comes only at the end, so the launches are capped to end well inside the timeout: ~30 ms a kernel
    # under ncu, ours ~2,200 launches a run, PyTorch's ~2,400 with its weights' initialisation: the first 1,200 and
    # 2,000 cover the warm-up's step, whose kernels are the timed one's)
    f=$out/vitprofile.txt
    { echo "# commit $(cat "$kit/commit")"
      echo "## ViT-B/16 $vit_shape vitstep ours"
      timeout 150 ncu --launch-count 1200 --metrics gpu__time_duration.sum --print-summary per-kernel "$bin/meazo-bench" vitstep --backend cuda \
        -model "$vit" -batch "$vit_batch" -reps 1 2>&1
      echo "## ViT-B/16 $vit_shape PyTorch + peft, MeZO"
      timeout 150 ncu --launch-count 2000 --metrics gpu__time_duration.sum --print-summary per-kernel "$py" scripts/gpu/bench_torch_cuda.py \
        --device cuda --config "$vit" --shapes "$vit_shape" --reps 1 --vit-step --eps 1e-3 2>&1; } >"$f"
    python3 scripts/gpu/ncu_summary.py "$f" 2>&1 | head -120
    # ncu times kernels alone: the host's share (the images' cut and upload, gaps between launches) needs a timeline
    if command -v nsys >/dev/null; then
      { echo "# commit $(cat "$kit/commit")"; echo "## nsys profile -t cuda --stats=true: vitstep ours"
        timeout 120 nsys profile -t cuda --stats=true -o "$kit/vitstep" --force-overwrite true "$bin/meazo-bench" vitstep --backend cuda \
          -model "$vit" -batch "$vit_batch" -reps 3 2>&1 | grep -v "^$" | head -150; } >"$out/vitnsys.txt"
      grep -E "^##|of which|ZO step|plain forwards" "$out/vitnsys.txt"
    else
      echo "# no nsys on this machine: the ViT step's timeline not taken" | tee "$out/vitnsys.txt"
    fi
    ;;
  bf16profile) # where Ministral-3 14B's LoRA step with bfloat16 products spends its time against PyTorch's bfloat16
    # step (0.284 against 0.324 s on an H200, febb616; goal 1.3x): every kernel's GPU time (ncu) of both, on the first
    # 4 of its 40 layers (the same shapes; the embedding and head whole), at 8x300, one timed rep after the warm-up
    f=$out/bf16profile.txt cfg=$kit/ministral-4layers.json
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["text_config"]["num_hidden_layers"]=4; json.dump(c,open(sys.argv[2],"w"))' \
      model/testdata/ministral3/Ministral-3-14B-Instruct-2512-BF16.config.json "$cfg"
    { echo "# commit $(cat "$kit/commit")"
      echo "## Ministral-3 14B, 4 layers, 8x300 zostep ours, bfloat16 weights and products"
      MEAZO_CUDA_BF16_PRODUCTS=1 timeout 150 ncu --launch-count 1500 --metrics gpu__time_duration.sum --print-summary per-kernel "$bin/meazo-bench" zostep \
        --backend cuda -model "$cfg" -shapes 8x300 -q 1 -reps 1 -bf16 2>&1
      echo "## Ministral-3 14B, 4 layers, 8x300 PyTorch + peft, MeZO, bfloat16"
      timeout 150 ncu --launch-count 2000 --metrics gpu__time_duration.sum --print-summary per-kernel "$py" scripts/gpu/bench_torch_cuda.py \
        --device cuda --config "$cfg" --shapes 8x300 --reps 1 --mezo-step --dtype bfloat16 2>&1; } >"$f"
    python3 scripts/gpu/ncu_summary.py "$f" 2>&1 | head -120
    ;;
  run-qwen3-8b) # 100 MEAZO steps of Qwen3-8B (float32) at 8x300 on new random batches: time per step, memory after
    modelrun "$out/run-qwen3-8b.txt" Qwen3-8B "$qwen" 270
    ;;
  run-ministral14b) # the same for Ministral-3 14B's language model with bfloat16 weights, multiplied in bfloat16 on the
    # tensor cores (model.bf16_products; 0.284 s/step on an H200, 2.43 with the weights widened per product)
    MEAZO_CUDA_BF16_PRODUCTS=1 modelrun "$out/run-ministral14b.txt" "Ministral-3 14B (language model), bfloat16 products" "$ministral" 300 -bf16
    ;;
  *) echo "unknown part $part" ;;
  esac
done
