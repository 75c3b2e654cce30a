#!/usr/bin/env bash
# Held-out architecture variants, made by HF transformers 4.51 (../shared/pylib) on
# Debian's python3-torch, checked against `meazo-inspect forward` (issue 31's
# held-out check, done here ahead of an independent one). From this folder:
#   bash run.sh /tmp/heldout   (then read /tmp/heldout/run.log)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
w=${1:?usage: run.sh WORKDIR}
root=$(cd "$here/../../.." && pwd)
mkdir -p "$w/out" && cd "$w"
(cd "$root" && GOEXPERIMENT=simd go build -o "$w/meazo-inspect" ./cmd/meazo-inspect)
export PYTHONPATH=${MEAZO_SHARED:-$root/../shared}/pylib
{
  lscpu | grep 'Model name'
  for s in make_opt make_vit make_llama_qwen3; do /usr/bin/python3 "$here/$s.py" 2>&1 | grep -v -i warn; done
  names="proj prenorm-nobias noaffine remove-final vit-noqkvbias vit-eps vit-gelunew llama-bias llama-headdim llama-linear llama-yarn llama-l3 qwen3-untied qwen3-bias"
  for n in $names; do echo "== $n: $(./meazo-inspect forward -model "$n" -input "$n/in.json" -out "out/$n.safetensors" -backend cpu 2>&1 | tail -1)"; done
  /usr/bin/python3 "$here/compare.py" out $names 2>&1 | grep -v -i warn
} >run.log 2>&1
cat run.log
