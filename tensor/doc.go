// Package tensor holds the float32 compute kernels the model runs on: a GEMM
// against weights packed once at load, and the element-wise and reduction ops
// a decoder layer needs (RMSNorm, RoPE, attention, SiLU-gated MLP, softmax).
//
// Every kernel computes each output element in an order that does not depend
// on the number of worker goroutines, so results are bit-identical run to run
// and equal across thread counts.
package tensor
