#!/usr/bin/env bash
# Installs NVRTC 11.8 (NVIDIA's CUDA runtime compiler) from Debian bookworm's
# non-free component, so that `go generate ./tensor/cuda` and the PTX check
# (TestPTXIsCurrent) can compile the CUDA kernels on a machine without a GPU.
# With --with-cublas also cuBLAS 11.8 (libcublas11, ~670 MB installed: the
# CUDA Docker image's), so that TestCublasBinds can bind every function the
# backend calls from it. Idempotent: installs only what is missing. Enables
# non-free by adding it to the Components: line of the existing Debian apt
# source; it adds no source and no host. Needs root (or sudo).
set -euo pipefail
case "${1:-}" in
"" | --with-cublas) ;;
*) echo "install_nvrtc: unknown argument $1 (the one option is --with-cublas)" >&2; exit 2 ;;
esac
libs=$(ldconfig -p)
pkgs=()
if ! grep -q 'libnvrtc-builtins.so.11.8' <<<"$libs" || ! grep -q 'libnvrtc.so.11.2' <<<"$libs"; then
  pkgs+=(libnvrtc11.2 libnvrtc-builtins11.8)
fi
if [ "${1:-}" = --with-cublas ] && ! grep -q 'libcublas.so.11 ' <<<"$libs"; then
  pkgs+=(libcublas11)
fi
if [ ${#pkgs[@]} = 0 ]; then
  echo "install_nvrtc: NVRTC 11.8${1:+ and cuBLAS 11} already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ]; then
  # deb822: the stanza of the main archive (URIs ending in /debian) gets non-free.
  $SUDO python3 - "$src" <<'PY'
import sys
p = sys.argv[1]
stanzas = open(p).read().split("\n\n")
for i, s in enumerate(stanzas):
    lines = s.split("\n")
    if any(l.startswith("URIs:") and l.rstrip("/").endswith("/debian") for l in lines):
        for j, l in enumerate(lines):
            if l.startswith("Components:") and "non-free" not in l.split():
                lines[j] = l + " non-free"
        stanzas[i] = "\n".join(lines)
open(p, "w").write("\n\n".join(stanzas))
PY
elif [ -f /etc/apt/sources.list ]; then
  $SUDO sed -i -E '/^deb .*\/debian\/? bookworm(-updates)? /{/ non-free( |$)/!s/$/ non-free/}' /etc/apt/sources.list
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "install_nvrtc: installed ${pkgs[*]}"
