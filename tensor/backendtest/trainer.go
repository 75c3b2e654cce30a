package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/update"
)

// Trainer checks a backend's tensor.Trainer operations (full-parameter ZO)
// against references that need no other backend: the perturbed matrix a
// product reads (multiplied by the identity: one nonzero term per output,
// exact in any summation order), row lookup and vector equal, bit for bit,
// the perturbed values made on the host (noise.Perturbed of the noise
// contract's values); a perturbed product equals what the backend's own
// MatMul gives on those values packed, bit for bit if tol.Exact, else
// within tol.Op (a GPU's GEMM may sum in another order for a segment's rows
// within a larger product); an update moves every element, and its
// optimizer state, bit for bit as package update's rules do on the host,
// and its sum of squares agrees up to summation order. Shapes are ragged
// (N not a multiple of 32, K past the backends' K blocks: 1100 past the
// CPU's noise depth, 4100 past its super-block of 4096, offsets not
// multiples of 4, 9×35: rows and the whole off 4-element boundaries
// where the offset is on one), weights float32 and bfloat16.
func Trainer(t *testing.T, b tensor.Backend, tol Tolerance) {
	tr, ok := b.(tensor.Trainer)
	if !ok {
		t.Fatalf("backend %s does not implement tensor.Trainer", b.Name())
	}
	shapes := []struct{ n, k int }{{70, 1100}, {33, 96}, {64, 512}, {9, 35}, {9, 4100}}
	if testing.Short() { // under emulation (scripts/test_cpus.sh): the CPU's two slices are native CI's
		shapes = shapes[:4]
	}
	for _, sh := range shapes {
		for _, bf16 := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d", sh.n, sh.k)
			if bf16 {
				name += "-bf16"
			}
			t.Run("PerturbedMatrix/"+name, func(t *testing.T) { perturbedMatrix(t, b, tr, sh.n, sh.k, bf16) })
			t.Run("MatMulPerturbed/"+name, func(t *testing.T) { matMulPerturbed(t, b, tr, sh.n, sh.k, bf16, tol) })
			t.Run("RowsPerturbed/"+name, func(t *testing.T) { rowsPerturbed(t, b, tr, sh.n, sh.k, bf16) })
			t.Run("UpdateWeight/"+name, func(t *testing.T) { updateWeight(t, b, tr, sh.n, sh.k, bf16) })
		}
	}
	t.Run("Perturb", func(t *testing.T) { perturbVector(t, b, tr) })
	for _, bf16 := range []bool{false, true} {
		t.Run(fmt.Sprintf("UpdateVector/bf16=%v", bf16), func(t *testing.T) { updateVector(t, b, tr, bf16) })
	}
}

// trainerRNG is the suite's fixed source of test data.
func trainerRNG() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

// hostMatrix returns a random [n][k] matrix, bfloat16 values if bf16.
func hostMatrix(rng *rand.Rand, n, k int, bf16 bool) []float32 {
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
		if bf16 {
			w[i] = update.BF16ToFloat32(uint16(math.Float32bits(w[i]) >> 16))
		}
	}
	return w
}

// perturbedHost is w [n·k] (row-major) as p makes it.
func perturbedHost(w []float32, p *tensor.Perturbation) []float32 {
	if p == nil {
		return slices.Clone(w)
	}
	z := make([]float32, len(w))
	p.Stream.FillRange(z, int(p.Offset), p.Dist, p.Norm)
	out := make([]float32, len(w))
	for i, v := range w {
		out[i] = noise.Perturbed(v, p.Scale, z[i])
	}
	return out
}

// testPerturbation is a perturbation at an offset that keeps rows off
// Philox's 4-element blocks (1234), except for Normal, whose offset (4096)
// puts each row's start on a block, as a model's float32 tensors have it:
// the CPU's panel-shaped noise kernel draws only those.
func testPerturbation(dir uint32, scale float64, dist noise.Dist) *tensor.Perturbation {
	off := int64(1234)
	if dist == noise.Normal {
		off = 4096
	}
	return &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: noise.StreamSeed(5, 3), Step: 9, Dir: dir},
		Dist: dist, Norm: 1, Offset: off}, Scale: scale}
}

// perturbedMatrix multiplies unit vectors by W as each segment reads it:
// the row e_c·W_sᵀ is column c of W_s, each element the one nonzero product
// of its sum, so whatever the GEMM's order the product shows the perturbed
// elements' bits (noise.Perturbed of every distribution's values) of every
// third column and the last (every position in a Philox block: 3 and 4 are
// coprime), a third of the product by the identity.
func perturbedMatrix(t *testing.T, b tensor.Backend, tr tensor.Trainer, n, k int, bf16 bool) {
	w := hostMatrix(trainerRNG(), n, k, bf16)
	var cols []int
	for c := 0; c < k; c += 3 {
		cols = append(cols, c)
	}
	if cols[len(cols)-1] != k-1 {
		cols = append(cols, k-1)
	}
	sphere := testPerturbation(2, -1e-2, noise.Sphere)
	sphere.Norm = 3.5
	m := len(cols)
	segs := []tensor.Segment{{Rows: m, P: testPerturbation(0, 1e-3, noise.Normal)}, {Rows: m, P: testPerturbation(0, -1e-3, noise.Normal)},
		{Rows: m}, {Rows: m, P: testPerturbation(1, 1e-2, noise.Ternary)}, {Rows: m, P: sphere}}
	x := make([]float32, len(segs)*m*k)
	for s := range segs {
		for i, c := range cols {
			x[(s*m+i)*k+c] = 1
		}
	}
	wb, xb, yb := b.Pack(w, n, k, bf16), b.FromHost(x), b.Alloc(len(segs)*m*n)
	tr.MatMulPerturbed(yb, xb, wb, segs, false)
	got := down(b, yb)
	b.Free(xb)
	b.FreeWeight(wb)
	for s, seg := range segs {
		want := perturbedHost(w, seg.P)
		for i, c := range cols {
			for j := range n {
				if g := got[(s*m+i)*n+j]; math.Float32bits(g) != math.Float32bits(want[j*k+c]) {
					t.Fatalf("segment %d: W[%d][%d] is read as %g, noise.Perturbed gives %g", s, j, c, g, want[j*k+c])
				}
			}
		}
	}
}

func matMulPerturbed(t *testing.T, b tensor.Backend, tr tensor.Trainer, n, k int, bf16 bool, tol Tolerance) {
	rng := trainerRNG()
	w := hostMatrix(rng, n, k, bf16)
	segs := []tensor.Segment{
		{Rows: 3, P: testPerturbation(0, 1e-3, noise.Normal)},
		{Rows: 5, P: testPerturbation(0, -1e-3, noise.Normal)},
		{Rows: 2},
		{Rows: 4, P: testPerturbation(1, 1e-3, noise.Rademacher)},
		{Rows: 1, P: testPerturbation(1, -1e-3, noise.Rademacher)},
		{Rows: 3, P: testPerturbation(2, 1e-3, noise.Normal)}, // a + and − of as many rows each
		{Rows: 3, P: testPerturbation(2, -1e-3, noise.Normal)},
	}
	rows := 21
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y0 := make([]float32, rows*n)
	for i := range y0 {
		y0[i] = float32(rng.NormFloat64())
	}
	for _, add := range []bool{false, true} {
		wb := b.Pack(w, n, k, bf16)
		xb, yb := b.FromHost(x), b.FromHost(slices.Clone(y0))
		tr.MatMulPerturbed(yb, xb, wb, segs, add)
		got := down(b, yb)
		// The reference: each segment's rows against its perturbed matrix,
		// packed, through the backend's own MatMul (or MatMulAdd).
		var want []float32
		lo := 0
		for _, s := range segs {
			pw := b.Pack(perturbedHost(w, s.P), n, k, bf16 && s.P == nil)
			xs := b.FromHost(x[lo*k : (lo+s.Rows)*k])
			ys := b.FromHost(slices.Clone(y0[lo*n : (lo+s.Rows)*n]))
			if add {
				b.MatMulAdd(ys, xs, s.Rows, pw)
			} else {
				b.MatMul(ys, xs, s.Rows, pw)
			}
			want = append(want, down(b, ys)...)
			b.Free(xs)
			b.FreeWeight(pw)
			lo += s.Rows
		}
		b.Free(xb)
		b.FreeWeight(wb)
		if !tol.Exact {
			compare(t, fmt.Sprintf("add=%v: MatMulPerturbed against MatMul on the perturbed matrix", add), got, want, tol)
		} else if i := firstDiffBits(got, want); i >= 0 {
			t.Fatalf("add=%v: element %d (row %d) is %g, the perturbed matrix's MatMul gives %g", add, i, i/n, got[i], want[i])
		}
	}
}

func rowsPerturbed(t *testing.T, b tensor.Backend, tr tensor.Trainer, n, k int, bf16 bool) {
	w := hostMatrix(trainerRNG(), n, k, bf16)
	ids := []int{5, 0, n - 1, 5}
	p := testPerturbation(2, -1e-2, noise.Normal)
	wb := b.Pack(w, n, k, bf16)
	dst := b.Alloc(len(ids) * k)
	tr.RowsPerturbed(dst, wb, ids, p)
	got := down(b, dst)
	pw := b.Pack(perturbedHost(w, p), n, k, false)
	ref := b.Alloc(len(ids) * k)
	b.Rows(ref, pw, ids)
	want := down(b, ref)
	b.FreeWeight(wb)
	b.FreeWeight(pw)
	if i := firstDiffBits(got, want); i >= 0 {
		t.Fatalf("element %d is %g, want %g", i, got[i], want[i])
	}
}

func perturbVector(t *testing.T, b tensor.Backend, tr tensor.Trainer) {
	v := hostMatrix(trainerRNG(), 1, 130, false)
	for _, dist := range []noise.Dist{noise.Normal, noise.Sphere, noise.Ternary} {
		p := testPerturbation(0, 1e-3, dist)
		if dist == noise.Sphere {
			p.Norm = 3.5
		}
		src, dst := b.FromHost(v), b.Alloc(len(v))
		tr.Perturb(dst, src, p)
		got := down(b, dst)
		b.Free(src)
		if i := firstDiffBits(got, perturbedHost(v, p)); i >= 0 {
			t.Fatalf("%v: element %d differs", dist, i)
		}
	}
}

// testRules are the update rules the suite applies: each optimizer's form.
func testRules() []update.Rule {
	return []update.Rule{
		{Kind: update.SGD, LR: 0.5},
		{Kind: update.SGD, LR: 0.5, Momentum: 0.9, WeightDecay: 0.01},
		{Kind: update.Adam, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 0.1, C2: 0.001},
		{Kind: update.Adam, LR: 1e-3, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 0.001},
		{Kind: update.RAdaZO, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, C1: 1, C2: 1},
	}
}

// testUpdate is, at step 0, two directions' update of a tensor at offset
// 1234 (rows off Philox's blocks), and at step 1 one direction's at 4096
// (rows on them: the CPU then draws panel-shaped noise and, for SGD on
// float32, applies w·z without a ĝ buffer).
func testUpdate(rule update.Rule, step uint32) *tensor.Update {
	s := func(dir uint32) noise.Stream { return noise.Stream{Seed: noise.StreamSeed(3, 1), Step: step, Dir: dir} }
	u := &tensor.Update{Streams: []noise.Stream{s(0), s(1)}, Dist: noise.Normal, Norms: []float64{1, 1}, Offset: 1234,
		Weights: []float64{0.7, -0.2}, Rule: rule, Rounding: s(1<<32 - 1)}
	if step == 1 {
		u.Streams, u.Norms, u.Weights, u.Offset = u.Streams[:1], u.Norms[:1], u.Weights[:1], 4096
	}
	return u
}

// hostUpdate applies u to θ (row-major, bfloat16 values if bf16) and its
// state on the host, as the contract says, and returns Σ Δθ².
func hostUpdate(theta, m, v []float32, bf16 bool, u *tensor.Update) float64 {
	n := len(theta)
	ghat := make([]float64, n)
	z := make([]float32, n)
	for d, st := range u.Streams {
		st.FillRange(z, int(u.Offset), u.Dist, u.Norms[d])
		for i, zv := range z {
			ghat[i] += float64(u.Weights[d] * float64(zv))
		}
	}
	if !bf16 {
		return u.Rule.Apply(theta, ghat, m, v)
	}
	bits := make([]uint16, n)
	for i, x := range theta {
		bits[i] = uint16(math.Float32bits(x) >> 16)
	}
	words := make([]uint32, n)
	u.Rounding.FillBits(words, int(u.Offset))
	ss := u.Rule.ApplyBF16(bits, ghat, m, v, words)
	for i, h := range bits {
		theta[i] = update.BF16ToFloat32(h)
	}
	return ss
}

func updateWeight(t *testing.T, b tensor.Backend, tr tensor.Trainer, n, k int, bf16 bool) {
	for _, rule := range testRules() {
		w := hostMatrix(trainerRNG(), n, k, bf16)
		wb := b.Pack(w, n, k, bf16)
		var mb, vb tensor.Weight
		var m, v []float32
		if rule.HasM() {
			mb, m = tr.NewState(wb), make([]float32, n*k)
		}
		if rule.HasV() {
			vb, v = tr.NewState(wb), make([]float32, n*k)
		}
		// The second step starts from the state the first left; their sums
		// of squares are read together, added in call order.
		var want float64
		for step := range uint32(2) {
			u := testUpdate(rule, step)
			tr.UpdateWeight(wb, mb, vb, u)
			want += hostUpdate(w, m, v, bf16, u)
		}
		if got := tr.UpdateSquares(); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%+v: Σ Δθ² of two steps = %.17g, the host's %.17g", rule, got, want)
		}
		if got := tr.UpdateSquares(); got != 0 {
			t.Errorf("%+v: UpdateSquares again = %g, want 0", rule, got)
		}
		for _, c := range []struct {
			what string
			w    tensor.Weight
			want []float32
		}{{"θ", wb, w}, {"m", mb, m}, {"v", vb, v}} {
			if c.w == nil {
				continue
			}
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			dst := b.Alloc(n * k)
			b.Rows(dst, c.w, all)
			got := down(b, dst)
			if i := firstDiffBits(got, c.want); i >= 0 {
				t.Fatalf("%+v: %s[%d][%d] is %g, the host's %g", rule, c.what, i/k, i%k, got[i], c.want[i])
			}
			b.FreeWeight(c.w)
		}
	}
}

func updateVector(t *testing.T, b tensor.Backend, tr tensor.Trainer, bf16 bool) {
	for _, rule := range testRules() {
		x := hostMatrix(trainerRNG(), 1, 131, bf16)
		xb := b.FromHost(slices.Clone(x))
		var mb, vb tensor.Buf
		var m, v []float32
		if rule.HasM() {
			mb, m = b.Alloc(len(x)), make([]float32, len(x))
		}
		if rule.HasV() {
			vb, v = b.Alloc(len(x)), make([]float32, len(x))
		}
		for step := range uint32(2) {
			u := testUpdate(rule, step)
			tr.UpdateVector(xb, mb, vb, bf16, u)
			want := hostUpdate(x, m, v, bf16, u)
			if got := tr.UpdateSquares(); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%+v step %d: Σ Δθ² = %.17g, the host's %.17g", rule, step, got, want)
			}
		}
		for _, c := range []struct {
			what string
			b    tensor.Buf
			want []float32
		}{{"θ", xb, x}, {"m", mb, m}, {"v", vb, v}} {
			if c.b == nil {
				continue
			}
			if got := down(b, c.b); firstDiffBits(got, c.want) >= 0 {
				t.Fatalf("%+v: %s differs from the host's", rule, c.what)
			}
		}
	}
}

// firstDiffBits is the first index where a and b differ in bits, or -1.
func firstDiffBits(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
