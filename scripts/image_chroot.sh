#!/usr/bin/env bash
# Runs a command from a built image's filesystem without a container runtime,
# for machines where containers cannot run (no cgroups) but podman can build:
# mounts the image (podman image mount), bind-mounts a writable directory on
# /work, /proc and /dev, and chroots in as the image's user (uid 10001) with the
# image's environment and working directory. Root only; podman only.
#
#   scripts/image_chroot.sh meazo-cuda meazo-train            # the demo
#   scripts/image_chroot.sh meazo-cuda ldconfig -p            # what the loader sees
#   WORK=/var/tmp/w scripts/image_chroot.sh meazo meazo-plot all --out /work/demo-run/plots /work/demo-run/run-*
#
# WORK: the host directory for /work (default: a new one under /var/tmp; it is
# kept and printed). No GPU, no NVIDIA container toolkit: libcuda.so.1 is absent.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
img=$1; shift
w=${WORK:-$(mktemp -d /var/tmp/meazo-chroot-work.XXXXXX)}
mkdir -p "$w"; chown 10001:10001 "$w"
mnt=$(podman image mount "$img")
mounted=()
cleanup() {
  for ((i=${#mounted[@]}-1; i>=0; i--)); do umount "${mounted[i]}" || true; done
  podman image unmount "$img" >/dev/null || true
}
trap cleanup EXIT
mount --bind "$w" "$mnt/work"; mounted+=("$mnt/work")
mount -t proc proc "$mnt/proc"; mounted+=("$mnt/proc")
mount --bind /dev "$mnt/dev"; mounted+=("$mnt/dev")
# The image's ENV lines (PATH, MEAZO_*, NVIDIA_*), as `docker run` would set them.
mapfile -t envs < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$img" | sed '/^$/d')
rc=0
chroot --userspec=10001:10001 "$mnt" /usr/bin/env -i HOME=/home/meazo "${envs[@]}" \
  /bin/sh -c 'cd /work && exec "$@"' sh "$@" || rc=$?
echo "image_chroot: $img, /work = $w, exit $rc" >&2
exit $rc
