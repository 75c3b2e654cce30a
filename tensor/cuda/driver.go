package cuda

import (
	"fmt"
	"unsafe"
)

// LibPathEnv names a directory searched first for libcuda.so.1 and
// libcublas.so.N (for example the nvidia/cublas/lib folder of a PyTorch
// installation).
const LibPathEnv = "MEAZO_CUDA_LIB_PATH"

// driver holds the CUDA driver API entry points (libcuda.so.1, installed
// with the NVIDIA driver).
type driver struct {
	init               func(flags uint32) int32
	driverGetVersion   func(v *int32) int32
	deviceGetCount     func(n *int32) int32
	deviceGet          func(dev *int32, ordinal int32) int32
	deviceGetName      func(name *byte, n int32, dev int32) int32
	deviceTotalMem     func(bytes *uint64, dev int32) int32
	deviceGetAttribute func(v *int32, attr int32, dev int32) int32
	primaryCtxRetain   func(ctx *uintptr, dev int32) int32
	primaryCtxRelease  func(dev int32) int32
	ctxSetCurrent      func(ctx uintptr) int32
	ctxSynchronize     func() int32
	moduleLoadDataEx   func(mod *uintptr, image unsafe.Pointer, nOptions uint32, options *int32, values *uintptr) int32
	moduleUnload       func(mod uintptr) int32
	moduleGetFunction  func(fn *uintptr, mod uintptr, name string) int32
	funcSetAttribute   func(fn uintptr, attr int32, v int32) int32
	funcGetAttribute   func(v *int32, attr int32, fn uintptr) int32
	memAlloc           func(ptr *uint64, bytes uint64) int32
	memFree            func(ptr uint64) int32
	memGetInfo         func(free, total *uint64) int32
	memcpyHtoD         func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	memcpyHtoDAsync    func(dst uint64, src unsafe.Pointer, bytes uint64, stream uintptr) int32
	memAllocHost       func(p *unsafe.Pointer, bytes uint64) int32
	memFreeHost        func(p unsafe.Pointer) int32
	memcpyDtoH         func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	memcpyDtoD         func(dst, src uint64, bytes uint64) int32
	memsetD32          func(dst uint64, v uint32, n uint64) int32
	launchKernel       func(fn uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params unsafe.Pointer, extra uintptr) int32
	getErrorName       func(code int32, s **byte) int32
	getErrorString     func(code int32, s **byte) int32
}

// Driver API constants used here (cuda.h).
const (
	attrComputeMajor        = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeMinor        = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrMaxSharedOptin      = 97 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	attrMultiprocessors     = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	funcAttrMaxDynamicShmem = 8  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	funcAttrNumRegs         = 4  // CU_FUNC_ATTRIBUTE_NUM_REGS
	funcAttrLocalBytes      = 3  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
	errOutOfMemory          = 2  // CUDA_ERROR_OUT_OF_MEMORY
	errNoDevice             = 100

	jitErrorLogBuffer          = 5 // CU_JIT_ERROR_LOG_BUFFER
	jitErrorLogBufferSizeBytes = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
)

// dlopenFirst opens the first of names that loads, looking in
// $MEAZO_CUDA_LIB_PATH first, and says which it tried when none does.
func dlopenFirst(what string, names ...string) (uintptr, string, error) {
	return dlopenFirstMode(what, openGlobal, names...)
}

func loadDriver() (*driver, error) {
	lib, path, err := dlopenFirst("the NVIDIA driver library libcuda.so.1", "libcuda.so.1")
	if err != nil {
		return nil, err
	}
	d := &driver{}
	err = bind(lib, path, map[string]any{
		"cuInit": &d.init, "cuDriverGetVersion": &d.driverGetVersion, "cuDeviceGetCount": &d.deviceGetCount,
		"cuDeviceGet": &d.deviceGet, "cuDeviceGetName": &d.deviceGetName, "cuDeviceTotalMem_v2": &d.deviceTotalMem,
		"cuDeviceGetAttribute": &d.deviceGetAttribute, "cuDevicePrimaryCtxRetain": &d.primaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.primaryCtxRelease, "cuCtxSetCurrent": &d.ctxSetCurrent,
		"cuCtxSynchronize": &d.ctxSynchronize, "cuModuleLoadDataEx": &d.moduleLoadDataEx, "cuModuleUnload": &d.moduleUnload,
		"cuModuleGetFunction": &d.moduleGetFunction, "cuFuncSetAttribute": &d.funcSetAttribute,
		"cuFuncGetAttribute": &d.funcGetAttribute,
		"cuMemAlloc_v2":      &d.memAlloc, "cuMemFree_v2": &d.memFree, "cuMemGetInfo_v2": &d.memGetInfo,
		"cuMemcpyHtoD_v2": &d.memcpyHtoD, "cuMemcpyDtoH_v2": &d.memcpyDtoH, "cuMemcpyDtoD_v2": &d.memcpyDtoD,
		"cuMemcpyHtoDAsync_v2": &d.memcpyHtoDAsync, "cuMemAllocHost_v2": &d.memAllocHost, "cuMemFreeHost": &d.memFreeHost,
		"cuMemsetD32_v2": &d.memsetD32, "cuLaunchKernel": &d.launchKernel,
		"cuGetErrorName": &d.getErrorName, "cuGetErrorString": &d.getErrorString,
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// cString reads a NUL-terminated C string (memory the driver owns).
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

// check turns a driver result into an error naming the call.
func (d *driver) check(call string, rc int32) error {
	if rc == 0 {
		return nil
	}
	var name, text *byte
	d.getErrorName(rc, &name)
	d.getErrorString(rc, &text)
	return &driverError{call: call, code: rc, name: cString(name), text: cString(text)}
}

type driverError struct {
	call       string
	code       int32
	name, text string
}

func (e *driverError) Error() string {
	msg := fmt.Sprintf("cuda: %s: %s (%d): %s", e.call, e.name, e.code, e.text)
	if e.sticky() {
		msg += "; the GPU context is unusable after this (a kernel faulted): restart the process"
	}
	return msg
}

// sticky reports an error after which the context cannot be used again,
// as cuda.h documents each: CUDA_ERROR_ILLEGAL_ADDRESS (700),
// LAUNCH_TIMEOUT (702), CONTEXT_IS_DESTROYED (709), ASSERT (710) and
// HARDWARE_STACK_ERROR … LAUNCH_FAILED (714-719). The others of the 700s
// (LAUNCH_OUT_OF_RESOURCES, 701: a launch asked for too many registers or
// too much shared memory; the peer and host-registration errors) leave the
// context as it was.
func (e *driverError) sticky() bool {
	switch e.code {
	case 700, 702, 709, 710, 714, 715, 716, 717, 718, 719:
		return true
	}
	return false
}
