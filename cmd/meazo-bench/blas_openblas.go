//go:build openblas && cgo

package main

// #cgo LDFLAGS: -lopenblas
// #include <cblas.h>
import "C"

// blasName names the reference BLAS this binary was built with.
const blasName = "OpenBLAS"

// blasSgemmNT computes c[m][n] = a[m][k] · w[n][k]ᵀ with OpenBLAS (w is the
// unpacked HF weight), using the given number of threads.
func blasSgemmNT(c, a, w []float32, m, n, k, threads int) {
	C.openblas_set_num_threads(C.int(threads))
	C.cblas_sgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(m), C.blasint(n), C.blasint(k),
		1, (*C.float)(&a[0]), C.blasint(k), (*C.float)(&w[0]), C.blasint(k), 0, (*C.float)(&c[0]), C.blasint(n))
}

const haveBLAS = true
