//go:build !(goexperiment.simd && amd64)

package zo

// Without GOEXPERIMENT=simd on amd64 every normal comes from the scalar
// path (normals4).
const (
	haveAVX512 = false
	vecBlocks  = 8
)

func (Stream) fillVector([]float32, uint64, Dist, uint64) { panic("zo: fillVector without AVX-512") }
