package cuda

import (
	"errors"
	"unsafe"
)

// device is what the backend needs of a GPU: memory, copies, kernel
// launches and cuBLAS's GEMM, alone or batched. gpu (gpu.go) is a real one,
// through the CUDA driver and cuBLAS; the tests also run the backend on an
// emulator that executes kernels/ on the CPU (emu_test.go), so that
// everything above this interface is tested on machines without a GPU.
type device interface {
	// bind makes the device usable from the calling OS thread (the backend
	// has locked the goroutine to it).
	bind() error
	// malloc returns bytes of device memory, or errNoMemory.
	malloc(bytes uint64) (uint64, error)
	free(p uint64)
	memInfo() (free, total uint64)
	htod(dst uint64, src unsafe.Pointer, bytes uint64) error
	dtoh(dst unsafe.Pointer, src uint64, bytes uint64) error
	dtod(dst, src uint64, bytes uint64) error
	memsetD32(dst uint64, v uint32, n uint64) error
	// launch runs a kernel of kernels/; args holds one 8-byte slot per
	// parameter (a 4-byte parameter in the low half).
	launch(name string, grid [3]uint32, block, shmem uint32, args []uint64) error
	// sgemm is cuBLAS's column-major C = α·op(A)·op(B) + β·C, in full
	// float32 (β = 0: C is only written).
	sgemm(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error
	// gemmBF16 is sgemm with A and B in bfloat16 (cublasGemmEx: products on
	// the tensor cores, summed in float32 into a float32 C).
	gemmBF16(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error
	// sgemmBatched is cuBLAS's sgemm with α = 1 and β = 0 (add: β = 1, C
	// added to) over batch problems of one shape: a, b and c are device
	// arrays of batch device pointers.
	sgemmBatched(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, batch int, add bool) error
	close()
}

// errNoMemory is malloc's error when the device is out of memory.
var errNoMemory = errors.New("out of device memory")
