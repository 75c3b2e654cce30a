// emu runs the CUDA backend's kernels (../kernels/*.cu) on the CPU, for tests
// on machines without a GPU. It is not a GPU model: it executes each block's
// threads as cooperative fibers on one OS thread, one block after another,
// switching at __syncthreads, with __shared__ variables as statics (shared
// by the block, as on a GPU, since blocks do not overlap). The explicitly
// rounded intrinsics map to IEEE float operations (built with
// -ffp-contract=off), fmaf to a fused multiply-add, __umulhi to the high
// half of the 64-bit product (Philox, kernels/noise.cuh). What it checks is the
// kernels' logic: indexing, layouts, masks, reductions and their order, and
// the backend's use of them, which then holds on a GPU up to what a GPU
// computes differently (only libm's exp/log in cross_entropy here: no other
// kernel may call a libm function, TestKernelsCallNoLibmMath, since glibc's
// are not CUDA's; gelu's erf is the CPU's, kernels/erf.cuh).
//
// Protocol (stdin/stdout, little-endian, every reply starts with a u32
// status, 0 = ok): 'A' u64 bytes → u64 ptr | 'F' u64 ptr | 'W' u64 dst u64 n
// bytes… | 'R' u64 src u64 n → bytes… | 'C' u64 dst u64 src u64 n | 'S' u64
// dst u32 v u64 n | 'L' u32 len name… u32 grid[3] u32 block u32 shmem u32
// nargs u64 args… (status 3: a thread ended with wgmma not waited for) |
// 'G' i32 ta tb m n k u64 a i32 lda u64 b i32 ldb u64 c i32 ldc f32 α f32 β
// (cuBLAS sgemm, column-major) | 'H' the same with a and b in bfloat16
// (cublasGemmEx, float32 sums) | 'B' the same as 'G' up to ldc, a, b and c
// arrays of pointers, then i32 batch and f32 β
// (cublasSgemmBatched, α = 1).
//
// Built with -fsanitize=address (checkers_test.go), it is a memory checker:
// AddressSanitizer reports a kernel's access outside a device allocation
// (calloc), a __shared__ array (a global here) or the launch's dynamic
// shared memory, as compute-sanitizer's memcheck does on a GPU (not an
// access inside an allocation but outside the view a kernel was given).
//
// Built with -fsanitize=thread (checkers_test.go), it is a race checker,
// compute-sanitizer's racecheck without a GPU: each thread of a block is a
// ThreadSanitizer fiber, switched to without synchronisation; a
// __syncthreads is a release by every thread of an object of that barrier
// alone and an acquire of it once all have arrived; a block's threads
// acquire at their start what the blocks before released at their end (so
// blocks, which run one after another here, are ordered, and a block's
// __shared__ statics and stacks may be reused by the next); the host's side
// (main, the scheduler, the GEMMs) is ignored. Two threads of a block that
// touch one address, shared or global, between two barriers, one writing,
// are then a data race that TSan reports. It also reports, as
// compute-sanitizer's synccheck, the threads of a block waiting at different
// __syncthreads (checkBarrier).
//
// The test that builds it (../emu_test.go) writes three files beside it:
// kernels_unit.inc, the translation unit of ../kernels that NVRTC compiles
// to the PTX (package kernelsrc), hopper_unit.inc, the same of
// ../kernels_sm90a, and kernel_table.inc, a KERNEL(name) line for each
// kernel the backend declares (kernelParams, hopperParams), so that a new
// kernel needs no change here.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <csetjmp>
#include <ucontext.h>
#include <vector>

struct dim3 { unsigned x = 0, y = 0, z = 0; };
static dim3 blockIdx, blockDim, gridDim;
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define EMU_RACECHECK 1
extern "C" void __tsan_ignore_thread_begin(); // the runtime's, not in its header
#endif
struct Fiber {
    ucontext_t ctx;
    jmp_buf jb;
    dim3 idx;
    bool done, started;
    void* tsan;       // its ThreadSanitizer fiber (EMU_RACECHECK)
    const char* file; // where the __syncthreads it waits at is (EMU_RACECHECK)
    int line;
};
static Fiber* cur; // the running thread of the block
#define threadIdx (cur->idx)
static void* emu_dynamic_shared;
#define DYNAMIC_SHARED(type, name) type* name = (type*)emu_dynamic_shared
#define __global__
#define __device__ static
#define __forceinline__ inline
#define __shared__ static
static ucontext_t sched;
static jmp_buf schedJB;
#ifdef EMU_RACECHECK
// The race checker's synchronisation objects (see the top): addresses that
// only ThreadSanitizer reads. emu_round_sync is the barrier that ends the
// scheduler's current round (a fresh one each round, reused after 2^16);
// the blocks before block number emu_blocks end with a release of
// emu_block_sync[emu_blocks % 2 ^ 1], which its threads acquire, and it ends
// with one of the other (not of the one its own threads acquire: they
// would be ordered after each other's ends).
static void* emu_sched_fiber;
static unsigned emu_blocks;
static char emu_block_sync[2], emu_sync_arena[1 << 16];
static void* emu_round_sync = emu_sync_arena;
static unsigned emu_rounds;
#endif
// yield returns to the scheduler; setjmp/longjmp switch without the signal
// mask system calls of swapcontext (makecontext only sets up each stack).
// In the race checker's build each switch first tells ThreadSanitizer
// which fiber runs next.
static void yield() {
    if (!_setjmp(cur->jb)) {
#ifdef EMU_RACECHECK
        __tsan_switch_to_fiber(emu_sched_fiber, __tsan_switch_to_fiber_no_sync);
#endif
        _longjmp(schedJB, 1);
    }
}
#ifdef EMU_RACECHECK
// A __syncthreads of the race checker's build also notes where it is
// called from (checkBarrier).
static void emu_syncthreads(const char* file, int line) {
    cur->file = file, cur->line = line;
    void* barrier = emu_round_sync;
    __tsan_release(barrier);
    yield();
    __tsan_acquire(barrier);
}
#define __syncthreads() emu_syncthreads(__FILE__, __LINE__)
#else
static void __syncthreads() { yield(); }
#endif
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline float __double2float_rn(double a) { return (float)a; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline float __int2float_rn(int i) { return (float)i; }
static inline float __uint2float_rn(unsigned i) { return (float)i; }
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
struct float4 { float x, y, z, w; }; // CUDA's 16-byte vector type (aligned loads and stores)
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct uint2 { unsigned x, y; };              // 8 and 16 bytes of words
struct uint4 { unsigned x, y, z, w; };
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

#include "kernels_unit.inc"

// What kernels_sm90a (Hopper's wgmma: gemm_3xtf32) needs beyond that. Its
// shared-memory addresses are offsets into the block's dynamic shared
// memory; its tensor-core step is Hopper's TF32 arithmetic as Microsoft's
// MMA-Sim models it (measured on the hardware; the model reproduces what
// an H100 gave dev/cuda/gemm_tf32x3.cu to two digits, dev/cuda/tcsim.go):
// the inputs truncated to TF32, the accumulator and the 8 exact products
// aligned to the largest exponent with 25 fractional bits, each truncated,
// summed exactly, the sum truncated to float32. Subnormal inputs are not
// modelled.
#define __launch_bounds__(...)
template <typename T> static T __ldg(const T* p) { return *p; }
struct float2 { float x, y; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static unsigned emu_shared_address(const void* p) { return (unsigned)((const char*)p - (const char*)emu_dynamic_shared); }
static unsigned emu_tf32_rna(float v) {
    unsigned b = __float_as_uint(v);
    if ((b & 0x7f800000u) == 0x7f800000u) return b; // Inf and NaN as they are
    return (b + 0x1000u) & ~0x1fffu;
}
static void emu_st_shared4(unsigned a, unsigned x, unsigned y, unsigned z, unsigned w) {
    unsigned v[4] = {x, y, z, w};
    std::memcpy((char*)emu_dynamic_shared + a, v, 16);
}
// emu_tc_step is one k8 step of the tensor cores: c + a·b, in integers:
// each term is m·2^e with m < 2^48, kept to the bits at or above 2^(top−25)
// where top is the largest term's leading bit (truncated toward zero), the
// sum truncated to 24 bits. Normal float32 results only (not subnormal, not
// overflowing), as the models' products are.
static float emu_tc_step(float c, const float* a, const float* b) {
    auto parts = [](float v, long long& m, int& e) {
        unsigned bits = __float_as_uint(v), ex = (bits >> 23) & 0xff, frac = bits & 0x7fffff;
        m = ex ? (long long)(frac | 0x800000) : (long long)frac;
        e = ex ? (int)ex - 150 : -149;
        if (bits >> 31) m = -m;
    };
    long long m[9];
    int e[9], top = 0, n = 0;
    bool any = false;
    auto add = [&](long long mi, int ei) {
        if (mi == 0) return;
        int lead = 63 - __builtin_clzll((unsigned long long)(mi < 0 ? -mi : mi)) + ei;
        if (!any || lead > top) top = lead, any = true;
        m[n] = mi, e[n++] = ei;
    };
    long long mc;
    int ec;
    parts(c, mc, ec);
    add(mc, ec);
    for (int i = 0; i < 8; i++) {
        long long ma, mb;
        int ea, eb;
        parts(__uint_as_float(__float_as_uint(a[i]) & ~0x1fffu), ma, ea); // the inputs truncated to TF32
        parts(__uint_as_float(__float_as_uint(b[i]) & ~0x1fffu), mb, eb);
        add(ma * mb, ea + eb);
    }
    if (!any) return 0;
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        int shift = (top - 25) - e[i];
        long long mag = m[i] < 0 ? -m[i] : m[i];
        long long t = shift <= 0 ? mag << -shift : shift >= 63 ? 0 : mag >> shift;
        sum += m[i] < 0 ? -t : t;
    }
    if (sum == 0) return 0;
    unsigned long long u = sum < 0 ? -sum : sum;
    int lead = 63 - __builtin_clzll(u), exp = lead + top - 25;
    u = lead > 23 ? u >> (lead - 23) : u << (23 - lead);
    unsigned bits = ((unsigned)(exp + 127) << 23) | (unsigned)(u & 0x7fffff);
    return __uint_as_float(sum < 0 ? bits | 0x80000000u : bits);
}
// emu_wgmma_run performs wgmma.mma_async.m64n128k8.f32.tf32.tf32 for the
// calling thread's 64 accumulators: its rows and columns by the PTX ISA's
// fragment layout, the operands read through the descriptors as the K-major
// canonical layout without swizzling places them (core matrices of 8 rows ×
// 16 bytes; SBO between rows' groups, LBO between k's quads).
static void emu_wgmma_run(float* d, unsigned long long da, unsigned long long db, int accumulate) {
    auto field = [](unsigned long long desc, int shift) { return (unsigned)((desc >> shift) & 0x3FFF) << 4; };
    auto elem = [&](unsigned long long desc, int r, int kk) {
        unsigned a = field(desc, 0) + (r / 8) * field(desc, 32) + (kk / 4) * field(desc, 16) + (r % 8) * 16 + (kk % 4) * 4;
        float v;
        std::memcpy(&v, (const char*)emu_dynamic_shared + a, 4);
        return v;
    };
    const int t = threadIdx.x & 127, warp = t >> 5, lane = t & 31, g = lane >> 2, c = lane & 3;
    for (int j = 0; j < 16; j++)
        for (int e = 0; e < 4; e++) {
            int row = warp * 16 + g + 8 * (e >> 1), col = 8 * j + 2 * c + (e & 1);
            float a[8], b[8];
            for (int kk = 0; kk < 8; kk++) a[kk] = elem(da, row, kk), b[kk] = elem(db, col, kk);
            d[4 * j + e] = emu_tc_step(accumulate ? d[4 * j + e] : 0.0f, a, b);
        }
}
// wgmma is asynchronous: issued, committed in groups (wgmma.commit_group),
// and complete only at a wait (wgmma.wait_group); until then the GPU may
// read its operands' shared memory and its accumulator at any time, and
// write the accumulator. The emulator queues each thread's wgmma at issue
// and performs them at the wait, on the shared memory and accumulator of
// that moment: a kernel that reads the accumulator before the wait (its
// promotion moved above it) gets other bits here, which performing them at
// issue hid; one that overwrites a stage the wgmma in flight read gets
// other bits either way. A kernel may wait after a __syncthreads, so the
// queues are each thread's own. A wait does not cover uncommitted wgmma
// (as on the GPU); run() refuses a launch that ends with any not waited for.
struct EmuWgmma {
    float* d;
    unsigned long long da, db;
    int accumulate;
};
struct EmuWgmmaQueue {
    std::vector<EmuWgmma> issued;                 // since the last commit
    std::vector<std::vector<EmuWgmma>> committed; // groups, oldest first
};
static std::vector<EmuWgmmaQueue> emu_wgmma_queues; // one a thread of the block (run sizes it)
static void emu_wgmma_m64n128k8_tf32(float* d, unsigned long long da, unsigned long long db, int accumulate) {
    emu_wgmma_queues[threadIdx.x].issued.push_back({d, da, db, accumulate});
}
static void emu_wgmma_commit() {
    EmuWgmmaQueue& q = emu_wgmma_queues[threadIdx.x];
    q.committed.push_back(std::move(q.issued));
    q.issued.clear();
}
// emu_wgmma_wait is wgmma.wait_group 0: every committed group, in order.
static void emu_wgmma_wait() {
    EmuWgmmaQueue& q = emu_wgmma_queues[threadIdx.x];
    for (auto& group : q.committed)
        for (auto& op : group) emu_wgmma_run(op.d, op.da, op.db, op.accumulate);
    q.committed.clear();
}
#include "hopper_unit.inc"

// slot reads a kernel argument of type T from its 8-byte slot (a 4-byte
// value in the low half, as the backend packs it).
template <typename T> static T slot(uint64_t v) {
    if constexpr (std::is_pointer_v<T>) {
        return reinterpret_cast<T>(v);
    } else {
        T x;
        std::memcpy(&x, &v, sizeof x);
        return x;
    }
}
// call runs kernel f with its arguments read from slots s.
template <typename... Args, size_t... I>
static void callSlots(void (*f)(Args...), const uint64_t* s, std::index_sequence<I...>) {
    f(slot<Args>(s[I])...);
}
template <typename... Args> static void call(void (*f)(Args...), const uint64_t* s) {
    callSlots(f, s, std::index_sequence_for<Args...>{});
}

// The kernels by name, callable from a slot array.
#define KERNEL(name) {#name, [](const uint64_t* s) { call(name, s); }},
static std::map<std::string, std::function<void(const uint64_t*)>> kernels = {
#include "kernel_table.inc"
};
#undef KERNEL

static std::function<void()> body;
// fiberMain runs the kernel body once per block, for ever.
static void fiberMain() {
    for (;;) {
#ifdef EMU_RACECHECK
        unsigned block = emu_blocks;
        __tsan_acquire(&emu_block_sync[(block & 1) ^ 1]);
#endif
        body();
#ifdef EMU_RACECHECK
        __tsan_release(&emu_block_sync[block & 1]);
#endif
        cur->done = true;
        yield();
    }
}

// enter switches from the scheduler to thread f, to its first statement or
// back from its last yield.
static void enter(Fiber& f) {
    cur = &f;
    if (!_setjmp(schedJB)) {
#ifdef EMU_RACECHECK
        if (!f.tsan) f.tsan = __tsan_create_fiber(0);
        __tsan_switch_to_fiber(f.tsan, __tsan_switch_to_fiber_no_sync);
#endif
        if (!f.started) {
            f.started = true;
            swapcontext(&sched, &f.ctx); // first entry: onto its own stack
        } else {
            _longjmp(f.jb, 1);
        }
    }
}

#ifdef EMU_RACECHECK
// checkBarrier reports, as compute-sanitizer's synccheck would, a round in
// which the threads of the block still running wait at different
// __syncthreads (a barrier in divergent code: on a GPU they would not meet
// there as the code means), and says whether it did. Threads that ended
// are not waited for.
static bool checkBarrier(const std::string& name, const std::vector<Fiber>& fibers, unsigned block) {
    const Fiber* first = nullptr;
    for (unsigned t = 0; t < block; t++) {
        const Fiber& f = fibers[t];
        if (f.done) continue;
        if (!first) {
            first = &f;
        } else if (f.line != first->line || std::strcmp(f.file, first->file) != 0) {
            std::fprintf(stderr, "WARNING: emu synccheck: %s, block (%u, %u, %u): thread %u waits at the __syncthreads of %s:%d, thread %u at %s:%d\n",
                         name.c_str(), blockIdx.x, blockIdx.y, blockIdx.z, first->idx.x, first->file, first->line, f.idx.x, f.file, f.line);
            return true;
        }
    }
    return false;
}
#endif

// run executes one launch: every block, its threads as fibers, round-robin
// from one __syncthreads to the next. It returns false if a thread ended
// with wgmma it had not waited for (their results never written: a kernel
// bug that a GPU would not report).
static bool run(const std::string& name, const std::function<void()>& kernel, dim3 grid, unsigned block, unsigned shmem) {
    const size_t stack = 64 << 10;
    static std::vector<Fiber> fibers;
    static std::vector<std::vector<char>> stacks;
    if (fibers.size() < block) {
        fibers.resize(block); // moving a Fiber is safe: its stack stays where it is, and cur is set before each switch
        stacks.resize(block, std::vector<char>(stack));
    }
    emu_wgmma_queues.assign(block, EmuWgmmaQueue{});
#ifdef __SANITIZE_ADDRESS__
    std::vector<char> dyn(shmem ? shmem : 1); // the memory checker's: a read past the launch's size is one past the vector
#else
    std::vector<char> dyn(shmem + 16);
#endif
    emu_dynamic_shared = dyn.data();
    gridDim = grid;
    blockDim = dim3{block, 1, 1};
    body = kernel;
    bool divergent = false; // reported once a launch
    (void)divergent;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = dim3{x, y, z};
#ifdef EMU_RACECHECK
                emu_blocks++;
#endif
                for (unsigned t = 0; t < block; t++) {
                    Fiber& f = fibers[t];
                    if (!f.started) {
                        getcontext(&f.ctx);
                        f.ctx.uc_stack.ss_sp = stacks[t].data();
                        f.ctx.uc_stack.ss_size = stack;
                        f.ctx.uc_link = nullptr;
                        makecontext(&f.ctx, fiberMain, 0);
                    }
                    f.idx = dim3{t, 0, 0};
                    f.done = false;
                }
                for (bool left = true; left;) { // one round: every thread to its next barrier or its end
                    left = false;
#ifdef EMU_RACECHECK
                    emu_round_sync = emu_sync_arena + (emu_rounds++ % sizeof emu_sync_arena);
#endif
                    for (unsigned t = 0; t < block; t++) {
                        if (fibers[t].done) continue;
                        enter(fibers[t]);
                        left = left || !fibers[t].done;
                    }
#ifdef EMU_RACECHECK
                    divergent = divergent || (left && checkBarrier(name, fibers, block));
#endif
                }
                for (const auto& q : emu_wgmma_queues)
                    if (!q.issued.empty() || !q.committed.empty()) {
                        std::fprintf(stderr, "emu: block (%u, %u, %u) ended with wgmma not waited for\n", x, y, z);
                        return false;
                    }
            }
    return true;
}

// sgemm: C = α·op(A)·op(B) + β·C, each product summed in order with fused
// multiply-adds, then scaled by α and added to β·C, each rounded (β = 0:
// C is only written, as in cuBLAS).
static void sgemm(int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
                  float alpha = 1, float beta = 0) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int l = 0; l < k; l++) {
                float x = ta ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
                float y = tb ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];
                acc = std::fmaf(x, y, acc);
            }
            if (alpha != 1) acc = alpha * acc;
            if (beta != 0) acc = acc + beta * c[i + (size_t)j * ldc];
            c[i + (size_t)j * ldc] = acc;
        }
}

// gemmBF16: sgemm of bfloat16 a and b, widened exactly (the GPU's tensor
// cores multiply them exactly too, then sum in float32 in an order of
// their own).
static void gemmBF16(int ta, int tb, int m, int n, int k, const uint16_t* a, int lda, const uint16_t* b, int ldb, float* c,
                     int ldc, float alpha, float beta) {
    auto widen = [](const uint16_t* p, size_t count) {
        std::vector<float> v(count);
        for (size_t i = 0; i < count; i++) {
            uint32_t u = (uint32_t)p[i] << 16;
            std::memcpy(&v[i], &u, 4);
        }
        return v;
    };
    // The extent of a column-major operand as stored: its last column ends
    // at (columns − 1)·ld + rows.
    auto extent = [](int rows, int cols, int ld) { return cols == 0 ? 0 : (size_t)(cols - 1) * ld + rows; };
    std::vector<float> a32 = widen(a, ta ? extent(k, m, lda) : extent(m, k, lda));
    std::vector<float> b32 = widen(b, tb ? extent(n, k, ldb) : extent(k, n, ldb));
    sgemm(ta, tb, m, n, k, a32.data(), lda, b32.data(), ldb, c, ldc, alpha, beta);
}

template <typename T> static T rd() {
    T v;
    if (std::fread(&v, sizeof v, 1, stdin) != 1) std::exit(0);
    return v;
}
static void ok(uint32_t status = 0) { std::fwrite(&status, 4, 1, stdout); }

int main() {
#ifdef EMU_RACECHECK
    emu_sched_fiber = __tsan_get_current_fiber();
    __tsan_ignore_thread_begin(); // the host's side: only the kernels' threads are checked
    // At the end of the input, out without the static objects' destructors:
    // the host's side is not checked, and their frees would be (the
    // ignoring is over by then).
    std::atexit([] {
        std::fflush(stdout);
        std::_Exit(0);
    });
#endif
    for (;;) {
        int cmd = std::fgetc(stdin);
        if (cmd == EOF) return 0;
        switch (cmd) {
        case 'A': {
            uint64_t n = rd<uint64_t>();
            void* p = std::calloc(n, 1);
            ok(p ? 0 : 2);
            uint64_t v = (uint64_t)p;
            std::fwrite(&v, 8, 1, stdout);
            break;
        }
        case 'F': std::free((void*)rd<uint64_t>()); ok(); break;
        case 'W': {
            uint64_t dst = rd<uint64_t>(), n = rd<uint64_t>();
            if (n && std::fread((void*)dst, 1, n, stdin) != n) return 1;
            ok();
            break;
        }
        case 'R': {
            uint64_t src = rd<uint64_t>(), n = rd<uint64_t>();
            ok();
            std::fwrite((void*)src, 1, n, stdout);
            break;
        }
        case 'C': {
            uint64_t dst = rd<uint64_t>(), src = rd<uint64_t>(), n = rd<uint64_t>();
            std::memmove((void*)dst, (void*)src, n);
            ok();
            break;
        }
        case 'S': {
            uint64_t dst = rd<uint64_t>();
            uint32_t v = rd<uint32_t>();
            uint64_t n = rd<uint64_t>();
            for (uint64_t i = 0; i < n; i++) std::memcpy((char*)dst + 4 * i, &v, 4);
            ok();
            break;
        }
        case 'L': {
            uint32_t len = rd<uint32_t>();
            std::string name(len, '\0');
            if (std::fread(name.data(), 1, len, stdin) != len) return 1;
            dim3 grid{rd<uint32_t>(), rd<uint32_t>(), rd<uint32_t>()};
            uint32_t block = rd<uint32_t>(), shmem = rd<uint32_t>(), nargs = rd<uint32_t>();
            std::vector<uint64_t> args(nargs);
            for (auto& a : args) a = rd<uint64_t>();
            auto it = kernels.find(name);
            if (it == kernels.end()) { ok(1); break; }
            const uint64_t* s = args.data();
            ok(run(name, [&] { it->second(s); }, grid, block, shmem) ? 0 : 3);
            break;
        }
        case 'G':   // sgemm
        case 'H':   // gemmBF16
        case 'B': { // sgemmBatched: a, b and c are arrays of batch pointers
            int ta = rd<int32_t>(), tb = rd<int32_t>(), m = rd<int32_t>(), n = rd<int32_t>(), k = rd<int32_t>();
            uint64_t a = rd<uint64_t>();
            int lda = rd<int32_t>();
            uint64_t b = rd<uint64_t>();
            int ldb = rd<int32_t>();
            uint64_t c = rd<uint64_t>();
            int ldc = rd<int32_t>();
            if (cmd == 'G') {
                float alpha = rd<float>(), beta = rd<float>();
                sgemm(ta, tb, m, n, k, (const float*)a, lda, (const float*)b, ldb, (float*)c, ldc, alpha, beta);
            } else if (cmd == 'H') {
                float alpha = rd<float>(), beta = rd<float>();
                gemmBF16(ta, tb, m, n, k, (const uint16_t*)a, lda, (const uint16_t*)b, ldb, (float*)c, ldc, alpha, beta);
            } else {
                int batch = rd<int32_t>();
                float beta = rd<float>();
                const uint64_t *as = (const uint64_t*)a, *bs = (const uint64_t*)b, *cs = (const uint64_t*)c;
                for (int i = 0; i < batch; i++)
                    sgemm(ta, tb, m, n, k, (const float*)as[i], lda, (const float*)bs[i], ldb, (float*)cs[i], ldc, 1, beta);
            }
            ok();
            break;
        }
        default: return 1;
        }
        std::fflush(stdout);
    }
}
