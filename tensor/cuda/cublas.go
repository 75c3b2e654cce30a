package cuda

import "fmt"

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
	// sgemmBatched takes arrays of pointers: the strided variant's 18
	// arguments were more than purego took before v0.10.
	sgemmBatched func(h uintptr, transa, transb int32, m, n, k int32, alpha *float32, a uint64, lda int32,
		b uint64, ldb int32, beta *float32, c uint64, ldc int32, batch int32) int32
	// gemmEx multiplies operands of the types given (19 arguments).
	gemmEx func(h uintptr, transa, transb int32, m, n, k int32, alpha *float32, a uint64, atype int32, lda int32,
		b uint64, btype int32, ldb int32, beta *float32, c uint64, ctype int32, ldc int32, compute int32, algo int32) int32
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
	// cublasGemmEx's types (library_types.h, cublas_api.h): float32 and
	// bfloat16 operands, float32 accumulation, cuBLAS's choice of algorithm.
	dataF32     = 0  // CUDA_R_32F
	dataBF16    = 14 // CUDA_R_16BF
	compute32F  = 68 // CUBLAS_COMPUTE_32F
	gemmDefault = -1 // CUBLAS_GEMM_DEFAULT
)

// cublasMajors are the cuBLAS major versions tried, newest first; cuBLAS N
// needs a driver that supports CUDA N.0.
var cublasMajors = []int{13, 12, 11}

// loadCublas opens cuBLAS major version major (libcublasLt.so.N first, from
// the same place, since cuBLAS needs it). The libraries are opened
// RTLD_LOCAL, so that a version tried and given up on cannot lend its
// symbols to the next.
func loadCublas(major int) (*cublas, error) {
	lt := fmt.Sprintf("libcublasLt.so.%d", major)
	if _, _, err := dlopenFirstMode(lt, openLocal, lt); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("libcublas.so.%d", major)
	lib, path, err := dlopenFirstMode(name, openLocal, name)
	if err != nil {
		return nil, err
	}
	c := &cublas{path: path}
	err = bind(lib, path, map[string]any{
		"cublasCreate_v2": &c.create, "cublasDestroy_v2": &c.destroy, "cublasGetVersion_v2": &c.getVersion,
		"cublasSetMathMode": &c.setMathMode, "cublasGetMathMode": &c.getMathMode, "cublasSetStream_v2": &c.setStream,
		"cublasSgemm_v2": &c.sgemm, "cublasSgemmBatched": &c.sgemmBatched, "cublasGemmEx": &c.gemmEx,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// version decodes cublasGetVersion: MAJOR·10000 + MINOR·100 + PATCH since
// cuBLAS 11.9 (11.11 ships with CUDA 11.8), MAJOR·1000 + MINOR·100 + PATCH
// before.
func (c *cublas) version(v int32) string {
	if v >= 100000 {
		return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100)
}

func (c *cublas) check(call string, rc int32) error {
	if rc == 0 {
		return nil
	}
	names := map[int32]string{1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH",
		11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED", 16: "LICENSE_ERROR"}
	return fmt.Errorf("cuda: %s: CUBLAS_STATUS_%s (%d)", call, names[rc], rc)
}
