package cpu

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Workers is how many goroutines a kernel may use; 0 or less means
// runtime.GOMAXPROCS(0) at the time of the call. Every kernel gives the same
// bits for every worker count.
//
// The CPU backend keeps its own parallel loops rather than the module's
// internal/parallel: the element-wise kernels split their rows into one
// contiguous chunk per worker (For), the perturbed products hand out tasks
// on the calling goroutine too (Tasks), and the GEMM runs on a persistent
// pool (startWorkers in gemm.go) whose goroutines live as long as the
// program, so that a forward's thousands of products start no goroutines.
// Code outside the backends (the noise, the engine, random weights) uses
// internal/parallel.
type Workers int

// n is the worker count to use now.
func (w Workers) n() int {
	if w > 0 {
		return int(w)
	}
	return runtime.GOMAXPROCS(0)
}

// For calls body(lo, hi) on disjoint chunks covering [0, n), one per worker
// of wk. Chunks are contiguous and each index is handled by exactly one call,
// so any body that writes only its own rows gives the same result for every
// worker count.
func (wk Workers) For(n int, body func(lo, hi int)) {
	w := wk.n()
	if w > n {
		w = n
	}
	if w <= 1 {
		if n > 0 {
			body(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}

// The element-wise kernels behind the ops: scalar Go here, replaced at
// start-up by vector versions when the CPU has them (ops_simd_amd64.go). Both
// give bit-identical results.
var (
	opsPath   = "scalar"        // names the kernels in use, for tests and benchmarks
	siluMul   = siluMulScalar   // gate[i] = silu(gate[i])·up[i]
	expSub    = expSubScalar    // x[i] = Exp(x[i] - m)
	maxOf     = maxOfScalar     // max(x), -Inf for an empty x
	scaleBy   = scaleByScalar   // x[i] *= s
	scaledAdd = scaledAddScalar // dst[i] += src[i]·s, the product rounded before the sum
	add       = addScalar       // dst[i] += src[i]
	sumSq     = sumSqScalar     // Σ x[i]² in float64, in sumPartials order
	sum64     = sum64Scalar     // Σ x[i] in float64, in sumPartials order
	expSum64  = expSum64Scalar  // Σ exp64(x[i] - m) for m ≥ every x[i], in sumPartials order
	mulBoth   = mulBothScalar   // dst[i] = w[i]·(x[i]·s)
	// RoPE on one head split in halves lo and hi (rotateHalfScalar)
	rotateHalf = rotateHalfScalar
)

// Tasks calls task(i) once for every i in [0, n) on up to wk's workers.
// Tasks are handed out one at a time, so a core
// taken by another process slows the call instead of stalling it; each task
// must write only its own outputs, which makes the result independent of the
// worker count.
func (wk Workers) Tasks(n int, task func(i int)) {
	w := min(wk.n(), n)
	var next atomic.Int64
	run := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			task(i)
		}
	}
	var wg sync.WaitGroup
	for range w - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	run()
	wg.Wait()
}

// RMSNorm normalises each of the rows of x (width n) and scales by weight, as
// HF's LlamaRMSNorm: weight · (x / sqrt(mean(x²) + eps)). The mean of squares
// is accumulated in float64 (in 16 partial sums, see sumSqScalar). dst may
// alias x.
func RMSNorm(wk Workers, dst, x, weight []float32, rows, n int, eps float32) {
	weight = weight[:n]
	wk.For(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x[r*n : (r+1)*n]
			variance := float32(sumSq(xr) / float64(n))
			inv := float32(1 / math.Sqrt(float64(variance+eps)))
			mulBoth(dst[r*n:(r+1)*n], weight, xr, inv)
		}
	})
}

// The float64 reductions add element i into partial sum i mod 16, then add
// the 16 partial sums in order. The vector kernels keep the partial sums in
// their lanes, so both give the same bits; the products of two float32
// values are exact in float64, so a fused multiply-add rounds the same.

func sumSqScalar(x []float32) float64 {
	var p [16]float64
	for i, v := range x {
		p[i%16] += float64(float64(v) * float64(v)) // exact either way; converted for TestScalarKernelsUnfused
	}
	return sumPartials(&p)
}

func sum64Scalar(x []float32) float64 {
	var p [16]float64
	for i, v := range x {
		p[i%16] += float64(v)
	}
	return sumPartials(&p)
}

func sumPartials(p *[16]float64) float64 {
	var s float64
	for _, v := range p {
		s += v
	}
	return s
}

func mulBothScalar(dst, w, x []float32, s float32) {
	w, x = w[:len(dst)], x[:len(dst)]
	for i, v := range x {
		dst[i] = w[i] * (v * s)
	}
}

// SiLUMul computes gate[i] = silu(gate[i]) · up[i] in place, the SwiGLU MLP's
// activation: silu(x) = x · sigmoid(x) = x / (1 + exp(-x)). Every element is
// computed by the same operations whether it lands in a vector lane or the
// scalar tail, so results do not depend on the slice's length or offset.
func SiLUMul(wk Workers, gate, up []float32) {
	up = up[:len(gate)]
	const chunk = 4096
	wk.For((len(gate)+chunk-1)/chunk, func(lo, hi int) {
		lo, hi = lo*chunk, min(hi*chunk, len(gate))
		siluMul(gate[lo:hi], up[lo:hi])
	})
}

// siluMulScalar is siluMul for one element at a time.
func siluMulScalar(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = g / (1 + Exp(-g)) * up[i]
	}
}

// Add computes dst[i] += src[i].
func Add(wk Workers, dst, src []float32) {
	src = src[:len(dst)]
	const chunk = 1 << 16
	if len(dst) <= chunk {
		add(dst, src)
		return
	}
	wk.For((len(dst)+chunk-1)/chunk, func(lo, hi int) {
		lo, hi = lo*chunk, min(hi*chunk, len(dst))
		add(dst[lo:hi], src[lo:hi])
	})
}

// AddScaled computes dst += s·src elementwise, the product rounded before
// the sum (no fused multiply-add), on the workers in chunks as Add: a LoRA
// term's last pass over a projection's output (MatMulNTAdd), which took 4 %
// of an all-linear step's CPU time on one thread.
func AddScaled(wk Workers, dst, src []float32, s float32) {
	src = src[:len(dst)]
	const chunk = 1 << 16
	wk.For((len(dst)+chunk-1)/chunk, func(lo, hi int) {
		lo, hi = lo*chunk, min(hi*chunk, len(dst))
		scaledAdd(dst[lo:hi], src[lo:hi], s)
	})
}

// scaledAddScalar is scaledAdd one element at a time.
func scaledAddScalar(dst, src []float32, s float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += float32(v * s) // the conversion keeps Go from fusing (arm64)
	}
}

func addScalar(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// Exp is a float32 exponential accurate to about 1 ulp (Cephes expf), several
// times faster than float64 math.Exp. It returns 0 below -87.3 (no denormals)
// and +Inf above 88.7. The vector kernels (ops_simd_amd64.go) compute the same
// operations in the same order, without fused multiply-adds, so they return
// bit-identical results.
func Exp(x float32) float32 {
	const (
		hi    = 88.72283
		lo    = -87.33654
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if x != x {
		return x
	}
	if x > hi {
		return float32(math.Inf(1))
	}
	if x < lo {
		return 0
	}
	// Every product converted: the compiler fuses x*y + z into one
	// rounding on arm64 and with GOAMD64=v3, where the vector kernels round
	// twice (TestScalarKernelsUnfused).
	k := float32(math.Floor(float64(float32(x*log2e) + 0.5)))
	r := x - float32(k*c1) - float32(k*c2)
	p := float32(1.9875691500e-4)
	p = float32(p*r) + 1.3981999507e-3
	p = float32(p*r) + 8.3334519073e-3
	p = float32(p*r) + 4.1665795894e-2
	p = float32(p*r) + 1.6666665459e-1
	p = float32(p*r) + 5.0000001201e-1
	p = float32(float32(p*r)*r) + r + 1
	if k > 127 { // x in (88.38, 88.72]: 2^128 is not a float32, scale in two steps (p·2 is exact)
		return p * 2 * 0x1p127
	}
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// SoftmaxRow turns scores[0:n] into probabilities in place, using only the
// entries with allowed(j) true; the others become exactly 0. This equals HF's
// additive-mask softmax (a finite minimum added to masked scores) on any row
// with at least one allowed entry. A row with none becomes all zeros rather
// than NaN; a NaN among the allowed scores makes the whole row NaN, as in
// PyTorch. The normaliser is accumulated in float64.
func SoftmaxRow(scores []float32, allowed func(j int) bool) {
	for j := range scores {
		if !allowed(j) {
			scores[j] = float32(math.Inf(-1))
		}
	}
	softmaxMasked(scores)
}

// softmaxMasked is SoftmaxRow with the masked entries already set to -Inf.
func softmaxMasked(scores []float32) {
	maxv := maxOf(scores)
	if math.IsInf(float64(maxv), -1) {
		// Every entry masked, or NaN: maxOf passes over a NaN, so a row of
		// NaN scores (a NaN in the query's or the keys' weights) would
		// read as a query that sees no key, and its zeros would hide the
		// NaN from every check downstream. PyTorch's softmax gives NaN.
		if slices.ContainsFunc(scores, func(v float32) bool { return v != v }) {
			for j := range scores {
				scores[j] = float32(math.NaN())
			}
			return
		}
		clear(scores)
		return
	}
	expSub(scores, maxv) // exp(-Inf) = 0 for the masked entries
	scaleBy(scores, float32(1/sum64(scores)))
}

func maxOfScalar(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

func expSubScalar(x []float32, m float32) {
	for i, v := range x {
		x[i] = Exp(v - m)
	}
}

func scaleByScalar(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// LogSumExp returns log Σ exp(x[i]) in float64, for cross-entropy. The
// exponentials are float64 (exp64, as accurate as math.Exp) and summed in
// sumPartials order, so the vector and scalar kernels give the same bits. A
// NaN or infinite value (which makes the plain sum of x NaN or infinite)
// takes the serial formula: a NaN gives NaN, and so does an infinite value
// (exp(∞ − ∞)), where PyTorch's logsumexp gives ±∞. Either is not finite,
// which is all the loss's callers test (a diverged step), and the CUDA
// kernel (cross_entropy.cu) computes the same max-then-exp.
func LogSumExp(x []float32) float64 {
	if s := sum64(x); len(x) == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		maxv := math.Inf(-1)
		for _, v := range x {
			maxv = max(maxv, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - maxv)
		}
		return maxv + math.Log(s)
	}
	maxv := float64(maxOf(x))
	return maxv + math.Log(expSum64(x, maxv))
}

// exp64 is e^x for x ≤ 0, by the algorithm of Go's math.Exp (FreeBSD's
// e_exp.c: x = k·ln2 + r, a rational approximation of e^r, then ·2^k) with
// every step written out, so that the AVX-512 kernel (exp64x8) performs the
// same float64 operations on its lanes; explicit conversions keep products
// from being fused into multiply-adds (arm64), which would change bits.
// Below -708 it returns e^-708 ≈ 3e-308 rather than a subnormal or 0:
// LogSumExp adds it to a sum that is at least 1, where that changes nothing.
func exp64(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		log2e = 1.44269504088896338700e+00
		p1    = 1.66666666666666657415e-01
		p2    = -2.77777777770155933842e-03
		p3    = 6.61375632143793436117e-05
		p4    = -1.65339022054652515390e-06
		p5    = 4.13813679705723846039e-08
	)
	x = max(x, -708)
	k := 0 - math.Floor(0.5-float64(x*log2e)) // math.Exp's int(log2e·x - 0.5) for x ≤ 0
	hi := x - float64(k*ln2Hi)
	lo := float64(k * ln2Lo)
	r := hi - lo
	t := float64(r * r)
	c := r - float64(t*(p1+float64(t*(p2+float64(t*(p3+float64(t*(p4+float64(t*p5)))))))))
	y := 1 - ((lo - float64(r*c)/(2-c)) - hi)
	return y * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

// expSum64Scalar is Σ exp64(x[i] - m) in sumPartials order.
func expSum64Scalar(x []float32, m float64) float64 {
	var p [16]float64
	for i, v := range x {
		p[i%16] += exp64(float64(v) - m)
	}
	return sumPartials(&p)
}
