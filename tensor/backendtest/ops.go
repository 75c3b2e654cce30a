package backendtest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// Tolerance says how close a backend must come. Exact asks for the CPU
// backend's bits; otherwise each float32 result may differ from the CPU's
// by Op·(1+|cpu value|) (a different summation order: GEMM blocking,
// reductions), and the model-level results from the HF references by Logits
// (logits, hidden states) and Loss (losses), the tolerances of the fixtures'
// specification (float32 against float64).
type Tolerance struct {
	Exact  bool
	Op     float64
	Logits float64
	Loss   float64
	// Except lists the op checks that use Op even when Exact is set (a
	// backend that reproduces the CPU's bits except in its GEMMs, say).
	Except []string
}

// Float32 is the tolerance for a float32 backend that sums in another
// order than the CPU: the fixture tolerances, and 1e-5 relative per op.
var Float32 = Tolerance{Op: 1e-5, Logits: 2e-4, Loss: 2e-5}

// Exact is the tolerance for a backend that must reproduce the CPU's bits.
var Exact = Tolerance{Exact: true, Logits: 2e-4, Loss: 2e-5}

// opCase runs one op on a backend: it uploads its inputs, calls the op and
// returns what it checks, downloaded.
type opCase struct {
	name string
	run  func(b tensor.Backend, in *inputs) []float32
}

// inputs are one case's host data, the same for both backends.
type inputs struct{ rng *rand.Rand }

func (in *inputs) vec(n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(in.rng.NormFloat64() * scale)
	}
	return v
}

// down downloads b and frees it.
func down(be tensor.Backend, b tensor.Buf) []float32 {
	h := slices.Clone(be.ToHost(b))
	be.Free(b)
	return h
}

// checkOp runs c on b and on ref (the CPU backend) and compares them
// within tol, then checks that a second run on b gives the same bits.
func checkOp(t *testing.T, b, ref tensor.Backend, c opCase, tol Tolerance) {
	want := c.run(ref, &inputs{rand.New(rand.NewPCG(1, 2))})
	got := c.run(b, &inputs{rand.New(rand.NewPCG(1, 2))})
	compare(t, c.name, got, want, tol.forOp(c.name))
	again := c.run(b, &inputs{rand.New(rand.NewPCG(1, 2))})
	if !SameBits(got, again) {
		t.Errorf("%s: a second run gives other bits", c.name)
	}
}

// Ops checks every Backend operation of b against the CPU backend, and the
// interface's promises that need no reference (zeros for a query with no
// visible key, Argmax's rules, float32 precision in MatMul).
func Ops(t *testing.T, b tensor.Backend, tol Tolerance) {
	ref := cpu.New(cpu.Options{})
	for _, c := range opCases() {
		t.Run(c.name, func(t *testing.T) { checkOp(t, b, ref, c, tol) })
	}
	t.Run("AttentionNoVisibleKey", func(t *testing.T) { attentionNoKey(t, b) })
	t.Run("AttentionNaN", func(t *testing.T) { attentionNaN(t, b) })
	t.Run("Argmax", func(t *testing.T) { argmaxRules(t, b) })
	t.Run("CrossEntropy", func(t *testing.T) { crossEntropy(t, b, ref, tol.forOp("CrossEntropy")) })
	t.Run("MatMulFullFloat32", func(t *testing.T) { matMulPrecision(t, b) })
	if hr, ok := b.(tensor.HostReader); ok {
		t.Run("ToHostInto", func(t *testing.T) { toHostInto(t, b, hr) })
	}
	if c, ok := b.(Counter); ok {
		if bufs, w, kv := c.Live(); bufs != 0 || w != 0 || kv != 0 {
			t.Errorf("after the op checks %d buffers, %d weights, %d caches are alive", bufs, w, kv)
		}
	}
}

// forOp is the tolerance of one op check.
func (tol Tolerance) forOp(name string) Tolerance {
	if tol.Exact && slices.Contains(tol.Except, name) {
		tol.Exact = false
	}
	return tol
}

// SameBits reports whether a and b hold the same float32 bit patterns (NaNs
// included, +0 and −0 told apart).
func SameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func compare(t *testing.T, what string, got, want []float32, tol Tolerance) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	if tol.Exact {
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d is %g, the CPU backend's %g (bit-identical required)", what, i, got[i], want[i])
			}
		}
		return
	}
	worst, at := 0.0, -1
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) != math.IsNaN(w) {
			t.Fatalf("%s: element %d is %g, the CPU backend's %g", what, i, g, w)
		}
		if d := math.Abs(g-w) / (1 + math.Abs(w)); d > worst {
			worst, at = d, i
		}
	}
	if worst > tol.Op {
		t.Errorf("%s: element %d is %g, the CPU backend's %g (relative error %.3g > %g)", what, at, got[at], want[at], worst, tol.Op)
	}
}

func opCases() []opCase {
	cases := append(matMulCases(), elementwiseCases()...)
	cases = append(cases, ropeCases()...)
	return append(cases, append(layerNormCases(), encoderCases()...)...)
}

// opN, opK and opRows are the cases' sizes, odd: no kernel may assume multiples of a tile.
const opN, opK, opRows = 70, 45, 5

// matMulCases are the memory and matrix-product cases.
func matMulCases() []opCase {
	const n, k, rows = opN, opK, opRows
	return []opCase{
		{"AllocIsZero", func(b tensor.Backend, in *inputs) []float32 { return down(b, b.Alloc(37)) }},
		{"FromHostToHost", func(b tensor.Backend, in *inputs) []float32 { return down(b, b.FromHost(in.vec(37, 1))) }},
		{"Copy", func(b tensor.Backend, in *inputs) []float32 {
			src, dst := b.FromHost(in.vec(40, 1)), b.Alloc(40)
			b.Copy(dst.Slice(3, 20), src.Slice(10, 27)) // views at offsets
			b.Free(src)
			return down(b, dst)
		}},
		{"MatMul", func(b tensor.Backend, in *inputs) []float32 {
			w := b.Pack(in.vec(n*k, 1), n, k, false)
			x, y := b.FromHost(in.vec(rows*k, 1)), b.Alloc(rows*n+3)
			b.MatMul(y.Slice(3, 3+rows*n), x, rows, w)
			b.FreeWeight(w)
			b.Free(x)
			return down(b, y)
		}},
		{"MatMulBF16", func(b tensor.Backend, in *inputs) []float32 {
			w := b.Pack(in.vec(n*k, 1), n, k, true)
			x, y := b.FromHost(in.vec(rows*k, 1)), b.Alloc(rows*n)
			b.MatMul(y, x, rows, w)
			b.FreeWeight(w)
			b.Free(x)
			return down(b, y)
		}},
		{"MatMulLarge", func(b tensor.Backend, in *inputs) []float32 {
			const n, k, rows = 300, 520, 33 // more than one GEMM block in each dimension
			w := b.Pack(in.vec(n*k, 0.1), n, k, false)
			x, y := b.FromHost(in.vec(rows*k, 1)), b.Alloc(rows*n)
			b.MatMul(y, x, rows, w)
			b.FreeWeight(w)
			b.Free(x)
			return down(b, y)
		}},
		{"MatMulNT", func(b tensor.Backend, in *inputs) []float32 {
			m, x, y := b.FromHost(in.vec(16*k, 1)), b.FromHost(in.vec(rows*k, 1)), b.Alloc(rows*16)
			b.MatMulNT(y, x, m, rows, 16, k)
			b.Free(m, x)
			return down(b, y)
		}},
		{"MatMulAdd", func(b tensor.Backend, in *inputs) []float32 { // into what y holds, at an offset
			w := b.Pack(in.vec(n*k, 1), n, k, false)
			x, y := b.FromHost(in.vec(rows*k, 1)), b.FromHost(in.vec(rows*n+3, 1))
			b.MatMulAdd(y.Slice(3, 3+rows*n), x, rows, w)
			b.FreeWeight(w)
			b.Free(x)
			return down(b, y)
		}},
		{"MatMulNTAdd", func(b tensor.Backend, in *inputs) []float32 {
			m, x, y := b.FromHost(in.vec(16*k, 1)), b.FromHost(in.vec(rows*k, 1)), b.FromHost(in.vec(rows*16+2, 1))
			b.MatMulNTAdd(y.Slice(2, 2+rows*16), x, m, rows, 16, k, 0.37)
			b.Free(m, x)
			return down(b, y)
		}},
		{"MatMulNTZeroK", func(b tensor.Backend, in *inputs) []float32 { // an empty sum overwrites y with zeros
			m, x, y := b.Alloc(0), b.Alloc(0), b.FromHost(in.vec(rows*16, 1))
			b.MatMulNT(y, x, m, rows, 16, 0)
			b.Free(m, x)
			return down(b, y)
		}},
	}
}

// elementwiseCases are the cases of rows, gathers and element-wise ops,
// norms, RoPE and attention.
func elementwiseCases() []opCase {
	const n, k, rows = opN, opK, opRows
	return []opCase{
		{"EmptyOps", func(b tensor.Backend, in *inputs) []float32 { // zero rows: nothing is written
			x, w := b.FromHost(in.vec(8, 1)), b.FromHost(in.vec(8, 1))
			b.RMSNorm(x, x, w, 0, 8, 1e-6)
			b.Add(x.Slice(0, 0), w.Slice(0, 0))
			b.SiLUMul(x.Slice(0, 0), w.Slice(0, 0))
			b.Free(w)
			return down(b, x)
		}},
		{"Rows", func(b tensor.Backend, in *inputs) []float32 {
			w := b.Pack(in.vec(n*k, 1), n, k, false)
			w16 := b.Pack(in.vec(n*k, 1), n, k, true)
			dst := b.Alloc(2 * 4 * k)
			b.Rows(dst.Slice(0, 4*k), w, []int{0, 69, 5, 5})
			b.Rows(dst.Slice(4*k, 8*k), w16, []int{69, 0, 31, 2})
			b.FreeWeight(w)
			b.FreeWeight(w16)
			return down(b, dst)
		}},
		{"Gather", func(b tensor.Backend, in *inputs) []float32 {
			src, dst := b.FromHost(in.vec(9*7, 1)), b.Alloc(4*7)
			b.Gather(dst, src, 7, []int{8, 0, 3, 3})
			b.Free(src)
			return down(b, dst)
		}},
		{"Add", func(b tensor.Backend, in *inputs) []float32 {
			y, x := b.FromHost(in.vec(1000, 1)), b.FromHost(in.vec(1000, 1))
			b.Add(y.Slice(1, 999), x.Slice(0, 998))
			b.Free(x)
			return down(b, y)
		}},
		{"AddScaled", func(b tensor.Backend, in *inputs) []float32 {
			y, x := b.FromHost(in.vec(1000, 1)), b.FromHost(in.vec(1000, 1))
			b.AddScaled(y.Slice(2, 1000), x.Slice(0, 998), 0.37)
			b.Free(x)
			return down(b, y)
		}},
		{"RMSNorm", func(b tensor.Backend, in *inputs) []float32 {
			x, w, dst := b.FromHost(in.vec(rows*k, 3)), b.FromHost(in.vec(k, 1)), b.Alloc(rows*k)
			b.RMSNorm(dst, x, w, rows, k, 1e-6)
			b.Free(x, w)
			return down(b, dst)
		}},
		{"RMSNormInPlaceHeads", func(b tensor.Backend, in *inputs) []float32 {
			const rows, hd = 21, 128 // Qwen3's per-head q/k norms: many narrow rows, in place
			x, w := b.FromHost(in.vec(rows*hd, 2)), b.FromHost(in.vec(hd, 1))
			b.RMSNorm(x, x, w, rows, hd, 1e-6)
			b.Free(w)
			return down(b, x)
		}},
		{"RMSNormInPlaceWide", func(b tensor.Backend, in *inputs) []float32 {
			const n = 2048 // a model's width: more elements than threads
			x, w := b.FromHost(in.vec(3*n, 1)), b.FromHost(in.vec(n, 1))
			b.RMSNorm(x, x, w, 3, n, 1e-5)
			b.Free(w)
			return down(b, x)
		}},
		{"SiLUMul", func(b tensor.Backend, in *inputs) []float32 {
			g := in.vec(5000, 4)
			g[0], g[1], g[2] = -100, 100, 0 // exp's saturation at both ends
			gate, up := b.FromHost(g), b.FromHost(in.vec(5000, 1))
			b.SiLUMul(gate, up)
			b.Free(up)
			return down(b, gate)
		}},
		{"Attention", func(b tensor.Backend, in *inputs) []float32 { return attention(b, in, 0) }},
		{"AttentionWindow", func(b tensor.Backend, in *inputs) []float32 { return attention(b, in, 3) }},
		{"AttentionLong", func(b tensor.Backend, in *inputs) []float32 { return attentionLong(b, in, 0) }},
		{"AttentionLongWindow", func(b tensor.Backend, in *inputs) []float32 { return attentionLong(b, in, 50) }},
	}
}

// ropeCases are the rotations, alone and after a per-head norm.
func ropeCases() []opCase {
	return []opCase{
		{"RoPE", func(b tensor.Backend, in *inputs) []float32 { return rope(b, in, 8, 3, 8, 4) }},
		// Heads of 40: 20 pairs, which do not divide a block of 256 threads;
		// 28 rows span several blocks, the last one partial.
		{"RoPEManyRows", func(b tensor.Backend, in *inputs) []float32 { return rope(b, in, 28, 3, 40, 7) }},
		// Qwen3's q/k heads of 128 over rows that end in a partial block of
		// 8 heads; heads of 40; heads of 300, wider than a warp's norm.
		{"RMSNormRoPE", func(b tensor.Backend, in *inputs) []float32 { return normRoPE(b, in, 7, 3, 128, 5) }},
		{"RMSNormRoPENarrow", func(b tensor.Backend, in *inputs) []float32 { return normRoPE(b, in, 9, 2, 40, 9) }},
		{"RMSNormRoPEWide", func(b tensor.Backend, in *inputs) []float32 { return normRoPE(b, in, 3, 2, 300, 2) }},
	}
}

// attentionCase is a run of Attention calls through one cache: sequences
// left-padded by pad[s] slots, query heads on kvHeads kv heads of width hd,
// and steps of new tokens.
type attentionCase struct {
	heads, kvHeads, hd, capacity int
	pad                          []int
	steps                        []struct{ start, tokens int }
}

// rope applies RoPE to random x [rows][heads·hd] with a random table of
// tableRows rows and returns x.
func rope(b tensor.Backend, in *inputs, rows, heads, hd, tableRows int) []float32 {
	x := b.FromHost(in.vec(rows*heads*hd, 1))
	cos, sin := b.FromHost(in.vec(tableRows*hd/2, 1)), b.FromHost(in.vec(tableRows*hd/2, 1))
	b.RoPE(x, rows, heads, hd, cos, sin, tableRows)
	b.Free(cos, sin)
	return down(b, x)
}

// normRoPE applies a per-head RMSNorm then RoPE to random x
// [rows][heads·hd] and returns x: in one call where b is a
// tensor.NormRoPE, else as RMSNorm then RoPE (the CPU's reference).
func normRoPE(b tensor.Backend, in *inputs, rows, heads, hd, tableRows int) []float32 {
	x, w := b.FromHost(in.vec(rows*heads*hd, 2)), b.FromHost(in.vec(hd, 1))
	cos, sin := b.FromHost(in.vec(tableRows*hd/2, 1)), b.FromHost(in.vec(tableRows*hd/2, 1))
	if f, ok := b.(tensor.NormRoPE); ok {
		f.RMSNormRoPE(x, w, rows, heads, hd, 1e-6, cos, sin, tableRows)
	} else {
		b.RMSNorm(x, x, w, rows*heads, hd, 1e-6)
		b.RoPE(x, rows, heads, hd, cos, sin, tableRows)
	}
	b.Free(w, cos, sin)
	return down(b, x)
}

// attention runs a prefill of 6 tokens and two decode steps through one
// cache, for 3 sequences (the second left-padded by 2, the third by 7, so its
// first query of the prefill sees no key), 4 query heads on 2 kv heads, and
// returns every output.
func attention(b tensor.Backend, in *inputs, window int) []float32 {
	return attentionCase{heads: 4, kvHeads: 2, hd: 8, capacity: 8, pad: []int{0, 2, 7},
		steps: []struct{ start, tokens int }{{0, 6}, {6, 1}, {7, 1}}}.run(b, in, window)
}

// attentionLong runs a prefill of 150 tokens, then a chunk of 10 after them,
// for 2 sequences (the second left-padded by 37), 4 query heads on 2 kv
// heads of width 40: more keys and queries than a GPU kernel's block takes
// at once, and a head width that is no multiple of 32.
func attentionLong(b tensor.Backend, in *inputs, window int) []float32 {
	return attentionCase{heads: 4, kvHeads: 2, hd: 40, capacity: 160, pad: []int{0, 37},
		steps: []struct{ start, tokens int }{{0, 150}, {150, 10}}}.run(b, in, window)
}

// run makes the calls (in layer 1 of a 2-layer cache) and returns every
// output.
func (c attentionCase) run(b tensor.Backend, in *inputs, window int) []float32 {
	seqs := len(c.pad)
	mask := make([]int, seqs*c.capacity)
	for s, pad := range c.pad {
		for i := pad; i < c.capacity; i++ {
			mask[s*c.capacity+i] = 1
		}
	}
	cache := b.NewKVCache(seqs, c.kvHeads, c.capacity, c.hd, 2)
	defer b.FreeKVCache(cache)
	var outs []float32
	for _, step := range c.steps {
		nq := seqs * step.tokens
		q, k, v := b.FromHost(in.vec(nq*c.heads*c.hd, 1)), b.FromHost(in.vec(nq*c.kvHeads*c.hd, 1)), b.FromHost(in.vec(nq*c.kvHeads*c.hd, 1))
		out := b.Alloc(nq * c.heads * c.hd)
		b.Attention(out, q, k, v, cache, 1, tensor.AttentionArgs{Seqs: seqs, Tokens: step.tokens, Heads: c.heads, KVHeads: c.kvHeads,
			HeadDim: c.hd, Start: step.start, Mask: mask, Window: window, Scale: float32(1 / math.Sqrt(float64(c.hd)))})
		b.Free(q, k, v)
		outs = append(outs, down(b, out)...)
	}
	return outs
}

// attentionNoKey: a sequence that is all padding so far gets exact zeros.
func attentionNoKey(t *testing.T, b tensor.Backend) {
	const heads, hd, capacity = 2, 4, 4
	in := &inputs{rand.New(rand.NewPCG(3, 4))}
	c := b.NewKVCache(1, 1, capacity, hd, 1)
	defer b.FreeKVCache(c)
	q, k, v := b.FromHost(in.vec(2*heads*hd, 1)), b.FromHost(in.vec(2*hd, 1)), b.FromHost(in.vec(2*hd, 1))
	out := b.FromHost(in.vec(2*heads*hd, 1)) // not zero before: the op must write zeros
	b.Attention(out, q, k, v, c, 0, tensor.AttentionArgs{Seqs: 1, Tokens: 2, Heads: heads, KVHeads: 1, HeadDim: hd,
		Mask: []int{0, 0, 1, 1}, Scale: 0.5})
	b.Free(q, k, v)
	for i, x := range down(b, out) {
		if x != 0 || math.Signbit(float64(x)) {
			t.Fatalf("output %d of a query with no visible key is %g, want +0", i, x)
		}
	}
}

// attentionNaN: a NaN score makes its query's output NaN, as PyTorch's
// softmax does, whether every score of the row is NaN (a NaN in the query)
// or one (a NaN in a key); never the zeros of a query that sees no key,
// which would hide a NaN weight. Queries whose scores are finite are not
// touched. A prefill of 6 tokens, 2 heads on 1 kv head.
func attentionNaN(t *testing.T, b tensor.Backend) {
	const tokens, heads, hd = 6, 2, 8
	in := &inputs{rand.New(rand.NewPCG(5, 6))}
	nan := float32(math.NaN())
	qv, kv := in.vec(tokens*heads*hd, 1), in.vec(tokens*hd, 1)
	for d := range hd {
		qv[(1*heads+0)*hd+d] = nan // token 1, head 0: every score of its row NaN
	}
	kv[3*hd+2] = nan // key 3: one NaN score in the rows of tokens 3 to 5
	c := b.NewKVCache(1, 1, tokens, hd, 1)
	defer b.FreeKVCache(c)
	q, k, v := b.FromHost(qv), b.FromHost(kv), b.FromHost(in.vec(tokens*hd, 1))
	out := b.Alloc(tokens * heads * hd)
	b.Attention(out, q, k, v, c, 0, tensor.AttentionArgs{Seqs: 1, Tokens: tokens, Heads: heads, KVHeads: 1, HeadDim: hd,
		Mask: []int{1, 1, 1, 1, 1, 1}, Scale: 0.5})
	b.Free(q, k, v)
	got := down(b, out)
	for tok := range tokens {
		for h := range heads {
			wantNaN := tok == 1 && h == 0 || tok >= 3
			for d := range hd {
				if x := got[(tok*heads+h)*hd+d]; (x != x) != wantNaN {
					t.Errorf("token %d, head %d, output %d: %g, want NaN %v", tok, h, d, x, wantNaN)
				}
			}
		}
	}
}

// toHostInto: a view read back into a longer slice fills its start with
// the view's values, returns that start in the caller's memory and leaves
// the rest as it was.
func toHostInto(t *testing.T, b tensor.Backend, hr tensor.HostReader) {
	in := &inputs{rand.New(rand.NewPCG(5, 6))}
	vals := in.vec(40, 1)
	x := b.FromHost(vals)
	defer b.Free(x)
	dst := slices.Repeat([]float32{-7}, 32)
	got := hr.ToHostInto(x.Slice(3, 30), dst)
	if len(got) != 27 || &got[0] != &dst[0] {
		t.Fatalf("ToHostInto of 27 values into 32 returned %d values, in the caller's slice %v", len(got), len(got) > 0 && &got[0] == &dst[0])
	}
	if !SameBits(got, vals[3:30]) || !SameBits(dst[27:], slices.Repeat([]float32{-7}, 5)) {
		t.Errorf("ToHostInto wrote %v, want %v then the 5 values -7 as they were", dst, vals[3:30])
	}
}

func argmaxRules(t *testing.T, b tensor.Backend) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	const w = 300 // wider than a block of threads
	rows := [][]float32{
		make([]float32, w),               // all equal: the first
		make([]float32, w),               // a tie of the maximum at 17 and 250: 17
		make([]float32, w),               // NaN in column 0 keeps it
		make([]float32, w),               // NaN elsewhere never wins: 299
		make([]float32, w),               // all -Inf: 0
		make([]float32, w),               // +Inf at 123
		make([]float32, w),               // negative values, maximum at 299
		append([]float32{}, nanRow()...), // NaN everywhere: 0
	}
	rows[1][17], rows[1][250] = 5, 5
	rows[2][0], rows[2][9] = nan, 3
	rows[3][5], rows[3][299] = nan, 1
	for i := range rows[4] {
		rows[4][i] = -inf
	}
	rows[5][123], rows[5][124] = inf, 1e30
	for i := range rows[6] {
		rows[6][i] = -1000 + float32(i)
	}
	want := []int{0, 17, 0, 299, 0, 123, 299, 0}
	var flat []float32
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x := b.FromHost(flat)
	got := b.Argmax(x, len(rows), w)
	b.Free(x)
	if !slices.Equal(got, want) {
		t.Errorf("Argmax = %v, want %v", got, want)
	}
}

func nanRow() []float32 {
	r := make([]float32, 300)
	for i := range r {
		r[i] = float32(math.NaN())
	}
	return r
}

func crossEntropy(t *testing.T, b, ref tensor.Backend, tol Tolerance) {
	in := &inputs{rand.New(rand.NewPCG(5, 6))}
	const rows, width = 7, 1000
	l := in.vec(rows*width, 5)
	ids, targets := []int{6, 0, 3, 3}, []int{999, 0, 17, 500}
	run := func(be tensor.Backend) []float64 {
		x := be.FromHost(l)
		defer be.Free(x)
		return be.CrossEntropy(x, width, ids, targets)
	}
	got, want := run(b), run(ref)
	for i := range want {
		exact := math.Float64bits(got[i]) == math.Float64bits(want[i])
		if tol.Exact && !exact || !tol.Exact && math.Abs(got[i]-want[i]) > tol.Op*(1+math.Abs(want[i])) {
			t.Errorf("CrossEntropy[%d] = %.17g, the CPU backend's %.17g", i, got[i], want[i])
		}
	}
}

// matMulPrecision: 1 + 2⁻¹⁵ is a float32 that a TF32 product (10-bit
// mantissa) rounds to 1, so MatMul must give 1 + 2⁻¹⁵ exactly, and a
// 2⁻²⁰-sized term on top of 1 must survive the sum.
func matMulPrecision(t *testing.T, b tensor.Backend) {
	const k = 64
	a := float32(1 + math.Ldexp(1, -15))
	x, w := make([]float32, k), make([]float32, 2*k)
	x[0] = a
	w[0] = 1 // row 0: a·1
	w[k] = 1 // row 1: a·1 + 2⁻²⁰·1
	x[1] = float32(math.Ldexp(1, -20))
	w[k+1] = 1
	for _, bf16 := range []bool{false, true} {
		wt := b.Pack(w, 2, k, bf16)
		xb, y := b.FromHost(x), b.Alloc(2)
		b.MatMul(y, xb, 1, wt)
		got := down(b, y)
		b.Free(xb)
		b.FreeWeight(wt)
		want0 := a // row 0 has x[1]·w[1] = 2⁻²⁰·0
		want1 := float32(float64(a) + math.Ldexp(1, -20))
		if got[0] != want0 || got[1] != want1 {
			t.Errorf("MatMul (bf16 weights %v) gives %.10g, %.10g; full float32 gives %.10g, %.10g (reduced precision such as TF32?)",
				bf16, got[0], got[1], want0, want1)
		}
	}
}
