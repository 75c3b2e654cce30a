#!/bin/bash
# Peak memory of every adapter mode against a plain forward, Qwen3-0.6B
# shapes (random weights), 16x64, 2 threads; each case its own process.
# Usage: run.sh BINARY > memory-raw.txt 2>&1
bin=${1:-/tmp/wtmem/meazo-bench}
common="-model qwen06b -shape 16x64 -threads 2"
echo "## lscpu | head -20"; lscpu | head -20
echo "## commit: $(git -C /work/wt-mem rev-parse HEAD) with uncommitted changes:"; git -C /work/wt-mem status --short
echo "## go: $(go version); GOEXPERIMENT=$GOEXPERIMENT GOGC=${GOGC:-unset (meazo-bench sets 10)}"
run() {
	echo; echo "## \$ $bin $*"
	/usr/bin/time -f "(/usr/bin/time: wall %e s, max RSS of the whole process, model making included: %M KiB)" "$bin" "$@"
	echo "(exit $?)"
}
run zomem $common -what forward
for opt in meazo zo-sgd zo-adam radazo; do run zomem $common -what step -adapter lora -opt $opt; done
run zomem $common -what step -adapter lora -opt fzoo -q 2
run zomem $common -what step -adapter lora -opt meazo -grouped -steps 1  # one step: a grouped step is ~15x a joint one (840 layer evaluations, not 56)
run zomem $common -what step -adapter prompt -virtual 20 -opt meazo
run fullstep $common -what forward
run fullstep $common -what step -opt meazo
