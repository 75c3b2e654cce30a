// Argmax per row (greedy decoding).

#include "common.cuh"

extern "C" {

// argmax: one block of 256 threads per row of x [rows][width]: the index of
// the largest value, the first one on ties, as a left-to-right scan that
// moves to column i when x[i] > x[best]: a NaN never takes over, and a NaN in
// column 0 keeps it.
__global__ void argmax(int* out, const float* x, int width) {
    __shared__ float bv[256];
    __shared__ int bi[256];
    const float* r = x + (long long)blockIdx.x * width;
    float v = NEG_INF;
    int best = 0x7fffffff;
    for (int j = threadIdx.x; j < width; j += blockDim.x) {
        float e = r[j];
        if (e == e && (best == 0x7fffffff || e > v)) v = e, best = j; // strided j rises: ties keep the first
    }
    bv[threadIdx.x] = v;
    bi[threadIdx.x] = best;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            float ov = bv[threadIdx.x + w];
            int oi = bi[threadIdx.x + w];
            if (oi != 0x7fffffff && (bi[threadIdx.x] == 0x7fffffff || ov > bv[threadIdx.x] ||
                                     (ov == bv[threadIdx.x] && oi < bi[threadIdx.x]))) {
                bv[threadIdx.x] = ov;
                bi[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = (r[0] != r[0] || bi[0] == 0x7fffffff) ? 0 : bi[0];
}

} // extern "C"
