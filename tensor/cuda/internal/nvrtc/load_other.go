//go:build !linux

package nvrtc

import (
	"fmt"
	"runtime"
)

// load fails outside Linux: NVRTC is opened by its Linux names with dlopen
// (load_linux.go), as the CUDA backend's libraries are.
func load() (*nvrtc, error) {
	return nil, fmt.Errorf("NVRTC is loaded with dlopen, on Linux only (this is %s): compile the kernels on Linux", runtime.GOOS)
}
