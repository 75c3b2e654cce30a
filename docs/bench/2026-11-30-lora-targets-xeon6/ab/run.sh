#!/bin/bash
cd /tmp/lt2
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > lscpu.txt
for round in 1 2; do
  for kind in qv all top7; do
    case $kind in
      qv) args="-targets q_proj,v_proj";;
      all) args="-targets all-linear";;
      top7) args="-targets q_proj,v_proj -top 7";;
    esac
    /usr/bin/time -v /tmp/mb zostep -model qwen06b -shapes 16x64 -q 1 -reps 3 $args > zostep-$kind-r$round.txt 2> time-$kind-r$round.txt
  done
done
echo done > finished
