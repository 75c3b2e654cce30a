#!/bin/bash
# A/B of eval.validation_metrics' cost: c024bf5 (old) and this tree (new), alternated.
cd /work/main
S=/work/shared
for round in 1 2; do
  for v in old new; do
    echo "== round $round $v $(uptime)"
    /tmp/vm/$v/meazo-train --check --config configs/qwen06b_sst2_lora_meazo.yaml --set model.path=/tmp/vm/rq3 \
      --set task.train=$S/data/sst2/train.tsv --set task.test=$S/data/sst2/dev.tsv \
      --set eval.validation_metrics=true --set output.dir=/tmp/vm/runs-$v-$round > /tmp/vm/check-$v-$round.log 2>&1
    grep -i "validation\|metric" /tmp/vm/check-$v-$round.log | head -8
  done
done
