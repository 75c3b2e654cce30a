// bfloat16 weights widened to float32 (exactly) before a product; float32
// activations rounded to bfloat16 for a product on the tensor cores
// (Options.BF16Products).

#include "common.cuh"

extern "C" {

// dst[i] = float32(src[i] as bfloat16 bits): exact widening.
__global__ void bf16_to_f32(float* dst, const unsigned short* src, long long n) {
    FOR_EACH(i, n) dst[i] = __int_as_float(((unsigned int)src[i]) << 16);
}

// dst[i] = src[i] rounded to bfloat16 bits, half to even (a NaN stays a
// quiet NaN of its sign): safetensors.RoundBF16's bits.
__global__ void f32_to_bf16(unsigned short* dst, const float* src, long long n) {
    FOR_EACH(i, n) {
        unsigned int u = __float_as_uint(src[i]);
        if (src[i] != src[i]) {
            dst[i] = (unsigned short)(u >> 16) | 0x40;
        } else {
            u += 0x7fffu + ((u >> 16) & 1u);
            dst[i] = (unsigned short)(u >> 16);
        }
    }
}

} // extern "C"
