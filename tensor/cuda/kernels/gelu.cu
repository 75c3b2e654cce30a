// GELU, ViT's activation (HF's "gelu": torch's exact GELU).

#include "common.cuh"
#include "erf.cuh"

extern "C" {

// gelu_of is x·½·(1 + erf(x·(1/√2))) in float64, rounded once, as the
// CPU backend's GELU: its erf (erf64, erf.cuh) and its order of
// operations, so the CPU's bits.
__device__ __forceinline__ float gelu_of(float x) {
    double v = (double)x;
    return __double2float_rn(__dmul_rn(__dmul_rn(0.5, v), __dadd_rn(1.0, erf64(__dmul_rn(v, 0.70710678118654752440)))));
}

// x[i] = GELU(x[i])
__global__ void gelu(float* x, long long n) {
    FOR_EACH(i, n) x[i] = gelu_of(x[i]);
}

// x[i] = GELU(x[i] + b[i mod width]) for x [n/width][width], the sum
// rounded to float32 first: add_bias then gelu in one pass, their bits.
__global__ void add_bias_gelu(float* x, const float* b, int width, long long n) {
    FOR_EACH(i, n) x[i] = gelu_of(__fadd_rn(x[i], b[i % width]));
}

} // extern "C"
