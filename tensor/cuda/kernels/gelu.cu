// GELU, ViT's activation (HF's "gelu": torch's exact GELU).

#include "common.cuh"

extern "C" {

// x[i] = x·½·(1 + erf(x·(1/√2))) in float64, rounded once, as the CPU
// backend's GELU (its erf, FreeBSD's s_erf.c in tensor/cpu/gelu.go, and
// CUDA's may differ in a float64 ulp, which changes the float32 result only
// where it crosses a rounding boundary).
__global__ void gelu(float* x, long long n) {
    FOR_EACH(i, n) {
        double v = (double)x[i];
        x[i] = __double2float_rn(__dmul_rn(__dmul_rn(0.5, v), __dadd_rn(1.0, erf(__dmul_rn(v, 0.70710678118654752440)))));
    }
}

} // extern "C"
