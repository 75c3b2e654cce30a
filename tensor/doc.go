// Package tensor is what the model computes with. Backend (backend.go) is
// the seam: the model holds its weights and activations as a backend's
// Weights and Bufs and calls only Backend methods, so another device can be
// added by implementing that interface. CPU (cpu.go) is the host backend,
// built on this package's float32 kernels: a GEMM against weights packed
// once at load, and the element-wise and reduction ops a decoder layer needs
// (RMSNorm, RoPE, attention over a packed KV cache, SiLU-gated MLP, softmax,
// cross-entropy).
//
// Every kernel computes each output element in an order that does not depend
// on the number of worker goroutines, so results are bit-identical run to run
// and equal across thread counts.
package tensor
