// Package tensor is the seam between the model and the hardware it computes
// on. Backend (backend.go) is the interface: the model holds its weights and
// activations as a backend's Weights and Bufs and calls only Backend
// methods. Backends register themselves by name (registry.go) and are chosen
// with Open: "cpu" (package tensor/cpu: float32 kernels on host memory, a
// GEMM against weights packed once at load), "cuda" (package tensor/cuda:
// NVIDIA GPUs through the driver API and cuBLAS), or "auto", the first of
// them that opens.
//
// Every backend computes each output element in an order fixed by the
// arguments alone, so its results are bit-identical run to run. Package
// tensor/backendtest is the conformance suite every backend passes.
package tensor
