//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
)

// Outside Linux the backend loads nothing: NVIDIA's libraries are opened by
// their Linux names with dlopen (dlopen_linux.go), and no other system has
// been tried. Open fails with errLinuxOnly, so that backend "auto" takes the
// CPU, as on a Linux machine without a GPU, and "cuda" says why it cannot.
var errLinuxOnly = fmt.Errorf("cuda: the CUDA backend loads NVIDIA's libraries with dlopen and runs on Linux only; on %s use the CPU backend (model.backend: cpu, or --backend cpu)", runtime.GOOS)

// Unused outside Linux: dlopenFirstMode takes them only for its signature.
const openGlobal, openLocal = 0, 0

func dlopenFirstMode(what string, mode int, names ...string) (uintptr, string, error) {
	return 0, "", errLinuxOnly
}

func bind(lib uintptr, libName string, fns map[string]any) error { return errLinuxOnly }
