// A projection's bias added to each row of its product.

#include "common.cuh"

extern "C" {

// y[i] += b[i mod width] for the n elements of y [n/width][width]
__global__ void add_bias(float* y, const float* b, int width, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], b[i % width]);
}

// y[i] += x[i] + b[i mod width] for x and y [n/width][width], x + b
// rounded first: add_bias on x then add into y in one pass, their bits (x
// is only read).
__global__ void add_bias_residual(float* y, const float* x, const float* b, int width, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], __fadd_rn(x[i], b[i % width]));
}

} // extern "C"
