package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// The backend opens NVIDIA's libraries by their Linux names (libcuda.so.1,
// libcublas.so.N) with dlopen(3), through purego: no cgo, no CUDA toolkit
// at build time. dlopen_other.go stands in for this file elsewhere.

// dlopen modes: the driver global, each cuBLAS version tried local (see
// loadCublas).
const (
	openGlobal = purego.RTLD_NOW | purego.RTLD_GLOBAL
	openLocal  = purego.RTLD_NOW | purego.RTLD_LOCAL
)

// dlopenFirstMode is dlopenFirst with the dlopen mode given.
func dlopenFirstMode(what string, mode int, names ...string) (uintptr, string, error) {
	var tried []string
	dirs := []string{""}
	if d := os.Getenv(LibPathEnv); d != "" {
		dirs = []string{d, ""}
	}
	for _, dir := range dirs {
		for _, n := range names {
			p := n
			if dir != "" {
				p = filepath.Join(dir, n)
			}
			h, err := purego.Dlopen(p, mode)
			if err == nil {
				return h, p, nil
			}
			tried = append(tried, p)
		}
	}
	return 0, "", fmt.Errorf("cuda: %s not found (tried %s; set %s to the directory that holds it)", what, strings.Join(tried, ", "), LibPathEnv)
}

// bind registers each named C function of lib into the Go function pointer
// it maps to, failing if a symbol is missing.
func bind(lib uintptr, libName string, fns map[string]any) error {
	for name, fn := range fns {
		if _, err := purego.Dlsym(lib, name); err != nil {
			return fmt.Errorf("%s has no %s (too old?)", libName, name)
		}
		purego.RegisterLibFunc(fn, lib, name)
	}
	return nil
}
