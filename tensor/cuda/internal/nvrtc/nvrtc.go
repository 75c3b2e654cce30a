// Package nvrtc compiles the CUDA backend's kernels to PTX with NVRTC, the
// CUDA runtime compiler, loaded from its shared library with purego (no cgo,
// no CUDA toolkit). The version is pinned, since PTX differs between
// compiler versions: 11.8, from Debian bookworm's non-free packages
// libnvrtc11.2 and libnvrtc-builtins11.8. The target is the compute_80
// virtual architecture, which the driver compiles for A100 (sm_80), H100
// (sm_90) and later GPUs.
package nvrtc

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"unsafe"
)

// The pinned compiler and the targets: compute_80 for the kernels every
// GPU runs, compute_90 for those that only Hopper runs (kernelsrc retargets
// their PTX to sm_90a, which NVRTC 11.8 does not know).
const (
	WantMajor, WantMinor = 11, 8
	Arch                 = "--gpu-architecture=compute_80"
	ArchHopper           = "--gpu-architecture=compute_90"
)

// Hint says how to install the pinned NVRTC.
const Hint = "install NVRTC 11.8 (Debian bookworm non-free: apt-get install libnvrtc11.2 libnvrtc-builtins11.8; scripts/install_nvrtc.sh)"

// Library names: NVRTC 11.x keeps the soname libnvrtc.so.11.2 for every
// 11.x release; the builtins library must be loaded first (NVRTC fails with
// NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, 7, when it cannot find it).
var (
	builtinsLib = []string{"libnvrtc-builtins.so.11.8"}
	nvrtcLib    = []string{"libnvrtc.so.11.2", "libnvrtc.so.11.8"}
)

// Compile compiles CUDA C source (named name in messages) to PTX for
// compute_80 with the pinned NVRTC. headers maps the names the source may
// #include to their contents: NVRTC reads no other file. Warnings are
// errors.
func Compile(src, name string, headers map[string]string) ([]byte, error) {
	return CompileFor(Arch, src, name, headers)
}

// CompileFor is Compile for the target arch (Arch or ArchHopper).
func CompileFor(arch, src, name string, headers map[string]string) ([]byte, error) {
	nv, err := load()
	if err != nil {
		return nil, err
	}
	return nv.compile(src, name, headers, []string{arch})
}

// nvrtc holds the NVRTC entry points.
type nvrtc struct {
	version        func(major, minor *int32) int32
	createProgram  func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames uintptr) int32
	compileProgram func(prog uintptr, numOptions int32, options uintptr) int32
	getLogSize     func(prog uintptr, size *uintptr) int32
	getLog         func(prog uintptr, log *byte) int32
	getPTXSize     func(prog uintptr, size *uintptr) int32
	getPTX         func(prog uintptr, ptx *byte) int32
	destroyProgram func(prog *uintptr) int32
	getErrorString func(code int32) string
}

// cStrings returns NUL-terminated copies of ss and an array of their
// addresses; keep both alive while C reads them.
func cStrings(ss []string) ([][]byte, []uintptr) {
	bufs := make([][]byte, len(ss))
	ptrs := make([]uintptr, len(ss)+1)
	for i, s := range ss {
		bufs[i] = append([]byte(s), 0)
		ptrs[i] = uintptr(unsafe.Pointer(&bufs[i][0]))
	}
	return bufs, ptrs
}

func (nv *nvrtc) compile(src, name string, headers map[string]string, options []string) ([]byte, error) {
	names := slices.Sorted(maps.Keys(headers))
	texts := make([]string, len(names))
	for i, n := range names {
		texts[i] = headers[n]
	}
	textBufs, textPtrs := cStrings(texts)
	nameBufs, namePtrs := cStrings(names)
	var prog uintptr
	rc := nv.createProgram(&prog, src, name, int32(len(names)), uintptr(unsafe.Pointer(&textPtrs[0])), uintptr(unsafe.Pointer(&namePtrs[0])))
	if rc != 0 {
		return nil, fmt.Errorf("nvrtcCreateProgram: %s", nv.getErrorString(rc))
	}
	defer nv.destroyProgram(&prog)
	bufs, ptrs := cStrings(options)
	rc = nv.compileProgram(prog, int32(len(options)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(bufs) // C read them through the addresses in ptrs
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(textBufs) // and the headers, through textPtrs and namePtrs
	runtime.KeepAlive(nameBufs)
	runtime.KeepAlive(textPtrs)
	runtime.KeepAlive(namePtrs)
	var logSize uintptr
	nv.getLogSize(prog, &logSize)
	log := make([]byte, logSize+1)
	nv.getLog(prog, &log[0])
	log = bytes.TrimRight(log, "\x00")
	if rc != 0 {
		return nil, fmt.Errorf("compilation failed (%s):\n%s", nv.getErrorString(rc), log)
	}
	if len(bytes.TrimSpace(log)) > 0 {
		return nil, fmt.Errorf("NVRTC warnings (the kernels must compile cleanly):\n%s", log)
	}
	var size uintptr
	if rc := nv.getPTXSize(prog, &size); rc != 0 {
		return nil, fmt.Errorf("nvrtcGetPTXSize: %s", nv.getErrorString(rc))
	}
	ptx := make([]byte, size)
	if rc := nv.getPTX(prog, &ptx[0]); rc != 0 {
		return nil, fmt.Errorf("nvrtcGetPTX: %s", nv.getErrorString(rc))
	}
	return bytes.TrimRight(ptx, "\x00"), nil
}
