// Per-token cross-entropy at the requested rows of the logits.

#include "common.cuh"

extern "C" {

// cross_entropy: one block of 256 threads per requested row ids[b] of
// logits [*][width]: out[b] = logsumexp(row) − row[targets[b]] in float64
// (max, then a fixed-tree sum of exp(x − max)).
__global__ void cross_entropy(double* out, const float* logits, int width, const int* ids, const int* targets) {
    __shared__ float mred[256];
    __shared__ double sred[256];
    const float* r = logits + (long long)ids[blockIdx.x] * width;
    float mx = NEG_INF;
    for (int j = threadIdx.x; j < width; j += blockDim.x) mx = fmaxf(mx, r[j]);
    mred[threadIdx.x] = mx;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) mred[threadIdx.x] = fmaxf(mred[threadIdx.x], mred[threadIdx.x + w]);
        __syncthreads();
    }
    double m = (double)mred[0];
    double s = 0;
    for (int j = threadIdx.x; j < width; j += blockDim.x) s += exp((double)r[j] - m);
    sred[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sred[threadIdx.x] += sred[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = m + log(sred[0]) - (double)r[targets[blockIdx.x]];
}

} // extern "C"
