package tensor

// This file is the GEMM API the model is written against. The implementation
// below is a plain reference loop; the fast kernels replace its internals.

// Packed is a frozen nn.Linear weight W [N][K] (HF layout: out × in) stored in
// the layout the GEMM kernel streams, so that y = x·Wᵀ needs no repacking per call.
type Packed struct {
	N, K int
	data []float32 // reference layout: row-major W
}

// Pack copies w (row-major [n][k]) into a Packed matrix.
func Pack(w []float32, n, k int) *Packed {
	if len(w) != n*k {
		panic("tensor.Pack: len(w) != n*k")
	}
	d := make([]float32, n*k)
	copy(d, w)
	return &Packed{N: n, K: k, data: d}
}

// Row copies row n of W (length K) into dst. The model uses it to read an
// embedding row out of a tied, packed embedding matrix.
func (p *Packed) Row(dst []float32, n int) {
	copy(dst, p.data[n*p.K:(n+1)*p.K])
}

// MatMulPacked computes y[m][N] = x[m][K] · Wᵀ, overwriting y.
func MatMulPacked(y, x []float32, m int, w *Packed) {
	for i := 0; i < m; i++ {
		xi := x[i*w.K : (i+1)*w.K]
		for j := 0; j < w.N; j++ {
			wj := w.data[j*w.K : (j+1)*w.K]
			var s float32
			for k, v := range xi {
				s += v * wj[k]
			}
			y[i*w.N+j] = s
		}
	}
}

// MatMulNT computes c[m][n] = a[m][k] · b[n][k]ᵀ for unpacked b, overwriting c.
// Used where the right-hand side changes every call (attention scores, LoRA).
func MatMulNT(c, a, b []float32, m, n, k int) {
	for i := 0; i < m; i++ {
		ai := a[i*k : (i+1)*k]
		for j := 0; j < n; j++ {
			bj := b[j*k : (j+1)*k]
			var s float32
			for kk, v := range ai {
				s += v * bj[kk]
			}
			c[i*n+j] = s
		}
	}
}

// MatMulNN computes c[m][n] = a[m][k] · b[k][n], overwriting c.
func MatMulNN(c, a, b []float32, m, n, k int) {
	for i := 0; i < m*n; i++ {
		c[i] = 0
	}
	for i := 0; i < m; i++ {
		ci := c[i*n : (i+1)*n]
		for kk := 0; kk < k; kk++ {
			av := a[i*k+kk]
			bk := b[kk*n : (kk+1)*n]
			for j, bv := range bk {
				ci[j] += av * bv
			}
		}
	}
}

// threads is the number of worker goroutines the kernels use (0 = GOMAXPROCS).
var threads int

// SetThreads sets the number of worker goroutines the kernels use; n <= 0
// means runtime.GOMAXPROCS(0). Results do not depend on it.
func SetThreads(n int) { threads = n }
