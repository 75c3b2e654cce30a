# meazo-go build and test entry points. The fast kernels need Go 1.26's
# GOEXPERIMENT=simd (amd64); every target also works without it (portable kernels).
SHELL := /bin/bash
GO ?= go
SIMD := GOEXPERIMENT=simd
# The shared reference fixtures (README, "For contributors"): ../shared when it is
# there. A clone without it leaves MEAZO_SHARED empty, so that the tests that need
# the fixtures skip (each saying so under -v) instead of failing on missing files;
# a MEAZO_SHARED set by hand to a folder that is not there still fails them.
export MEAZO_SHARED ?= $(wildcard $(abspath ../shared))

.PHONY: demo build test shared-note test-simd test-portable test-race test-kernel-checks vet vet-cross bench fuzz docker docker-cuda docker-bases

# The README's first command: the built-in default job, no downloads.
demo:
	$(SIMD) $(GO) run ./cmd/meazo-train --demo --demo-dir demo-run
	$(GO) run ./cmd/meazo-plot all --out demo-run/plots demo-run/run-meazo demo-run/run-zo-sgd demo-run/run-zo-adam
	@echo "plots and memory table in demo-run/plots/; make build puts the commands (meazo-train, meazo-eval, ...) in bin/"

# Every command into bin/, each stamped with the commit it was built from
# (-version; summary.json's "program"): -buildvcs=auto over a GOFLAGS that
# turns it off, and no stamp outside a checkout.
build:
	mkdir -p bin
	$(SIMD) $(GO) build -buildvcs=auto -o bin/ ./cmd/...

# The README's second command (and what .ci/run calls): every test, with the
# SIMD kernels and with the portable fallback.
test: shared-note vet test-simd test-portable

# One line up front, since go test prints no skips without -v.
shared-note:
	@[ -n "$$MEAZO_SHARED" ] || echo "note: ../shared (the reference fixtures) is not there: the tests that compare with them skip (README, \"For contributors\")"

vet:
	$(SIMD) $(GO) vet ./...
	$(GO) vet ./...

# The systems the project compiles for but is not tested on (README,
# "Set-up"): every package and test vetted, so that they keep compiling.
# Two builds cover the files that differ: Windows on amd64 with the SIMD
# kernels (the files for Windows, and the amd64 kernels outside Linux) and
# macOS on arm64 (Unix outside Linux, arm64's); the portable, non-SIMD
# files are the Linux builds' own. About 1.5 minutes with an empty Go
# build cache, seconds with a warm one. Linux arm64 is tested
# (scripts/test_arm64.sh, under qemu); Windows and macOS binaries are never
# run here.
vet-cross:
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(SIMD) $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

test-simd:
	$(SIMD) $(GO) test -count=1 ./...

# The portable pass leaves out tensor/cuda: its kernels run on the emulator
# (C++), the same in both builds, and its checks against the CPU backend run
# in the SIMD pass, at bit-exact tolerances (about 2 minutes saved).
test-portable:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v '/tensor/cuda$$')

# The race detector, with its pointer checks (checkptr), over the packages
# with unsafe pointers, assembly kernels and worker pools (CI runs it too).
test-race:
	$(SIMD) $(GO) test -race -count=1 ./tensor/cpu ./tensor/backendtest ./model/... ./zo ./lora
	$(SIMD) $(GO) test -race -count=1 -run 'TestEncodeFirstIsSequential' ./train

# The CUDA kernels under two checkers, without a GPU (docs/BACKENDS.md,
# "Testing a backend"): every kernel on the kernel emulator built with
# ThreadSanitizer (races between the threads of a block, barriers in
# divergent code) and with AddressSanitizer (accesses outside an
# allocation), failing on any report (TestKernelsChecked;
# TestCheckerFindsFaults proves each checker). The model checks against the
# CPU launch the same kernels again: left out. Both at once, about 4 minutes
# on 2 cores (CI runs it).
KERNEL_CHECKS := race memory
test-kernel-checks:
	$(MAKE) -j2 --output-sync=target $(addprefix kernel-check-,$(KERNEL_CHECKS))

kernel-check-%:
	MEAZO_CUDA_EMU_CHECK=$* $(SIMD) $(GO) test -count=1 -timeout 30m -run 'TestCheckerFindsFaults|TestKernelsChecked' \
		-skip 'TestKernelsChecked/Model/AgainstCPU' ./tensor/cuda

bench:
	scripts/bench_gemm.sh
	$(SIMD) $(GO) run ./cmd/meazo-bench forward
	$(SIMD) $(GO) run ./cmd/meazo-bench zostep

# Every parser of a file users hand us, fuzzed FUZZTIME each (their seeds
# also run in every go test). A failing input lands in PKG/testdata/fuzz/.
# Go minimises each new interesting input for up to 60 s by default, during
# which nothing else runs: FuzzDecode's 1-minute run executed 13 inputs. With
# FUZZMINIMIZE = 3s the same minute executes tens of thousands.
FUZZTIME ?= 1m
FUZZMINIMIZE ?= 3s
FUZZ_TARGETS := safetensors:FuzzParseHeader tokenizer:FuzzTokenizerJSON tokenizer:FuzzChatTemplate data:FuzzReadText \
	data:FuzzReadParquet zo:FuzzEngineState model:FuzzParseConfig lora:FuzzPEFTConfig results:FuzzMetrics train:FuzzConfigLoad \
	imageproc:FuzzDecode imageproc:FuzzParseConfig model:FuzzParseViTConfig data:FuzzReadImageParquet tokenizer:FuzzGPT2Files \
	model:FuzzLoadDir lora:FuzzLoadDir tokenizer:FuzzLoadDir prompttune:FuzzLoad sweep:FuzzLoadStudy \
	cmd/meazo-eval:FuzzScore synth:FuzzParseTrace train:FuzzVerifyManifest
fuzz:
	set -e; for t in $(FUZZ_TARGETS); do \
	  $(SIMD) $(GO) test ./$${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE); \
	done

# The images (docs/DOCKER.md). With podman: make docker-cuda DOCKER=podman
# DOCKER_BUILD_FLAGS="--isolation chroot"; on a machine that cannot pull the
# base images, run `make docker-bases` (root, debootstrap) first.
DOCKER ?= docker
DOCKER_BUILD_FLAGS ?=

docker:
	$(DOCKER) build $(DOCKER_BUILD_FLAGS) -t meazo .

docker-cuda:
	$(DOCKER) build $(DOCKER_BUILD_FLAGS) -f Dockerfile.cuda -t meazo-cuda .

docker-bases:
	ENGINE=$(DOCKER) scripts/docker_bases.sh
