// The noise contract alone (noise.cuh): a stream's values and raw words
// over a range, and the normal transform of given words. The backend's ops
// draw their noise inside their own kernels; these serve the tests that
// hold the device's noise to package noise's bits (on the emulator, and
// exhaustively over the transform's inputs on a GPU).

#include "common.cuh"
#include "noise.cuh"

extern "C" {

// noise_fill: dst[i] = element e0+i of stream (seed, step, dir) under dist
// (sphere: divided by norm), for i < n (noise.Stream.FillRange). A thread
// per Philox block.
__global__ void noise_fill(float* dst, long long n, unsigned long long seed, unsigned int step, unsigned int dir, int dist,
                           double norm, long long e0) {
    NoiseStream s = {seed, step, dir};
    FOR_EACH(q, noise_quads(e0, n)) {
        unsigned long long b = (unsigned long long)(e0 >> 2) + q;
        float v[4];
        noise_values(s, b, dist, norm, v);
        for (int m = 0; m < 4; m++) {
            long long i = (long long)(4 * b) + m - e0;
            if (i >= 0 && i < n) dst[i] = v[m];
        }
    }
}

// noise_bits: dst[i] = the raw Philox word of element e0+i of the stream,
// for i < n (noise.Stream.FillBits).
__global__ void noise_bits(unsigned int* dst, long long n, unsigned long long seed, unsigned int step, unsigned int dir, long long e0) {
    NoiseStream s = {seed, step, dir};
    FOR_EACH(q, noise_quads(e0, n)) {
        unsigned long long b = (unsigned long long)(e0 >> 2) + q;
        unsigned int x[4];
        philox_block(s, b, x);
        for (int m = 0; m < 4; m++) {
            long long i = (long long)(4 * b) + m - e0;
            if (i >= 0 && i < n) dst[i] = x[m];
        }
    }
}

// noise_normal_words: (dst[2i], dst[2i+1]) = the two normals of the words
// (words[2i], words[2i+1]), for i < pairs (noise.boxMuller).
__global__ void noise_normal_words(float* dst, const unsigned int* words, long long pairs) {
    FOR_EACH(i, pairs) noise_box_muller(words[2 * i], words[2 * i + 1], &dst[2 * i], &dst[2 * i + 1]);
}

} // extern "C"
