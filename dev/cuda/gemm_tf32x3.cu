// gemm_tf32x3: float32-accurate matrix products on the tensor cores
// ("3xTF32"), an experiment of the CUDA backend kept here as scratch space
// (see README.md): it was measured on an H100 and did not pay, so the
// product (tensor/cuda) multiplies with cuBLAS's SGEMM only.
//
// Self-contained: it compiles alone with the pinned NVRTC,
//
//	go run ./tensor/cuda/internal/ptxgen -in dev/cuda/gemm_tf32x3.cu -out /tmp/gemm_tf32x3.ptx
//
// and gemm_tf32x3.py (beside it) times the PTX against cuBLAS on a GPU.

// Primitives of gemm_tf32x3, in inline PTX.
// tf32_rna rounds x to TF32 (10 mantissa bits; nearest, ties away from
// zero): a float32 bit pattern with its low 13 bits zero.
__device__ __forceinline__ unsigned tf32_rna(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
// mma_tf32 is one warp's d += a·b on a 16×8 tile with k = 8 (PTX
// mma.m16n8k8: TF32 in, float32 accumulation); a, b and d are the calling
// lane's fragments.
__device__ __forceinline__ void mma_tf32(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// cp_async16 starts a copy of 16 bytes from global to shared memory (zeros
// when !full, without reading src); cp_async_commit closes a group of them,
// cp_async_wait(n) waits until at most n groups are in flight.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool full) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
#define cp_async_wait(n) asm volatile("cp.async.wait_group %0;" ::"n"(n))

// split3 writes x as big + small, both TF32: big is x rounded to TF32,
// small the rest rounded, so big + small is x to within 2^-22 of it (22 of
// its 24 significant bits).
__device__ __forceinline__ void split3(float x, unsigned& big, unsigned& small) {
    big = tf32_rna(x);
    small = tf32_rna(__fsub_rn(x, __uint_as_float(big)));
}

// gemm_tf32x3's tiles: a block of 8 warps computes BM = 32·MT rows × 128
// columns of y, 16 of k at a time, through two stages of shared memory;
// each warp takes 16·MT rows × 32 columns, MT × 4 tensor-core tiles of
// 16 × 8. A shared row holds 16 values and 4 of padding, so that the 32
// lanes' fragment loads fall in 32 different banks.
#define GT_BN 128
#define GT_BK 16
#define GT_LD (GT_BK + 4)

// gt_load starts the copies of one k-step's tiles, x's rows [row0, row0+BM)
// and w's [col0, col0+128) at columns [k0, k0+16), zeros past the last row:
// 16 bytes at a time, 4 per row, from the block's 256 threads.
template <int BM>
__device__ __forceinline__ void gt_load(float* xs, float* ws, const float* x, const float* w, int rows, int n, int k,
                                        int row0, int col0, int k0) {
    for (int p = threadIdx.x; p < BM * 4; p += 256) {
        int r = p >> 2, c = (p & 3) * 4;
        bool in = row0 + r < rows;
        cp_async16(xs + r * GT_LD + c, x + (in ? (long long)(row0 + r) * k + k0 + c : 0), in);
    }
    for (int p = threadIdx.x; p < GT_BN * 4; p += 256) {
        int r = p >> 2, c = (p & 3) * 4;
        bool in = col0 + r < n;
        cp_async16(ws + r * GT_LD + c, w + (in ? (long long)(col0 + r) * k + k0 + c : 0), in);
    }
}

// gemm_tf32x3_tile is gemm_tf32x3 (below) with blocks of 32·MT rows.
template <int MT>
__device__ __forceinline__ void gemm_tf32x3_tile(float* y, const float* x, const float* w, int rows, int n, int k,
                                                 float* xs0, float* xs1, float* ws0, float* ws1) {
    const int BM = 32 * MT;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3; // the lane's row and column in a fragment
    const int row0 = blockIdx.x * BM, col0 = blockIdx.y * GT_BN;
    const int wm = (warp >> 2) * 16 * MT, wn = (warp & 3) * 32; // this warp's 16·MT × 32 of the tile
    float acc[MT][4][4];
    for (int i = 0; i < MT; i++)
        for (int j = 0; j < 4; j++)
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
    const int steps = k / GT_BK;
    gt_load<BM>(xs0, ws0, x, w, rows, n, k, row0, col0, 0);
    cp_async_commit();
    for (int s = 0; s < steps; s++) {
        // Start the next step's copies into the other stage, then wait for this one's.
        if (s + 1 < steps) gt_load<BM>(s & 1 ? xs0 : xs1, s & 1 ? ws0 : ws1, x, w, rows, n, k, row0, col0, (s + 1) * GT_BK);
        cp_async_commit();
        cp_async_wait(1);
        __syncthreads();
        const float* xa = s & 1 ? xs1 : xs0;
        const float* wb = s & 1 ? ws1 : ws0;
        for (int kk = 0; kk < GT_BK; kk += 8) {
            unsigned bb[4][2], bs[4][2]; // w's fragments: k = t and t+4 of column g
            for (int j = 0; j < 4; j++) {
                const float* p = wb + (wn + j * 8 + g) * GT_LD + kk + t;
                split3(p[0], bb[j][0], bs[j][0]);
                split3(p[4], bb[j][1], bs[j][1]);
            }
            for (int i = 0; i < MT; i++) {
                unsigned ab[4], as[4]; // x's fragment: rows g and g+8, k = t and t+4
                const float* p = xa + (wm + i * 16 + g) * GT_LD + kk + t;
                split3(p[0], ab[0], as[0]);
                split3(p[8 * GT_LD], ab[1], as[1]);
                split3(p[4], ab[2], as[2]);
                split3(p[8 * GT_LD + 4], ab[3], as[3]);
                // The small terms first, then the big one; the 4 tiles' steps in turn, so
                // that consecutive steps do not wait for each other.
                for (int j = 0; j < 4; j++) mma_tf32(acc[i][j], as, bb[j]);
                for (int j = 0; j < 4; j++) mma_tf32(acc[i][j], ab, bs[j]);
                for (int j = 0; j < 4; j++) mma_tf32(acc[i][j], ab, bb[j]);
            }
        }
        __syncthreads(); // the stage is read: the next step may overwrite it
    }
    for (int i = 0; i < MT; i++)
        for (int j = 0; j < 4; j++) {
            int r = row0 + wm + i * 16 + g, c = col0 + wn + j * 8 + 2 * t;
            if (c >= n) continue;
            if (r < rows) y[(long long)r * n + c] = acc[i][j][0], y[(long long)r * n + c + 1] = acc[i][j][1];
            if (r + 8 < rows) y[(long long)(r + 8) * n + c] = acc[i][j][2], y[(long long)(r + 8) * n + c + 1] = acc[i][j][3];
        }
}

extern "C" {

// gemm_tf32x3: y [rows][n] = x [rows][k] · Wᵀ for a row-major W [n][k], on
// the tensor cores, near float32 ("3xTF32"): each input is split into big
// + small TF32 parts (split3) and each product taken as small·big +
// big·small + big·big, accumulated in float32 (the small·small term, below
// 2^-22 of the product, is left out). The tensor cores' accumulation does
// not round to nearest, so the error grows with k: on an H100, an rms of
// 7e-6 (k = 1024) to 6e-5 (k = 8192) of the outputs', where cuBLAS's
// SGEMM gave 3e-7 to 2e-6 (docs/PERFORMANCE.md). Blocks of 256 threads,
// grid (⌈rows/128⌉, ⌈n/128⌉); k a multiple of 16, n of 2, x and w 16-byte
// aligned (the caller checks). Every output is one thread's fixed sequence
// of tensor-core steps, so a run is bit-identical to itself; the bits are
// not cuBLAS's. gemm_tf32x3_64 is the same with blocks of 64 rows, for
// products too small to fill the GPU with blocks of 128.
__global__ void __launch_bounds__(256, 2) gemm_tf32x3(float* y, const float* x, const float* w, int rows, int n, int k) {
    __shared__ __align__(16) float xs[2][128 * GT_LD];
    __shared__ __align__(16) float ws[2][GT_BN * GT_LD];
    gemm_tf32x3_tile<4>(y, x, w, rows, n, k, xs[0], xs[1], ws[0], ws[1]);
}

__global__ void __launch_bounds__(256, 2) gemm_tf32x3_64(float* y, const float* x, const float* w, int rows, int n, int k) {
    __shared__ __align__(16) float xs[2][64 * GT_LD];
    __shared__ __align__(16) float ws[2][GT_BN * GT_LD];
    gemm_tf32x3_tile<2>(y, x, w, rows, n, k, xs[0], xs[1], ws[0], ws[1]);
}
} // extern "C"
