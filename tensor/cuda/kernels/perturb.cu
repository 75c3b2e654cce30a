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

// load_weight4 writes in v elements i … i+3 of w as load_weight reads them,
// with one 16-byte (float32) or 8-byte (bfloat16) load: weights_vec must
// have said that the quad's start is aligned so.
__device__ __forceinline__ void load_weight4(const void* w, int bf16, long long i, float v[4]) {
    if (bf16) {
        uint2 h = *(const uint2*)((const unsigned short*)w + i); // little-endian: element i in the low half
        v[0] = __uint_as_float(h.x << 16), v[1] = __uint_as_float(h.x & 0xFFFF0000u);
        v[2] = __uint_as_float(h.y << 16), v[3] = __uint_as_float(h.y & 0xFFFF0000u);
        return;
    }
    load4((const float*)w + i, v);
}

// weights_vec reports whether the quads of a stream whose element e0 is
// element 0 of w (and of dst0, dst1 where not null) may be read and
// written as vectors: e0 a multiple of 4, so that a quad starts at an
// element index that is one, and every pointer aligned to the vector.
// One wide access instead of four lanes 16 bytes apart per element gives
// the warp whole cache lines.
__device__ __forceinline__ bool weights_vec(long long e0, const void* w, int bf16, const float* dst0, const float* dst1) {
    return (e0 & 3) == 0 && aligned(w, bf16 ? 8 : 16) && aligned(dst0, 16) && (!dst1 || aligned(dst1, 16));
}

// perturb_quad writes dst0[i … i+3] = w + scale0·z and, when dst1 is not
// null, dst1[i … i+3] = w + scale1·z, for the quad's weights w and noise z.
__device__ __forceinline__ void perturb_quad(float* dst0, float* dst1, long long i, const float w[4], const float z[4],
                                             double scale0, double scale1) {
    float v[4];
    for (int m = 0; m < 4; m++) v[m] = noise_perturbed(w[m], scale0, z[m]);
    store4(dst0 + i, v);
    if (!dst1) return;
    for (int m = 0; m < 4; m++) v[m] = noise_perturbed(w[m], scale1, z[m]);
    store4(dst1 + i, v);
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
    bool vec = weights_vec(e0, src, bf16, dst0, dst1);
    FOR_EACH(q, noise_quads(e0, n)) {
        unsigned long long b = (unsigned long long)(e0 >> 2) + q;
        float z[4];
        noise_values(s, b, dist, norm, z);
        long long i0 = (long long)(4 * b) - e0;
        if (vec && i0 + 3 < n) { // a whole quad (i0 ≥ 0: e0 is a multiple of 4)
            float w[4];
            load_weight4(src, bf16, i0, w);
            perturb_quad(dst0, dst1, i0, w, z, scale0, scale1);
            continue;
        }
        for (int m = 0; m < 4; m++) {
            long long i = i0 + m;
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
    const void* row = bf16 ? (const void*)((const unsigned short*)w + id * k) : (const void*)((const float*)w + id * k);
    bool vec = weights_vec(first, row, bf16, d, 0);
    long long quads = noise_quads(first, k);
    for (long long q = threadIdx.x; q < quads; q += blockDim.x) {
        unsigned long long b = (unsigned long long)(first >> 2) + q;
        float z[4];
        noise_values(s, b, dist, norm, z);
        long long c0 = (long long)(4 * b) - first;
        if (vec && c0 + 3 < k) {
            float v[4];
            load_weight4(row, bf16, c0, v);
            perturb_quad(d, 0, c0, v, z, scale, 0);
            continue;
        }
        for (int m = 0; m < 4; m++) {
            long long c = c0 + m;
            if (c >= 0 && c < k) d[c] = noise_perturbed(load_weight(row, bf16, c), scale, z[m]);
        }
    }
}

} // extern "C"
