#!/usr/bin/env bash
# For machines that cannot pull base images: makes the two base images the
# Dockerfiles start from, locally, with the names they use:
#
#   docker.io/library/debian:bookworm-slim   a minimal Debian 12 made with debootstrap (--variant=minbase),
#                          with the official image's apt source file
#                          (/etc/apt/sources.list.d/debian.sources, Components: main)
#                          and its "slim" dpkg excludes (no docs, man pages, locales)
#   docker.io/library/golang:1.26-bookworm   that rootfs plus this machine's Go toolchain (/usr/local/go,
#                          must be Go 1.26.x) and a module cache holding every module
#                          this repository's `go mod download` fetches, so the build
#                          stage needs no network for Go
#
# Then `podman build --isolation chroot -t meazo .` (and -f Dockerfile.cuda) works
# with no registry. Run as root from the repository root (debootstrap, podman):
#
#   apt-get install -y debootstrap podman
#   scripts/docker_bases.sh            # skips an image that already exists
#   FORCE=1 scripts/docker_bases.sh    # remakes both
#
# Settings (environment): ENGINE (podman; docker works too), MIRROR (the Debian
# mirror for debootstrap, default http://deb.debian.org/debian, the one the
# official images use), SUITE (bookworm), WORK (scratch dir, default
# /var/tmp/meazo-bases; the rootfs is kept there for reuse), GOROOT_SRC (the Go
# toolchain to copy, default `go env GOROOT`).
#
# These are stand-ins, not copies, of the official images: the official golang
# image also has gcc, git and ca-certificates (not needed here: CGO_ENABLED=0 and
# the modules come from the pre-filled cache). On a machine that can pull, just
# use the official images.
set -euo pipefail

ENGINE=${ENGINE:-podman}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}
WORK=${WORK:-/var/tmp/meazo-bases}
FORCE=${FORCE:-0}
# The names the Dockerfiles use, in full: podman resolves a short name only
# where registries.conf says how (a stock Debian's does not), docker
# shortens these to debian:… and golang:… itself.
DEBIAN_TAG=docker.io/library/debian:${SUITE}-slim
GOLANG_TAG=docker.io/library/golang:1.26-${SUITE}

cd "$(dirname "$0")/.."
[ -f go.mod ] || { echo "run from the meazo-go repository" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (debootstrap, $ENGINE)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "needs debootstrap: apt-get install -y debootstrap" >&2; exit 1; }
command -v "$ENGINE" >/dev/null || { echo "needs $ENGINE" >&2; exit 1; }

have() { [ "$FORCE" != 1 ] && "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

rootfs=$WORK/rootfs-$SUITE
mkdir -p "$WORK"

# --- docker.io/library/debian:bookworm-slim -----------------------------------
if have "$DEBIAN_TAG"; then
  echo "== $DEBIAN_TAG exists (FORCE=1 to remake)"
else
  if [ "$FORCE" = 1 ] || [ ! -x "$rootfs/bin/bash" ]; then
    rm -rf "$rootfs"
    echo "== debootstrap --variant=minbase $SUITE from $MIRROR"
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR"
  fi
  # As in the official image: one deb822 source file (deb.debian.org, main),
  # no sources.list; the slim dpkg excludes; apt keeps no .debs or lists.
  rm -f "$rootfs/etc/apt/sources.list"
  cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
  cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$rootfs"/usr/share/{man,info,groff,lintian,linda}/* \
         "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
         "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
  : > "$rootfs/etc/resolv.conf"; : > "$rootfs/etc/hostname"
  echo "== import $DEBIAN_TAG"
  tar --numeric-owner -C "$rootfs" -c . | "$ENGINE" import --change 'CMD ["bash"]' - "$DEBIAN_TAG"
fi

# --- docker.io/library/golang:1.26-bookworm -----------------------------------
if have "$GOLANG_TAG"; then
  echo "== $GOLANG_TAG exists (FORCE=1 to remake)"
else
  GOROOT_SRC=${GOROOT_SRC:-$(go env GOROOT)}
  gover=$("$GOROOT_SRC/bin/go" env GOVERSION)
  case $gover in go1.26*) ;; *) echo "$GOROOT_SRC is $gover, not Go 1.26" >&2; exit 1 ;; esac
  ctx=$WORK/golang-ctx
  rm -rf "$ctx"; mkdir -p "$ctx"
  echo "== copy $gover from $GOROOT_SRC"
  cp -a "$GOROOT_SRC" "$ctx/go"
  rm -rf "$ctx/go/pkg/obj" "$ctx/go/.git"
  # The modules the Dockerfile's `go mod download` wants, into a fresh cache:
  # from this machine's cache when it has them, else from GOPROXY.
  echo "== module cache for $(head -1 go.mod)"
  hostcache=$(go env GOMODCACHE)/cache/download
  GOMODCACHE=$ctx/gomodcache GOFLAGS=-mod=mod \
    GOPROXY="file://$hostcache,$(go env GOPROXY)" go mod download
  chmod -R u+w "$ctx/gomodcache"   # Go makes it read-only; lets rm -rf work next time
  cat > "$ctx/Containerfile" <<EOF
FROM $DEBIAN_TAG
COPY go /usr/local/go
COPY gomodcache /go/pkg/mod
ENV GOLANG_VERSION=${gover#go} GOTOOLCHAIN=local GOPATH=/go \\
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
EOF
  echo "== build $GOLANG_TAG"
  build_opts=()
  [ "$ENGINE" = podman ] && build_opts=(--isolation chroot)
  "$ENGINE" build "${build_opts[@]}" -t "$GOLANG_TAG" -f "$ctx/Containerfile" "$ctx"
  rm -rf "$ctx"
fi

"$ENGINE" images "$DEBIAN_TAG"
"$ENGINE" images --noheading "$GOLANG_TAG"
