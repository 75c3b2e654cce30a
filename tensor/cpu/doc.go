// Package cpu is the host implementation of tensor.Backend: float32 kernels
// on Go slices. The GEMM streams weights packed once at load (gemm.go) through
// a micro kernel chosen for the CPU (AVX-512 or AVX2 assembly on amd64 when
// built with GOEXPERIMENT=simd, portable Go otherwise, NEON assembly on arm64;
// gemm_path.go), in tiles of 4×32 and, where the CPU gains from them,
// taller ones whose height a one-millisecond calibration picks
// (gemm_tile.go; every height gives the same bits); the element-wise and reduction ops a decoder layer needs
// (RMSNorm, RoPE, attention over a packed KV cache, SiLU-gated MLP, softmax,
// cross-entropy) are in ops.go and ops_attention.go, and those of OPT and the
// ViT (LayerNorm, GELU, the encoder's attention) in ops_layernorm.go,
// gelu.go and ops_encoder.go. A model's own weights trained in place
// (tensor.Trainer: perturbed products, updates) are trainable*.go and
// gemm_perturbed.go.
//
// Every kernel computes each output element in an order that does not depend
// on the number of worker goroutines (Options.Threads), so results are
// bit-identical run to run and equal across thread counts.
package cpu
