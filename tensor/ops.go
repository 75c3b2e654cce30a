package tensor

import (
	"math"
	"sync"
)

// ParallelFor calls body(lo, hi) on disjoint chunks covering [0, n), using up
// to the configured number of workers. Chunks are contiguous and each index is
// handled by exactly one call, so any body that writes only its own rows gives
// the same result for every worker count.
func ParallelFor(n int, body func(lo, hi int)) {
	w := Threads()
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

// RMSNorm normalises each of the rows of x (width n) and scales by weight, as
// HF's LlamaRMSNorm: weight · (x / sqrt(mean(x²) + eps)). The mean of squares
// is accumulated in float64. dst may alias x.
func RMSNorm(dst, x, weight []float32, rows, n int, eps float32) {
	ParallelFor(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x[r*n : (r+1)*n]
			dr := dst[r*n : (r+1)*n]
			var ss float64
			for _, v := range xr {
				ss += float64(v) * float64(v)
			}
			variance := float32(ss / float64(n))
			inv := float32(1 / math.Sqrt(float64(variance+eps)))
			for i, v := range xr {
				dr[i] = weight[i] * (v * inv)
			}
		}
	})
}

// SiLUMul computes gate[i] = silu(gate[i]) · up[i] in place, the SwiGLU MLP's
// activation: silu(x) = x · sigmoid(x).
func SiLUMul(gate, up []float32) {
	up = up[:len(gate)]
	ParallelFor(len(gate)/1024+1, func(lo, hi int) {
		for i := lo * 1024; i < min(hi*1024, len(gate)); i++ {
			g := gate[i]
			gate[i] = g / (1 + Exp(-g)) * up[i]
		}
	})
}

// Add computes dst[i] += src[i].
func Add(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// Exp is a float32 exponential accurate to about 1 ulp (Cephes expf), several
// times faster than float64 math.Exp. It returns 0 below -87.3 (no denormals)
// and +Inf above 88.7.
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
	k := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - k*c1 - k*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}

// SoftmaxRow turns scores[0:n] into probabilities in place, using only the
// entries with allowed(j) true; the others become exactly 0. This equals HF's
// additive-mask softmax (a finite minimum added to masked scores) on any row
// with at least one allowed entry. A row with none becomes all zeros rather
// than NaN. The normaliser is accumulated in float64.
func SoftmaxRow(scores []float32, allowed func(j int) bool) {
	maxv := float32(math.Inf(-1))
	for j, s := range scores {
		if allowed(j) && s > maxv {
			maxv = s
		}
	}
	if math.IsInf(float64(maxv), -1) {
		for j := range scores {
			scores[j] = 0
		}
		return
	}
	var sum float64
	for j, s := range scores {
		if allowed(j) {
			e := Exp(s - maxv)
			scores[j] = e
			sum += float64(e)
		} else {
			scores[j] = 0
		}
	}
	inv := float32(1 / sum)
	for j := range scores {
		scores[j] *= inv
	}
}

// LogSumExp returns log Σ exp(x[i]) in float64, for cross-entropy.
func LogSumExp(x []float32) float64 {
	maxv := math.Inf(-1)
	for _, v := range x {
		if float64(v) > maxv {
			maxv = float64(v)
		}
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - maxv)
	}
	return maxv + math.Log(s)
}
