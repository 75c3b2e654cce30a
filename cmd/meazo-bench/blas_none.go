//go:build !openblas || !cgo

package main

// Built without -tags openblas: no reference BLAS to compare against.
const blasName = ""

const haveBLAS = false

func blasSgemmNT(c, a, w []float32, m, n, k, threads int) { panic("built without -tags openblas") }
