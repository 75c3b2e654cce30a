// The gated MLP's activation: gate = silu(gate)·up.

#include "common.cuh"

extern "C" {

// gate[i] = silu(gate[i])·up[i] = gate[i] / (1 + exp(-gate[i])) · up[i]
__global__ void silu_mul(float* gate, const float* up, long long n) {
    FOR_EACH(i, n) {
        float g = gate[i];
        gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, cephes_expf(-g))), up[i]);
    }
}

} // extern "C"
