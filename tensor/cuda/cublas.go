package cuda

import (
	"fmt"
	"strings"
)

// cublas holds the cuBLAS v2 entry points. Any of cuBLAS 13, 12 or 11 works:
// the calls used here have not changed.
type cublas struct {
	path        string
	create      func(h *uintptr) int32
	destroy     func(h uintptr) int32
	getVersion  func(h uintptr, v *int32) int32
	setMathMode func(h uintptr, mode int32) int32
	getMathMode func(h uintptr, mode *int32) int32
	setStream   func(h uintptr, stream uintptr) int32
	sgemm       func(h uintptr, transa, transb int32, m, n, k int32, alpha *float32, a uint64, lda int32,
		b uint64, ldb int32, beta *float32, c uint64, ldc int32) int32
}

// cuBLAS constants (cublas_api.h).
const (
	opN = 0 // CUBLAS_OP_N
	opT = 1 // CUBLAS_OP_T
	// CUBLAS_DEFAULT_MATH: full float32 arithmetic. TF32 (CUBLAS_TF32_TENSOR_OP_MATH)
	// keeps 10 mantissa bits of each input, too few to resolve the 1e-6
	// perturbations of ZO training; the backend sets this mode explicitly
	// and checks it took.
	defaultMath = 0
)

var cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}

func loadCublas() (*cublas, error) {
	// cuBLAS loads its companion cuBLASLt; open the matching one first from
	// the same place, so that a MEAZO_CUDA_LIB_PATH directory is used for both.
	for _, n := range cublasNames {
		dlopenFirst("", strings.Replace(n, "libcublas", "libcublasLt", 1))
	}
	lib, path, err := dlopenFirst("cuBLAS (libcublas.so.13, .12 or .11)", cublasNames...)
	if err != nil {
		return nil, err
	}
	c := &cublas{path: path}
	err = bind(lib, path, map[string]any{
		"cublasCreate_v2": &c.create, "cublasDestroy_v2": &c.destroy, "cublasGetVersion_v2": &c.getVersion,
		"cublasSetMathMode": &c.setMathMode, "cublasGetMathMode": &c.getMathMode, "cublasSetStream_v2": &c.setStream,
		"cublasSgemm_v2": &c.sgemm,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cublas) check(call string, rc int32) error {
	if rc == 0 {
		return nil
	}
	names := map[int32]string{1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH",
		11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED", 16: "LICENSE_ERROR"}
	return fmt.Errorf("cuda: %s: CUBLAS_STATUS_%s (%d)", call, names[rc], rc)
}
