// bfloat16 weights widened to float32 (exactly) before a product.

#include "common.cuh"

extern "C" {

// dst[i] = float32(src[i] as bfloat16 bits): exact widening.
__global__ void bf16_to_f32(float* dst, const unsigned short* src, long long n) {
    FOR_EACH(i, n) dst[i] = __int_as_float(((unsigned int)src[i]) << 16);
}

} // extern "C"
