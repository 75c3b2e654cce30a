// A projection's bias added to each row of its product.

#include "common.cuh"

extern "C" {

// y[i] += b[i mod width] for the n elements of y [n/width][width]
__global__ void add_bias(float* y, const float* b, int width, long long n) {
    FOR_EACH(i, n) y[i] = __fadd_rn(y[i], b[i % width]);
}

} // extern "C"
