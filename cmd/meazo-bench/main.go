// Command meazo-bench measures the compute kernels the trainer runs on. Each
// mode lives in its own file and registers itself in init:
//
//	meazo-bench gemm      GEMM GFLOP/s on the model shapes vs OpenBLAS and the FMA peak
//	meazo-bench forward   full forward time, tokens/s, GFLOP/s and peak RSS (vs PyTorch: scripts/bench_forward.sh)
//	meazo-bench zostep    one ZO step vs two plain forwards; grouped with and without prefix caching; -steps N: N steps on new batches
//	meazo-bench zomem     the peak memory of an adapter's ZO step (LoRA or prompt; any optimizer; grouped) or of the plain forward
//	meazo-bench vitstep   a ViT image classifier's ZO step (LoRA, classifier trained) vs two plain forwards; -steps N likewise
//
// Build with GOEXPERIMENT=simd for the SIMD kernels and with -tags openblas
// (cgo, libopenblas-dev) to compare against OpenBLAS in the same run; see
// scripts/bench_gemm.sh.
package main

import (
	"fmt"
	"io"

	"github.com/meazo-go/meazo/internal/cli"
)

var modes = cli.New("meazo-bench", "mode")

// register adds a mode; run parses its own flags from args, with the flag
// set modes.Flags(name) makes.
func register(name string, h cli.Help, run func(args []string, stdout io.Writer) error) {
	modes.Register(name, h, func(args []string, _ io.Reader, stdout io.Writer) error { return run(args, stdout) })
}

// randomWeights is what the modes that time a model on random weights read.
const randomWeights = "nothing but -model's config: random weights of its shapes (a built-in published model by name, no download)."

func main() { modes.Main() }

// checkThreads refuses a -threads below 1: no worker ran, and the figures
// printed (a memory bandwidth of millions of GB/s, no FMA peak) were of
// nothing.
func checkThreads(n int) error {
	if n < 1 {
		return cli.Usage(fmt.Errorf("-threads must be at least 1, got %d", n))
	}
	return nil
}
