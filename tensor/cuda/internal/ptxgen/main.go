// Command ptxgen compiles the CUDA backend's kernels (the folder
// tensor/cuda/kernels, one translation unit of its .cu files in name order:
// package kernelsrc) to PTX with NVRTC, the CUDA runtime compiler, loaded
// from its shared library (no cgo, no CUDA toolkit). `go generate
// ./tensor/cuda` runs it; the PTX is committed and embedded, and
// TestPTXIsCurrent (which CI runs with NVRTC installed) regenerates it and
// fails if it differs, so every kernel is compile-checked on every change,
// on machines without a GPU.
//
// The NVRTC version is pinned (see package nvrtc).
//
//	go run ./tensor/cuda/internal/ptxgen -in tensor/cuda/kernels -out tensor/cuda/kernels.ptx
//	go run ./tensor/cuda/internal/ptxgen -check ...   # exit 1 if -out differs
//	go run ./tensor/cuda/internal/ptxgen -in dev/cuda/gemm_tf32x3.cu -out /tmp/x.ptx   # one file alone
//	go run ./tensor/cuda/internal/ptxgen -hopper -in tensor/cuda/kernels_sm90a -out tensor/cuda/kernels_sm90a.ptx
//
// -hopper compiles for compute_90 and retargets the PTX to sm_90a (package
// kernelsrc's PTXHopper): kernels that use wgmma, loaded on Hopper GPUs only.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/tensor/cuda/internal/kernelsrc"
	"github.com/meazo-go/meazo/tensor/cuda/internal/nvrtc"
)

func main() {
	in := flag.String("in", "kernels", "a folder of CUDA C sources (.cu, .cuh), or one .cu file")
	out := flag.String("out", "kernels.ptx", "PTX to write")
	check := flag.Bool("check", false, "compile and compare with -out instead of writing it; exit 1 if they differ")
	hopper := flag.Bool("hopper", false, "compile for compute_90 and retarget the PTX to sm_90a (kernels_sm90a)")
	flag.Parse()
	if err := run(*in, *out, *check, *hopper); err != nil {
		fmt.Fprintln(os.Stderr, "ptxgen:", err)
		os.Exit(1)
	}
}

func run(in, out string, check, hopper bool) error {
	compile, arch := kernelsrc.PTX, nvrtc.Arch
	if hopper {
		compile, arch = kernelsrc.PTXHopper, nvrtc.ArchHopper
	}
	ptx, err := compile(in)
	if err != nil {
		return err
	}
	if check {
		old, err := os.ReadFile(out)
		if err != nil {
			return fmt.Errorf("%w (run go generate ./tensor/cuda)", err)
		}
		if !bytes.Equal(old, ptx) {
			return fmt.Errorf("%s is not what NVRTC %d.%d makes of %s: run go generate ./tensor/cuda and commit the result", out, nvrtc.WantMajor, nvrtc.WantMinor, in)
		}
		fmt.Printf("ptxgen: %s matches %s (NVRTC %d.%d, %s)\n", out, in, nvrtc.WantMajor, nvrtc.WantMinor, arch)
		return nil
	}
	if err := atomicfile.WriteFile(out, ptx); err != nil {
		return err
	}
	fmt.Printf("ptxgen: wrote %s (%d bytes) from %s with NVRTC %d.%d, %s\n", out, len(ptx), in, nvrtc.WantMajor, nvrtc.WantMinor, arch)
	return nil
}
