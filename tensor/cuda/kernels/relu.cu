// ReLU, OPT's activation.

#include "common.cuh"

extern "C" {

// x[i] = 0 where x[i] < 0 (−0 and NaN stay, as torch.relu leaves them)
__global__ void relu(float* x, long long n) {
    FOR_EACH(i, n) if (x[i] < 0.0f) x[i] = 0.0f;
}

} // extern "C"
