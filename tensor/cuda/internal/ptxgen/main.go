// Command ptxgen compiles the CUDA backend's kernels (kernels.cu) to PTX
// with NVRTC, the CUDA runtime compiler, loaded from its shared library (no
// cgo, no CUDA toolkit). `go generate ./tensor/cuda` runs it; the PTX is
// committed and embedded, and CI regenerates it and fails if it differs, so
// every kernel is compile-checked on every change, on machines without a GPU.
//
// The NVRTC version is pinned (see package nvrtc).
//
//	go run ./tensor/cuda/internal/ptxgen -in tensor/cuda/kernels.cu -out tensor/cuda/kernels.ptx
//	go run ./tensor/cuda/internal/ptxgen -check ...   # exit 1 if -out differs
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/tensor/cuda/internal/nvrtc"
)

func main() {
	in := flag.String("in", "kernels.cu", "CUDA C source")
	out := flag.String("out", "kernels.ptx", "PTX to write")
	check := flag.Bool("check", false, "compile and compare with -out instead of writing it; exit 1 if they differ")
	flag.Parse()
	if err := run(*in, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "ptxgen:", err)
		os.Exit(1)
	}
}

func run(in, out string, check bool) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	ptx, err := nvrtc.Compile(string(src), filepath.Base(in))
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if check {
		old, err := os.ReadFile(out)
		if err != nil {
			return fmt.Errorf("%w (run go generate ./tensor/cuda)", err)
		}
		if !bytes.Equal(old, ptx) {
			return fmt.Errorf("%s is not what NVRTC %d.%d makes of %s: run go generate ./tensor/cuda and commit the result", out, nvrtc.WantMajor, nvrtc.WantMinor, in)
		}
		fmt.Printf("ptxgen: %s matches %s (NVRTC %d.%d, %s)\n", out, in, nvrtc.WantMajor, nvrtc.WantMinor, nvrtc.Arch)
		return nil
	}
	if err := atomicfile.WriteFile(out, ptx); err != nil {
		return err
	}
	fmt.Printf("ptxgen: wrote %s (%d bytes) from %s with NVRTC %d.%d, %s\n", out, len(ptx), in, nvrtc.WantMajor, nvrtc.WantMinor, nvrtc.Arch)
	return nil
}
