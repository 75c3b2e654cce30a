//go:build amd64 && !goexperiment.simd

package cpu

import "golang.org/x/sys/cpu"

// portableOnly: this build's GEMM is the portable kernel whatever the CPU.
const portableOnly = true

// unusedVectors names the widest vector extension this CPU has (and its OS
// enables) whose GEMM kernels this build leaves out: built without
// GOEXPERIMENT=simd, the amd64 backend runs the portable kernel, which on
// an AVX-512 Xeon made a full-parameter step of Qwen3-0.6B's shapes 21
// times slower (4 min 17 s against 12 s), and Describe says so.
func unusedVectors() string {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
		return "AVX-512"
	case x.HasAVX2 && x.HasFMA:
		return "AVX2"
	}
	return ""
}
