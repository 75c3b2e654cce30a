#!/bin/bash
# Two rounds, each: q/v on every layer, then all-linear (meazo-bench built at the commit in commit.txt).
cd /tmp/lt3
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > lscpu.txt
for round in 1 2; do
  for kind in qv all; do
    case $kind in
      qv) args="-targets q_proj,v_proj";;
      all) args="-targets all-linear";;
    esac
    /usr/bin/time -v /tmp/mb3 zostep -model qwen06b -shapes 16x64 -q 1 -reps 3 $args > zostep-$kind-r$round.txt 2> time-$kind-r$round.txt
  done
done
echo done > finished
