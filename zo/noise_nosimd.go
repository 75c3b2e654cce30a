//go:build !(goexperiment.simd && amd64)

package zo

// Without GOEXPERIMENT=simd on amd64 every normal comes from the scalar
// path (normals4).
const (
	haveAVX512 = false
	vecBlocks  = 8
)

func (Stream) normals32([]float32, uint64, float64) { panic("zo: normals32 without AVX-512") }
func (Stream) discrete32([]float32, uint64, bool)   { panic("zo: discrete32 without AVX-512") }
