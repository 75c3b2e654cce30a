//go:build !goexperiment.simd || !amd64

package main

// fmaPeak: without GOEXPERIMENT=simd there is no vector FMA loop to measure.
func fmaPeak(threads int) (gflops float64, what string) { return 0, "peak needs GOEXPERIMENT=simd" }
