//go:build !goexperiment.simd || !amd64

package cpu

// trainablePaths: without the SIMD build, the scalar loops only.
func trainablePaths() []trainablePath { return []trainablePath{{"scalar", useTrainableScalar}} }

func restoreTrainable() { useTrainableScalar() }
