// Row gathers: embedding lookups (float32 or bfloat16 weights) and Gather.

#include "common.cuh"

extern "C" {

// dst[i] = src[ids[i]] for rows of width floats; one block per output row.
__global__ void gather_rows(float* dst, const float* src, int width, const int* ids) {
    const float* s = src + (long long)ids[blockIdx.x] * width;
    float* d = dst + (long long)blockIdx.x * width;
    for (int j = threadIdx.x; j < width; j += blockDim.x) d[j] = s[j];
}

// gather_rows from a bfloat16 matrix, widened exactly.
__global__ void gather_rows_bf16(float* dst, const unsigned short* src, int width, const int* ids) {
    const unsigned short* s = src + (long long)ids[blockIdx.x] * width;
    float* d = dst + (long long)blockIdx.x * width;
    for (int j = threadIdx.x; j < width; j += blockDim.x) d[j] = __int_as_float(((unsigned int)s[j]) << 16);
}

} // extern "C"
