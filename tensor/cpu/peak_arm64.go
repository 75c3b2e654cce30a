//go:build arm64

package cpu

// PeakLoop returns the float32 FMA peak loop of the NEON path, for
// measuring what fraction of the machine's limit a kernel reaches: loop(n)
// runs n iterations of chains independent 4-lane FMLA chains, 2·lanes·chains
// FLOP each. 24 chains cover the widest cores (four 128-bit FMA pipes of
// latency 4 need 16 in flight). Each chain starts at its index plus one and
// adds m·a = 2⁻¹¹ per iteration, exactly in float32 for n up to 16 million;
// loop returns the sum of the chains' first lanes. ok is false for any
// other path.
func PeakLoop(path string) (loop func(n int) float32, lanes, chains int, ok bool) {
	if path != "neon" {
		return nil, 0, 0, false
	}
	return fmlaLoopNEON, 4, neonPeakChains, true
}

const neonPeakChains = 24

// fmlaLoopNEON runs fmlaLoop (peak_arm64.s): accumulators V8-V31 start at
// start[i] (broadcast), and each iteration does V(8+i) += V0·V1 with V0 = m
// and V1 = a for every i; the accumulators end in out, 4 floats each.
func fmlaLoopNEON(n int) float32 {
	var start, out [neonPeakChains * 4]float32
	for i := range neonPeakChains {
		for l := range 4 {
			start[4*i+l] = float32(i + 1)
		}
	}
	fmlaLoop(n, 0.5, 1.0/1024, &start, &out)
	var sum float32
	for i := range neonPeakChains {
		sum += out[4*i]
	}
	return sum
}

//go:noescape
func fmlaLoop(n int, m, a float32, start, out *[neonPeakChains * 4]float32)
