// Weights read as θ + s·z (full-parameter ZO: tensor.Trainer): perturbed
// copies of a range of a matrix or vector, for the products, and perturbed
// embedding rows. z is drawn here, a thread per Philox block of the stream,
// and every element is noise.Perturbed's float32(θ + s·z, summed in
// float64).

#include "common.cuh"
#include "noise.cuh"

// load_weight is element i of a float32 array, or of bfloat16 bits widened
// exactly.
__device__ __forceinline__ float load_weight(const void* w, int bf16, long long i) {
    if (bf16) return __uint_as_float(((unsigned int)((const unsigned short*)w)[i]) << 16);
    return ((const float*)w)[i];
}

extern "C" {

// perturb_copy: for i < n, dst0[i] = src[i] + scale0·z_i and, when dst1 is
// not null, dst1[i] = src[i] + scale1·z_i from the same z_i (the + and −
// variants of one direction), z_i element e0+i of the stream
// (seed, step, dir) under dist (sphere: divided by norm). src is float32,
// or bfloat16 bits if bf16.
__global__ void perturb_copy(float* dst0, float* dst1, const void* src, int bf16, long long n, unsigned long long seed,
                             unsigned int step, unsigned int dir, int dist, double norm, long long e0, double scale0,
                             double scale1) {
    NoiseStream s = {seed, step, dir};
    FOR_EACH(q, noise_quads(e0, n)) {
        unsigned long long b = (unsigned long long)(e0 >> 2) + q;
        float z[4];
        noise_values(s, b, dist, norm, z);
        for (int m = 0; m < 4; m++) {
            long long i = (long long)(4 * b) + m - e0;
            if (i < 0 || i >= n) continue;
            float w = load_weight(src, bf16, i);
            dst0[i] = noise_perturbed(w, scale0, z[m]);
            if (dst1) dst1[i] = noise_perturbed(w, scale1, z[m]);
        }
    }
}

// perturb_rows: row r of dst [rows][k] is row ids[r] of the matrix w
// [*][k] (float32, or bfloat16 bits if bf16) perturbed by scale·z, element
// c of row id taking element e0 + id·k + c of the stream. A block per row
// (blockIdx.x = r), its threads over the row's Philox blocks.
__global__ void perturb_rows(float* dst, const void* w, int bf16, int k, const int* ids, unsigned long long seed,
                             unsigned int step, unsigned int dir, int dist, double norm, long long e0, double scale) {
    NoiseStream s = {seed, step, dir};
    long long id = ids[blockIdx.x];
    long long first = e0 + id * k; // the row's first element in the stream
    float* d = dst + (long long)blockIdx.x * k;
    long long quads = noise_quads(first, k);
    for (long long q = threadIdx.x; q < quads; q += blockDim.x) {
        unsigned long long b = (unsigned long long)(first >> 2) + q;
        float z[4];
        noise_values(s, b, dist, norm, z);
        for (int m = 0; m < 4; m++) {
            long long c = (long long)(4 * b) + m - first;
            if (c >= 0 && c < k) d[c] = noise_perturbed(load_weight(w, bf16, id * k + c), scale, z[m]);
        }
    }
}

} // extern "C"
