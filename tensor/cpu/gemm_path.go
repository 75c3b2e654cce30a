package cpu

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// microKernel computes one 4×32 tile of C over kc steps of k:
//
//	C[i][j] (+)= Σ_k A[i][k] · B[k][j]    (acc: add to C; otherwise overwrite)
//
// a points at A[0][k0] with rows lda apart; only the first rows (1..4) rows
// are valid, the kernel must not read past them. b points at a packed panel
// at k0 (32 floats per k); c at C[0][j0] with rows ldc apart, all 4 rows and
// 32 columns writable. Each element must be accumulated from zero in k order
// (that is what makes results independent of the tiling).
type microKernel func(a *float32, lda, rows int, b, c *float32, ldc, kc int, acc bool)

// microKernelBF16 is microKernel with the panel stored as bfloat16 bits.
type microKernelBF16 func(a *float32, lda, rows int, b *uint16, c *float32, ldc, kc int, acc bool)

// tallKernel computes a whole rows×32 tile of C the way microKernel computes
// a 4×32 one (the same bits per element), for a path whose 4-row tile leaves
// the FMA pipes waiting: a taller tile shares each panel load among more rows
// and keeps more independent accumulators in flight. All rows and columns of
// the tile must be valid. kern16 is the same over bfloat16 panels.
type tallKernel struct {
	rows   int
	kern   func(a *float32, lda int, b, c *float32, ldc, kc int, acc bool)
	kern16 func(a *float32, lda int, b *uint16, c *float32, ldc, kc int, acc bool) // bfloat16 panels; nil: none
}

// gemmPath is one implementation of the micro kernels.
type gemmPath struct {
	name   string
	kern   microKernel
	kern16 microKernelBF16
	tall   []tallKernel // tallest first; may be empty

	tile tileChoice // which of tall are used (gemm_tile.go)
}

// curPath is the GEMM path in use: the fastest available until SetGEMMPath
// (or tensor.Options.GEMMPath, when a CPU backend is opened) picks another.
var curPath atomic.Pointer[gemmPath]

func init() { curPath.Store(availablePaths()[0]) }

// availablePaths lists the paths this build and CPU support, fastest first.
// They are made once, so that a path's tile calibration is made once too.
var availablePaths = sync.OnceValue(func() []*gemmPath {
	return append(simdPaths(), &gemmPath{name: "portable", kern: kernPortable, kern16: kernPortableBF16})
})

// GEMMPaths lists the GEMM paths this build and CPU support, fastest first.
func GEMMPaths() []string {
	var names []string
	for _, p := range availablePaths() {
		names = append(names, p.name)
	}
	return names
}

// GEMMPath reports the GEMM path in use.
func GEMMPath() string { return curPath.Load().name }

// SetGEMMPath selects the GEMM path by name ("" or "auto": the fastest) for
// the whole process. Results are bit-identical within one path, not across
// paths. It is meant for tests and benchmarks (tensor.Options.GEMMPath);
// calls already running keep their path.
func SetGEMMPath(name string) error {
	ps := availablePaths()
	if name == "" || name == "auto" {
		curPath.Store(ps[0])
		return nil
	}
	for _, p := range ps {
		if p.name == name {
			curPath.Store(p)
			return nil
		}
	}
	return fmt.Errorf("GEMM path %q not available on this build/CPU (have %s)", name, strings.Join(GEMMPaths(), ", "))
}

func currentPath() *gemmPath { return curPath.Load() }
