// The adds: y += x (the residual) and y += x·s (a scaled term).

#include "common.cuh"

extern "C" {

// y[i] += x[i]
__global__ void add(float* y, const float* x, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], x[i]);
}

// y[i] += x[i]·s
__global__ void add_scaled(float* y, const float* x, float s, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], __fmul_rn(x[i], s));
}

} // extern "C"
