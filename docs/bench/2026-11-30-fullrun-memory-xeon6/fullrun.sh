#!/bin/bash
# usage: fullrun.sh OUTDIR [extra --set ...]
out=$1; shift
rm -rf $out
GODEBUG=gctrace=1 /usr/bin/time -v /tmp/mbin/meazo-train --config configs/qwen06b_sst2_full_meazo.yaml \
  --set model.path=/tmp/q06 --set model.name= --set task.train=/work/shared/data/sst2/train.tsv --set task.test=/work/shared/data/sst2/dev.tsv \
  --set train.steps=3 --set train.eval_every=3 --set train.checkpoint_every=3 --set task.max_validation=16 --set task.max_test=16 \
  --set output.dir=$out "$@" > $out.log 2>&1
echo rc=$?
