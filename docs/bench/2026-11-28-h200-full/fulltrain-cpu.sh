set -x
cd /work/main
S=/work/shared
rm -rf /tmp/ftcpu/model /tmp/ftcpu/run
/tmp/ftcpu/meazo-inspect random-model --config $S/fixtures/models/full-configs/Llama-3.2-1B/config.json --out /tmp/ftcpu/model && cp $S/fixtures/tokenizers/llama3.2/* /tmp/ftcpu/model/ &&
/tmp/ftcpu/meazo-train --config configs/llama1b_sst2_full_meazo.yaml --backend cpu --out /tmp/ftcpu/run \
      --set model.path=/tmp/ftcpu/model --set task.train=$S/data/sst2/train.tsv --set task.test=$S/data/sst2/dev.tsv \
      --set task.max_validation=200 --set task.max_test=200 --set train.steps=4 --set train.eval_every=100 \
      --set train.checkpoint_every=0 --set train.log_every=1
