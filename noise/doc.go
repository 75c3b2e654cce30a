// Package noise is the perturbation directions z of zeroth-order training,
// defined so that every device draws the same values: element i of
// direction j at step t in group g's stream is a pure function of (run seed,
// g, t, j, i). Philox4x32-10 turns the counter (i/4, t, j) under the group's
// key into four 32-bit words; a distribution turns the words into values
// (docs/ALGORITHMS.md, "The noise contract").
//
// Nothing is stored: a value can be drawn again at any time, in any order,
// on any number of threads, by the ZO engine on the host, by the CPU backend
// while it packs a weight panel, or by a GPU kernel, and it is the same
// float32 everywhere. Normals use a Box–Muller transform written in float32
// operations alone (normal.go), each rounded as IEEE single precision
// rounds it, with no fused multiply-add: what the vector code (AVX-512,
// AVX2) and the CUDA kernel compute, step for step.
package noise
