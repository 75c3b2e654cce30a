// softmax_row, the softmax of one row of attention scores, shared by the
// fused attention kernel (attention.cu) and the batched-GEMM attention's
// middle step (attention_softmax.cu).

#ifndef MEAZO_KERNELS_SOFTMAX_ROW_CUH
#define MEAZO_KERNELS_SOFTMAX_ROW_CUH

#include "common.cuh"

// softmax_row turns a block's row of n scores p[0..n) (−Inf where masked;
// mx: the largest this thread wrote, NaN if it wrote one: max_nan) into
// probabilities in place, as the CPU backend does: the max over the block,
// p = Exp(score − max), the normaliser in float64 in 16 partial sums over
// j ≡ r (mod 16) in slot order, then p ·= float32(1/sum); a NaN score makes
// every p NaN. It returns false, and leaves p as it was, when every score is
// −Inf (a query that sees no key). Every thread of the block (at most 256)
// must call it.
__device__ bool softmax_row(float* p, int n, float mx) {
    __shared__ float red[256];
    __shared__ double part[16];
    __shared__ float inv;
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) { // max is exact in any order
        if (threadIdx.x < w) red[threadIdx.x] = max_nan(red[threadIdx.x], red[threadIdx.x + w]);
        __syncthreads();
    }
    mx = red[0];
    if (mx == NEG_INF) return false;
    for (int j = threadIdx.x; j < n; j += blockDim.x) p[j] = cephes_expf(__fsub_rn(p[j], mx));
    __syncthreads();
    if (threadIdx.x < 16) {
        double sum = 0;
        for (int j = threadIdx.x; j < n; j += 16) sum = __dadd_rn(sum, (double)p[j]);
        part[threadIdx.x] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0;
        for (int i = 0; i < 16; i++) sum = __dadd_rn(sum, part[i]);
        inv = __double2float_rn(__ddiv_rn(1.0, sum));
    }
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) p[j] = __fmul_rn(p[j], inv);
    __syncthreads();
    return true;
}

#endif // MEAZO_KERNELS_SOFTMAX_ROW_CUH
