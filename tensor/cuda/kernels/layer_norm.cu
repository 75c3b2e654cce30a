// LayerNorm with a weight and a bias (OPT's, ViT's): a block per row.

#include "common.cuh"

extern "C" {

// layer_norm: one block of 16·k threads per row, as the CPU backend
// computes it. The mean: Σx in float64, element j added into partial sum
// j mod 16 in order, the 16 partials added in order, divided by n and
// rounded to float32. The variance: the same sums of d² for d = x − mean
// (rounded to float32; d² is exact in float64), rounded to float32. The
// scale rstd = 1/sqrt(var+eps) in float64, rounded to float32; then
// dst[j] = ((d·rstd)·w[j]) + b[j], each operation rounded. dst may be x:
// each element is read by the thread that writes it, after the sums.
__global__ void layer_norm(float* dst, const float* x, const float* w, const float* b, int n, float eps) {
    __shared__ double part[16];
    __shared__ float mean, rstd;
    const float* xr = x + (long long)blockIdx.x * n;
    float* dr = dst + (long long)blockIdx.x * n;
    if (threadIdx.x < 16) {
        double s = 0;
        for (int j = threadIdx.x; j < n; j += 16) s = __dadd_rn(s, (double)xr[j]);
        part[threadIdx.x] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0;
        for (int p = 0; p < 16; p++) s = __dadd_rn(s, part[p]);
        mean = __double2float_rn(__ddiv_rn(s, (double)n));
    }
    __syncthreads();
    if (threadIdx.x < 16) {
        double s = 0;
        for (int j = threadIdx.x; j < n; j += 16) {
            double d = (double)__fsub_rn(xr[j], mean);
            s = fma(d, d, s); // d·d is exact in float64
        }
        part[threadIdx.x] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) rstd = inv_std_of_parts(part, n, eps);
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        dr[j] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(xr[j], mean), rstd), w[j]), b[j]);
}

} // extern "C"
