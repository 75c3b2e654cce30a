// LayerNorm with a weight and a bias (OPT's, ViT's): a block per row.

#include "common.cuh"

// LN_TILE is how many floats of a row layer_norm holds in shared memory at
// once (a multiple of 16, so that a tile's element j is in partial sum
// j mod 16 as the row's is).
#define LN_TILE 2048

extern "C" {

// layer_norm: one block of 16·k threads per row, as the CPU backend
// computes it. The mean: Σx in float64, element j added into partial sum
// j mod 16 in order, the 16 partials added in order, divided by n and
// rounded to float32. The variance: the same sums of d² for d = x − mean
// (rounded to float32; d² is exact in float64), rounded to float32. The
// scale rstd = 1/sqrt(var+eps) in float64, rounded to float32; then
// dst[j] = ((d·rstd)·w[j]) + b[j], each operation rounded. dst may be x:
// each element is read by the thread that writes it, after the sums.
//
// The 16 threads that sum read the row from shared memory, where the whole
// block has copied it, LN_TILE floats at a time, coalesced: reading global
// memory themselves, load after load, 16 threads of a block waited on
// memory's latency for every 64 bytes (a row of 768 floats, ViT-B/16's,
// was 48 such waits a pass). A row of at most LN_TILE floats is read from
// global memory once, for all three passes. The same sums in the same
// order: the same bits.
__global__ void layer_norm(float* dst, const float* x, const float* w, const float* b, int n, float eps) {
    __shared__ float tile[LN_TILE];
    __shared__ double part[16];
    __shared__ float mean, rstd;
    const float* xr = x + (long long)blockIdx.x * n;
    float* dr = dst + (long long)blockIdx.x * n;
    const bool whole = n <= LN_TILE; // the tile holds the row from the first pass on
    double s = 0;                    // thread p < 16's partial sum, over the tiles in order
    for (int t0 = 0; t0 < n; t0 += LN_TILE) {
        int len = n - t0 < LN_TILE ? n - t0 : LN_TILE;
        __syncthreads(); // the last tile's sums are done
        for (int j = threadIdx.x; j < len; j += blockDim.x) tile[j] = xr[t0 + j];
        __syncthreads();
        if (threadIdx.x < 16)
            for (int j = threadIdx.x; j < len; j += 16) s = __dadd_rn(s, (double)tile[j]);
    }
    if (threadIdx.x < 16) part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int p = 0; p < 16; p++) t = __dadd_rn(t, part[p]);
        mean = __double2float_rn(__ddiv_rn(t, (double)n));
    }
    __syncthreads();
    s = 0;
    for (int t0 = 0; t0 < n; t0 += LN_TILE) {
        int len = n - t0 < LN_TILE ? n - t0 : LN_TILE;
        if (!whole) {
            __syncthreads();
            for (int j = threadIdx.x; j < len; j += blockDim.x) tile[j] = xr[t0 + j];
            __syncthreads();
        }
        if (threadIdx.x < 16)
            for (int j = threadIdx.x; j < len; j += 16) {
                double d = (double)__fsub_rn(tile[j], mean);
                s = fma(d, d, s); // d·d is exact in float64
            }
    }
    if (threadIdx.x < 16) part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) rstd = inv_std_of_parts(part, n, eps);
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float v = whole ? tile[j] : xr[j];
        dr[j] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(v, mean), rstd), w[j]), b[j]);
    }
}

} // extern "C"
