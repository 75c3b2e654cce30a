// Package tensor is the seam between the model and the hardware it computes
// on. Backend (backend.go) is the interface: the model holds its weights and
// activations as a backend's Weights and Bufs and calls only Backend
// methods. Backends register themselves by name (registry.go) and are chosen
// with Open: "cpu" (package tensor/cpu: float32 kernels on host memory, a
// GEMM against weights packed once at load), "cuda" (package tensor/cuda:
// NVIDIA GPUs through the driver API and cuBLAS), or "auto", the first of
// them that opens. The model is written once against Backend, so it runs
// unchanged on any of them.
//
// A backend that can also train a model's own weights (full-parameter ZO)
// implements Trainer (trainable.go): it reads a weight perturbed by seeded
// noise without writing it, and updates it in place. It follows package
// noise's and package update's contracts, so given the same step every
// backend perturbs and updates a weight to the same values.
//
// Every backend computes each output element in an order fixed by the
// arguments alone, so its results are bit-identical run to run. Package
// tensor/backendtest is the conformance suite every backend passes.
package tensor
