# meazo-go in a container: every command (meazo-train, meazo-eval, meazo-plot,
# meazo-sweep, …) on PATH; the configs and scripts/sweep.sh in /opt/meazo.
# Usage: docs/DOCKER.md.
#
#   docker build -t meazo .
#   docker run --rm -v "$PWD/runs:/work" meazo      # the built-in demo

# Build: CGO_ENABLED=0 (pure Go, no C toolchain) with the SIMD kernels on
# amd64. Not static binaries: the CUDA backend, linked into every command,
# loads its libraries at run time through purego, which links the binaries
# against glibc (libc, libdl, libpthread; `ldd` lists them), so the run
# stage is a glibc base (Debian), not scratch. The base images are named in
# full (docker.io/library/…), which docker and podman both accept; without
# a registry, `make docker-bases` makes them locally (docs/DOCKER.md).
FROM docker.io/library/golang:1.26-bookworm AS build
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN export CGO_ENABLED=0; \
    if [ "${TARGETARCH:-amd64}" = amd64 ]; then export GOEXPERIMENT=simd; fi; \
    go build -trimpath -ldflags="-s -w" -o /out/bin/ ./cmd/... \
 && mkdir -p /out/share/meazo/scripts \
 && cp scripts/sweep.sh /out/share/meazo/scripts/ \
 && if [ -d configs ]; then cp -r configs /out/share/meazo/; fi

# Run: a small Debian (bash for scripts/sweep.sh), no Go toolchain, a non-root user.
FROM docker.io/library/debian:bookworm-slim
RUN useradd --create-home --uid 10001 meazo \
 && mkdir -p /work /models /data \
 && chown meazo:meazo /work
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/share/meazo/ /opt/meazo/
ENV MEAZO_TRAIN=meazo-train MEAZO_PLOT=meazo-plot
USER meazo
WORKDIR /work
# /work: the working directory, where a config's relative paths point: the
# shipped configs read models/ and data/ and write runs/ there, so mount those
# three under /work (docs/DOCKER.md). /models and /data: for absolute paths.
VOLUME ["/work"]
CMD ["meazo-train", "--demo"]
