package noise

import "math/bits"

// Philox4x32 returns Philox4x32-10 (Salmon et al., SC'11, as in Random123) of
// counter ctr under key key.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for range 10 {
		hi0, lo0 := bits.Mul32(0xD2511F53, c0)
		hi1, lo1 := bits.Mul32(0xCD9E8D57, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return [4]uint32{c0, c1, c2, c3}
}

// StreamSeed is the Philox key of parameter group g's perturbations in a run
// seeded with runSeed: runSeed XOR (0x9E3779B97F4A7C15 * (g+1)), so every group
// draws independent noise (same-shaped groups never share it).
func StreamSeed(runSeed uint64, group int) uint64 {
	return runSeed ^ (0x9E3779B97F4A7C15 * uint64(group+1))
}
