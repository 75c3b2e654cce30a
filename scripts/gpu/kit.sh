#!/usr/bin/env bash
# Builds, on a machine with Go, everything a GPU machine without Go needs to
# check the CUDA backend, into gpu-kit/ (git-ignored): static binaries
# (CGO_ENABLED=0), the tensor/cuda test binary, and the shared fixtures and
# data the checks read (the shared folder does not travel with the tree).
# Then, on the GPU machine, from the repository root (carry gpu-kit):
#   scripts/gpu/session.sh OUT_DIR
# OLD_REV=<rev> adds that commit's meazo-bench (gpu-kit old/) for A/B parts; KIT_SQUAD=1 the SQuAD data (train, trainbf16).
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${MEAZO_SHARED:-../shared}
kit=gpu-kit
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/shared/fixtures/tokenizers" "$kit/shared/data"
export CGO_ENABLED=0 GOEXPERIMENT=simd
# The carried folder must stay under 64 MiB: stripped binaries, only those used.
go build -trimpath -ldflags="-s -w" -o "$kit/bin/" ./cmd/meazo-train ./cmd/meazo-bench ./cmd/meazo-inspect
go test -c -trimpath -ldflags="-s -w" -o "$kit/bin/cuda.test" ./tensor/cuda
go test -c -trimpath -ldflags="-s -w" -o "$kit/bin/zo.test" ./zo
# The test binary knows no source paths (-trimpath): check here, on the kernel emulator, that it finds the
# module's committed fixtures from its folder as the GPU machine will run it (a run there found none).
(cd tensor/cuda && MEAZO_SHARED=$(cd "$OLDPWD" && realpath "$shared") "$OLDPWD/$kit/bin/cuda.test" -test.count=1 \
  -test.run '^TestEmulatedConformance$/^(References|ViT|Ministral3)$/^(opt-tiny|qwen3-tiny|vit-tiny|References)$' >/dev/null) ||
  { echo "kit: cuda.test does not pass its committed fixtures on the emulator (run it in tensor/cuda with -test.v)"; exit 1; }
# The experiments of dev/cuda as PTX, for session.sh's tf32x3 part (needs NVRTC 11.8 here).
mkdir -p "$kit/dev"
go run ./tensor/cuda/internal/ptxgen -in dev/cuda/gemm_tf32x3.cu -out "$kit/dev/gemm_tf32x3.ptx" ||
  echo "kit: no dev/cuda PTX (scripts/install_nvrtc.sh installs NVRTC); the tf32x3 part will not run"
cp -r "$shared/fixtures/models" "$kit/shared/fixtures/"
cp -r "$shared/fixtures/tokenizers/llama3.2" "$kit/shared/fixtures/tokenizers/"
cp -r "$shared/data/sst2" "$kit/shared/data/"
# SQuAD (1.8 MB of the kit) only for the parts that train on it (train, trainbf16): the kit and the tree share 64 MiB.
if [ -n "${KIT_SQUAD:-}" ]; then cp -r "$shared/data/squad" "$kit/shared/data/"; fi
git rev-parse HEAD >"$kit/commit"
# OLD_REV=<rev>: that commit's meazo-bench too, in old/, for the A/B parts.
if [ -n "${OLD_REV:-}" ]; then
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$OLD_REV"
  (cd "$wt" && go build -trimpath -ldflags="-s -w" -o "$OLDPWD/$kit/old/" ./cmd/meazo-bench)
  git -C "$wt" rev-parse HEAD >"$kit/old/commit"
  git worktree remove --force "$wt"
fi
# Compressed, the kit fits the device tool's 64 MiB with the tree beside it.
tar -C "$kit" -cJf "$kit.tar.xz" .
rm -rf "$kit" && mkdir "$kit" && mv "$kit.tar.xz" "$kit/kit.tar.xz"
du -sh "$kit"
# The device tool refuses a call whose working tree (tracked and untracked-not-ignored files) and carried gpu-kit
# together pass 64 MiB: say how close this kit comes, and stop here rather than on the GPU machine's first call.
tree=$( (git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null || true) | awk '{s += $1} END {print s + 0}')
kitb=$(stat -c %s "$kit/kit.tar.xz")
echo "kit: $kitb bytes + the working tree's $tree = $((kitb + tree)) of the $((64 << 20)) bytes a call carries"
if [ $((kitb + tree)) -gt $((64 << 20)) ]; then
  echo "kit: over the device tool's 64 MiB: leave out what the session's parts do not read (zo.test: host)"
  exit 1
fi
