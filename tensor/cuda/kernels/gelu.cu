// GELU, ViT's activation (HF's "gelu": torch's exact GELU).

#include "common.cuh"
#include "erf.cuh"

extern "C" {

// x[i] = x·½·(1 + erf(x·(1/√2))) in float64, rounded once, as the CPU
// backend's GELU: its erf (erf64, erf.cuh) and its order of operations, so
// the CPU's bits.
__global__ void gelu(float* x, long long n) {
    FOR_EACH(i, n) {
        double v = (double)x[i];
        x[i] = __double2float_rn(__dmul_rn(__dmul_rn(0.5, v), __dadd_rn(1.0, erf64(__dmul_rn(v, 0.70710678118654752440)))));
    }
}

} // extern "C"
