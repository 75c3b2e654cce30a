# emujobs.sh: runs test binaries under qemu user emulation two at a time
# (sourced by test_arm64.sh and test_cpus.sh). qemu runs a Go test binary on
# about one host core, so on CI's 2 cores two at a time take half the wall
# time of one after another. Each job's output is kept apart and printed
# whole, in the order the jobs were added, with its "ok"/"FAIL" line.
#
#   emu_add LABEL DIR ENV... -- CMD...   queue CMD, run in DIR with ENV
#   emu_run                              run the queue; exit status 1 if any failed
#
# ENV is NAME=VALUE words for env(1) (none is fine); CMD's output is
# filtered of qemu's warnings about host features TCG cannot offer.

emu_jobs=()

emu_add() {
  emu_jobs+=("$(printf '%q ' "$@")")
}

# emu_job N LABEL DIR ENV... -- CMD...: one job, its output into $emu_tmp/N.
emu_job() {
  local n=$1 label=$2 dir=$3 start=$SECONDS env=()
  shift 3
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  {
    if (cd "$dir" && env "${env[@]}" "$@" 2>&1 | grep -v "TCG doesn't support requested feature"; exit "${PIPESTATUS[0]}"); then
      echo "ok   $label ($((SECONDS - start)) s)"
    else
      echo "FAIL $label"
      echo fail >"$emu_tmp/$n.failed"
    fi
  } >"$emu_tmp/$n" 2>&1
}

emu_run() {
  local n running=0 status=0
  emu_tmp=$(mktemp -d)
  for n in "${!emu_jobs[@]}"; do
    if ((running == ${EMU_JOBS:-2})); then
      wait -n
      running=$((running - 1))
    fi
    eval "emu_job $n ${emu_jobs[$n]}" &
    running=$((running + 1))
  done
  wait
  for n in "${!emu_jobs[@]}"; do
    cat "$emu_tmp/$n"
    [[ -e $emu_tmp/$n.failed ]] && status=1
  done
  rm -rf "$emu_tmp"
  return $status
}
