// Kernels for the checkers' own test (checkers_test.go), added to the
// emulator's build under MEAZO_CUDA_EMU_CHECK only, never to the PTX: the
// same neighbour's read of a shared array, without and with the
// __syncthreads that orders it after the neighbour's write, and with the
// barrier in divergent code; a read past the end of a device allocation.

extern "C" {

// emu_probe_racy: each thread writes its slot of a shared array and reads
// its neighbour's, with no barrier between (a race on a GPU).
__global__ void emu_probe_racy(float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = (float)threadIdx.x;
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

// emu_probe_synced: the same with the barrier; over several blocks, which
// reuse the static array here as each has its own on a GPU.
__global__ void emu_probe_synced(float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

// emu_probe_divergent: the barrier in each branch of a branch on the thread
// index: the two halves of the block wait at different __syncthreads.
__global__ void emu_probe_divergent(float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = (float)threadIdx.x;
    if (threadIdx.x < blockDim.x / 2) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

// emu_probe_past_end: the last thread of the grid reads one element past
// the end of out, which holds one element a thread.
__global__ void emu_probe_past_end(float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
    out[i] = (float)i;
    if (i == n - 1) out[i] = out[n];
}

} // extern "C"
