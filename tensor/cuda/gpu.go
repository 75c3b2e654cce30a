package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// gpu is a device: one NVIDIA GPU through the CUDA driver API and cuBLAS.
type gpu struct {
	drv              *driver
	blas             *cublas
	dev              int32
	ctx              uintptr
	module           uintptr
	hopper           uintptr // kernels_sm90a's module, loaded for Options.TF32x3 only
	sms              int32   // streaming multiprocessors (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
	handle           uintptr
	fns              map[string]uintptr
	alpha, beta, one *float32 // sgemmBatched's α = 1 and β = 0 or 1, which cuBLAS reads through host pointers
	stage            staging
	arith            string // the GPU and cuBLAS, for Backend.Arithmetic
}

// staging is pinned (page-locked) host memory through which htod sends
// small copies asynchronously. A copy from pageable memory,
// cuMemcpyHtoD's case for Go memory, first waits for all the work queued
// on the stream, so each of the many small uploads of a step (the
// adapter's matrices, once per layer and variant; masks, row indices)
// would drain the GPU's queue and leave it idle while the host queues the
// next kernels. Copied into pinned memory instead, the data go with
// cuMemcpyHtoDAsync in the stream's order, and the host runs on. The
// region a copy reads is not written again before the stream has been
// waited for (dtoh, which every step ends with, or a full buffer).
type staging struct {
	mem  unsafe.Pointer // stageBytes of pinned memory; nil: every copy synchronous
	used uint64         // bytes of mem given to copies since the stream was last waited for
}

// stageBytes is the pinned staging buffer's size: both variants' LoRA
// matrices of a step of Qwen3-0.6B (18 MB) fit. A copy of more than a
// quarter of it goes synchronously (weights, at load). An adapter on every
// projection (all-linear: 80 MB for the two variants at r 16) does not
// fit: the stream is waited for each time the buffer fills, which costs
// time, not bits (not yet measured on a GPU: session.sh loratargets).
const stageBytes = 32 << 20

// openGPU starts GPU ordinal on the calling OS thread: the primary
// context, the kernels (the embedded PTX, compiled by the driver for this
// GPU), pinned memory for asynchronous uploads unless syncUploads, and a
// cuBLAS handle in full float32 math. It returns the device's one-line
// description and the dynamic shared memory a block may use.
func openGPU(ordinal int, syncUploads bool, hopper hopperWish) (g *gpu, desc string, maxShm int, err error) {
	drv, err := loadDriver()
	if err != nil {
		return nil, "", 0, err
	}
	if err := drv.check("cuInit", drv.init(0)); err != nil {
		return nil, "", 0, err
	}
	var n int32
	if err := drv.check("cuDeviceGetCount", drv.deviceGetCount(&n)); err != nil {
		return nil, "", 0, err
	}
	if n == 0 || ordinal < 0 || ordinal >= int(n) {
		return nil, "", 0, fmt.Errorf("cuda: no GPU %d (the driver sees %d; check CUDA_VISIBLE_DEVICES and, in Docker, --gpus)", ordinal, n)
	}
	g = &gpu{drv: drv, fns: map[string]uintptr{}}
	if desc, maxShm, err = g.start(int32(ordinal), syncUploads, hopper); err != nil {
		g.close()
		return nil, "", 0, err
	}
	return g, desc, maxShm, nil
}

// shmKernels are the kernels of kernels/ whose dynamic shared memory the
// backend sizes up to maxShm (less the value: attention_tiled's larger
// static arrays), beyond the 48 KiB a launch gets without
// cuFuncSetAttribute: every kernel with DYNAMIC_SHARED
// (TestShmKernelsAllowed). One missing fails to launch once its shared
// memory passes 48 KiB (EncoderAttention from about 12,000 tokens), though
// the backend's own bound (maxShm) lets the call through.
var shmKernels = map[string]int{
	"attention":         0,
	"attention_tiled":   tiledExtraShm,
	"attention_softmax": 0,
	"encoder_attention": 0,
	"encoder_softmax":   0,
}

// hopperWish is whether start loads kernels_sm90a: not at all, or for
// Options.TF32x3 (a GPU that cannot run it fails the open), or for
// Options.TF32x3Auto (one that cannot is described and runs SGEMM).
type hopperWish int

const (
	hopperNo hopperWish = iota
	hopperNeeded
	hopperIfAble
)

func (g *gpu) start(ordinal int32, syncUploads bool, hopper hopperWish) (desc string, maxShm int, err error) {
	d := g.drv
	if err := d.check("cuDeviceGet", d.deviceGet(&g.dev, ordinal)); err != nil {
		return "", 0, err
	}
	if err := d.check("cuDevicePrimaryCtxRetain", d.primaryCtxRetain(&g.ctx, g.dev)); err != nil {
		return "", 0, err
	}
	if err := g.bind(); err != nil {
		return "", 0, err
	}
	var major, minor, shm, ver int32
	d.deviceGetAttribute(&g.sms, attrMultiprocessors, g.dev)
	d.deviceGetAttribute(&major, attrComputeMajor, g.dev)
	d.deviceGetAttribute(&minor, attrComputeMinor, g.dev)
	d.deviceGetAttribute(&shm, attrMaxSharedOptin, g.dev)
	d.driverGetVersion(&ver)
	if ver < 11080 {
		return "", 0, fmt.Errorf("cuda: the driver supports CUDA %d.%d; the kernels' PTX needs 11.8 or later (driver 520 or later)", ver/1000, ver%1000/10)
	}
	if major < 8 {
		return "", 0, fmt.Errorf("cuda: GPU %d has compute capability %d.%d; the kernels are built for 8.0 and later (A100, H100, …)", ordinal, major, minor)
	}
	if g.module, err = g.loadModule(kernelsPTX, "the embedded PTX"); err != nil {
		return "", 0, err
	}
	for name := range kernelParams {
		var fn uintptr
		if err := d.check("cuModuleGetFunction "+name, d.moduleGetFunction(&fn, g.module, name)); err != nil {
			return "", 0, err
		}
		g.fns[name] = fn
	}
	// Attention keeps a query's scores in shared memory: allow what the
	// device allows beyond the default 48 KiB, less the kernels' static
	// shared arrays, to every kernel that takes dynamic shared memory.
	maxShm = int(shm) - 4096
	for name, extra := range shmKernels {
		if err := d.check("cuFuncSetAttribute "+name, d.funcSetAttribute(g.fns[name], funcAttrMaxDynamicShmem, int32(maxShm-extra))); err != nil {
			return "", 0, err
		}
	}
	var hopperDesc string
	if hopper != hopperNo {
		if hopperDesc, err = g.loadHopper(ordinal, major, minor, int(shm)); err != nil {
			if hopper == hopperNeeded {
				return "", 0, err
			}
			g.hopper, hopperDesc = 0, "; float32 products by SGEMM, not on the tensor cores (MEAZO_CUDA_3XTF32=auto): "+strings.TrimPrefix(err.Error(), "cuda: ")
		}
	}
	// Pinned memory for asynchronous uploads; without it (or with
	// Options.SyncUploads) uploads stay synchronous: correct, slower.
	if syncUploads || d.memAllocHost(&g.stage.mem, stageBytes) != 0 {
		g.stage.mem = nil
	}
	bver, err := g.startBlas(ver)
	if err != nil {
		return "", 0, err
	}
	c := g.blas
	g.alpha, g.beta, g.one = new(float32), new(float32), new(float32)
	*g.alpha, *g.one = 1, 1
	var name [256]byte
	d.deviceGetName(&name[0], int32(len(name)), g.dev)
	free, total := g.memInfo()
	desc = fmt.Sprintf("%s (compute %d.%d), %.1f GiB free of %.1f GiB; driver CUDA %d.%d; cuBLAS %s (%s); float32, TF32 off",
		cString(&name[0]), major, minor, float64(free)/(1<<30), float64(total)/(1<<30), ver/1000, ver%1000/10,
		c.version(bver), c.path)
	desc += hopperDesc
	g.arith = fmt.Sprintf("cuda, %s (compute %d.%d), cuBLAS %s", cString(&name[0]), major, minor, c.version(bver))
	switch {
	case syncUploads:
		desc += "; uploads synchronous (MEAZO_CUDA_UPLOADS)"
	case g.stage.mem == nil:
		desc += "; uploads synchronous (no pinned host memory)"
	}
	return desc, maxShm, nil
}

// startBlas opens the newest cuBLAS the driver supports (driverVer as
// cuDriverGetVersion gives it) that makes a handle, in full float32 math;
// it returns cuBLAS's version.
func (g *gpu) startBlas(driverVer int32) (int32, error) {
	var errs []string
	for _, major := range cublasMajors {
		if int(driverVer) < major*1000 {
			continue
		}
		c, err := loadCublas(major)
		if err == nil {
			err = c.check("cublasCreate", c.create(&g.handle))
			if err != nil {
				g.handle = 0
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		g.blas = c
		if err := c.check("cublasSetMathMode", c.setMathMode(g.handle, defaultMath)); err != nil {
			return 0, err
		}
		var mode, v int32
		if err := c.check("cublasGetMathMode", c.getMathMode(g.handle, &mode)); err != nil {
			return 0, err
		}
		if mode != defaultMath {
			return 0, fmt.Errorf("cuda: cuBLAS math mode is %d after setting CUBLAS_DEFAULT_MATH", mode)
		}
		c.getVersion(g.handle, &v)
		return v, nil
	}
	if len(errs) == 0 {
		return 0, fmt.Errorf("cuda: no cuBLAS version is supported by this driver (CUDA %d.%d)", driverVer/1000, driverVer%1000/10)
	}
	return 0, fmt.Errorf("cuda: no usable cuBLAS (libcublas.so.13, .12 or .11, as the driver allows): %s", strings.Join(errs, "; "))
}

func (g *gpu) bind() error { return g.drv.check("cuCtxSetCurrent", g.drv.ctxSetCurrent(g.ctx)) }

func (g *gpu) malloc(bytes uint64) (uint64, error) {
	var p uint64
	rc := g.drv.memAlloc(&p, bytes)
	if rc == errOutOfMemory {
		return 0, errNoMemory
	}
	return p, g.drv.check("cuMemAlloc", rc)
}

func (g *gpu) free(p uint64) { g.drv.memFree(p) }

func (g *gpu) memInfo() (free, total uint64) {
	g.drv.memGetInfo(&free, &total)
	return free, total
}

func (g *gpu) htod(dst uint64, src unsafe.Pointer, bytes uint64) error {
	st := &g.stage
	if st.mem == nil || bytes > stageBytes/4 {
		// A pageable copy starts after the work queued on the stream, the
		// staged copies included: the whole buffer is free again after it.
		err := g.drv.check("cuMemcpyHtoD", g.drv.memcpyHtoD(dst, src, bytes))
		if err == nil {
			st.used = 0
		}
		return err
	}
	if st.used+bytes > stageBytes { // every earlier copy must have read its region
		if err := g.drv.check("cuCtxSynchronize", g.drv.ctxSynchronize()); err != nil {
			return err
		}
		st.used = 0
	}
	p := unsafe.Add(st.mem, st.used)
	copy(unsafe.Slice((*byte)(p), bytes), unsafe.Slice((*byte)(src), bytes))
	st.used += (bytes + 255) &^ 255
	return g.drv.check("cuMemcpyHtoDAsync", g.drv.memcpyHtoDAsync(dst, p, bytes, 0))
}

// dtoh returns when the copy is done, and with it all the work queued
// before it, the staged copies included.
func (g *gpu) dtoh(dst unsafe.Pointer, src uint64, bytes uint64) error {
	err := g.drv.check("cuMemcpyDtoH", g.drv.memcpyDtoH(dst, src, bytes))
	if err == nil {
		g.stage.used = 0
	}
	return err
}

func (g *gpu) dtod(dst, src uint64, bytes uint64) error {
	return g.drv.check("cuMemcpyDtoD", g.drv.memcpyDtoD(dst, src, bytes))
}

func (g *gpu) memsetD32(dst uint64, v uint32, n uint64) error {
	return g.drv.check("cuMemsetD32", g.drv.memsetD32(dst, v, n))
}

func (g *gpu) launch(name string, grid [3]uint32, block, shmem uint32, args []uint64) error {
	addrs := make([]unsafe.Pointer, len(args)) // on the Go heap, which does not move
	for i := range args {
		addrs[i] = unsafe.Pointer(&args[i])
	}
	rc := g.drv.launchKernel(g.fns[name], grid[0], grid[1], grid[2], block, 1, 1, shmem, 0, unsafe.Pointer(&addrs[0]), 0)
	return g.drv.check("cuLaunchKernel "+name, rc)
}

func (g *gpu) sgemm(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error {
	// cuBLAS reads α and β through host pointers before it returns.
	rc := g.blas.sgemm(g.handle, transA, transB, int32(m), int32(n), int32(k), &alpha, a, int32(lda), b, int32(ldb), &beta, c, int32(ldc))
	return g.blas.check("cublasSgemm", rc)
}

func (g *gpu) gemmBF16(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, alpha, beta float32) error {
	rc := g.blas.gemmEx(g.handle, transA, transB, int32(m), int32(n), int32(k), &alpha, a, dataBF16, int32(lda), b, dataBF16, int32(ldb),
		&beta, c, dataF32, int32(ldc), compute32F, gemmDefault)
	return g.blas.check("cublasGemmEx", rc)
}

func (g *gpu) sgemmBatched(transA, transB int32, m, n, k int, a uint64, lda int, b uint64, ldb int, c uint64, ldc int, batch int, add bool) error {
	beta := g.beta
	if add {
		beta = g.one
	}
	rc := g.blas.sgemmBatched(g.handle, transA, transB, int32(m), int32(n), int32(k), g.alpha, a, int32(lda), b, int32(ldb), beta, c,
		int32(ldc), int32(batch))
	return g.blas.check("cublasSgemmBatched", rc)
}

func (g *gpu) close() {
	if g.stage.mem != nil {
		g.drv.ctxSynchronize()
		g.drv.memFreeHost(g.stage.mem)
		g.stage.mem = nil
	}
	if g.handle != 0 && g.blas != nil {
		g.blas.destroy(g.handle)
	}
	if g.module != 0 {
		g.drv.moduleUnload(g.module)
	}
	if g.hopper != 0 {
		g.drv.moduleUnload(g.hopper)
	}
	if g.ctx != 0 {
		g.drv.primaryCtxRelease(g.dev)
	}
}

// loadModule has the driver JIT ptx (called what in errors) for this GPU.
// When it refuses (a driver older than the PTX, a GPU it does not support),
// the JIT's own error log, which says which kernel and line, goes into the
// error: without it the driver's code alone (e.g. CUDA_ERROR_INVALID_PTX)
// leaves a user nothing to report.
func (g *gpu) loadModule(ptx, what string) (uintptr, error) {
	image := append([]byte(ptx), 0)
	jitLog := make([]byte, 8192)
	options := [2]int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	// The option values are void*: the buffer's address, and its size
	// passed as a pointer-sized integer. jitLog is heap memory that the
	// garbage collector does not move; KeepAlive holds it until the call
	// has returned.
	values := [2]uintptr{uintptr(unsafe.Pointer(&jitLog[0])), uintptr(len(jitLog))}
	var module uintptr
	rc := g.drv.moduleLoadDataEx(&module, unsafe.Pointer(&image[0]), uint32(len(options)), &options[0], &values[0])
	runtime.KeepAlive(jitLog)
	runtime.KeepAlive(image)
	err := g.drv.check("cuModuleLoadDataEx (JIT of "+what+")", rc)
	if err == nil {
		return module, nil
	}
	if log := strings.Join(strings.Fields(cString(&jitLog[0])), " "); log != "" {
		return 0, fmt.Errorf("%w; JIT error log: %s", err, log)
	}
	return 0, err
}

// loadHopper loads kernels_sm90a (Options.TF32x3) on a GPU of compute
// capability major.minor that allows blocks shm bytes of shared memory:
// its PTX targets sm_90a, which no other GPU can run. It returns, for the
// backend's description, what the driver's JIT made of gemm_3xtf32:
// registers and local memory (spills) a thread.
func (g *gpu) loadHopper(ordinal int32, major, minor int32, shm int) (string, error) {
	if major != 9 || minor != 0 {
		return "", fmt.Errorf("cuda: float32 products on the tensor cores (MEAZO_CUDA_3XTF32) need a Hopper GPU (compute 9.0: H100, H200); GPU %d has compute capability %d.%d", ordinal, major, minor)
	}
	if shm < gemm3xTF32Shm {
		return "", fmt.Errorf("cuda: gemm_3xtf32 needs %d bytes of shared memory a block; GPU %d allows %d", gemm3xTF32Shm, ordinal, shm)
	}
	var err error
	if g.hopper, err = g.loadModule(hopperPTX, "the embedded sm_90a PTX"); err != nil {
		return "", err
	}
	for name := range hopperParams {
		var fn uintptr
		if err := g.drv.check("cuModuleGetFunction "+name, g.drv.moduleGetFunction(&fn, g.hopper, name)); err != nil {
			return "", err
		}
		g.fns[name] = fn
	}
	for _, name := range []string{"gemm_3xtf32_split", "gemm_3xtf32"} { // the two the backend launches with GW_SMEM_BYTES
		if err := g.drv.check("cuFuncSetAttribute "+name, g.drv.funcSetAttribute(g.fns[name], funcAttrMaxDynamicShmem, int32(gemm3xTF32Shm))); err != nil {
			return "", err
		}
	}
	fn := g.fns["gemm_3xtf32"]
	var regs, local int32
	g.drv.funcGetAttribute(&regs, funcAttrNumRegs, fn)
	g.drv.funcGetAttribute(&local, funcAttrLocalBytes, fn)
	return fmt.Sprintf("; gemm_3xtf32 JIT-compiled: %d registers and %d bytes of local memory a thread", regs, local), nil
}

// hasHopperKernels reports whether kernels_sm90a is loaded (hopperDevice).
func (g *gpu) hasHopperKernels() bool { return g.hopper != 0 }

// multiprocessors is the GPU's number of streaming multiprocessors
// (hopperDevice).
func (g *gpu) multiprocessors() int { return int(g.sms) }
