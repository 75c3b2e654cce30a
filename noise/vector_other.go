//go:build !amd64 || purego

package noise

// vectorPaths: this build has no vector kernels (they are amd64 assembly;
// the purego tag leaves them out), every value comes from the scalar path.
func vectorPaths() []*vecKernels { return nil }

// values and bits are never called: there are no paths.
func (*vecKernels) values(*float32, int, int, *kernelArgs, Dist) { panic("noise: no vector path") }

func (*vecKernels) bits(*uint32, int, int, *kernelArgs) { panic("noise: no vector path") }

func (*vecKernels) panel(*float32, *[64]uint32, int, *kernelArgs, Dist) bool { return false }
