package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/safetensors"
)

// bf16Case is a product by a bfloat16 weight: W [n][k] of bfloat16 values,
// x [rows][k] and y's starting values (for MatMulAdd), all random.
type bf16Case struct {
	rows, n, k int
	w, x, y0   []float32
}

func newBF16Case(rows, n, k int) *bf16Case {
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(m int, round bool) []float32 {
		v := make([]float32, m)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			if round {
				v[i] = safetensors.RoundBF16(v[i])
			}
		}
		return v
	}
	return &bf16Case{rows: rows, n: n, k: k, w: fill(n*k, true), x: fill(rows*k, false), y0: fill(rows*n, false)}
}

// product runs MatMul (or MatMulAdd onto y0) of x by the case's weight,
// packed bfloat16 or float32, with b's setting as it is.
func (c *bf16Case) product(b *Backend, x []float32, bf16, add bool) []float32 {
	wb := b.Pack(c.w, c.n, c.k, bf16)
	xb, yb := b.FromHost(slices.Clone(x)), b.FromHost(slices.Clone(c.y0))
	if add {
		b.MatMulAdd(yb, xb, c.rows, wb)
	} else {
		b.MatMul(yb, xb, c.rows, wb)
	}
	out := b.ToHost(yb)
	b.Free(xb, yb)
	b.FreeWeight(wb)
	return out
}

// rounded is x with every value rounded to bfloat16.
func rounded(x []float32) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = safetensors.RoundBF16(v)
	}
	return r
}

// TestEmulatedBF16Products: with Options.BF16Products a bfloat16 weight's
// products (MatMul, MatMulAdd) are, on the emulator bit for bit, SGEMM's by
// the weight widened of the activations rounded to bfloat16; a float32
// weight's products do not change; f32_to_bf16 rounds as
// safetensors.RoundBF16 does, edge values included.
func TestEmulatedBF16Products(t *testing.T) {
	b := newEmuBackend(t)
	c := newBF16Case(5, 7, 37)
	for _, add := range []bool{false, true} {
		b.bf16Products = false
		want := c.product(b, rounded(c.x), true, add)
		plain := c.product(b, c.x, true, add)
		f32 := c.product(b, c.x, false, add)
		b.bf16Products = true
		if got := c.product(b, c.x, true, add); firstDiff(got, want) >= 0 {
			i := firstDiff(got, want)
			t.Errorf("add %v: y[%d] = %g, SGEMM's of x rounded to bfloat16 %g", add, i, got[i], want[i])
		} else if firstDiff(got, plain) < 0 {
			t.Errorf("add %v: the same bits as the float32 product of x: the setting changed nothing", add)
		}
		if got := c.product(b, c.x, false, add); firstDiff(got, f32) >= 0 {
			t.Errorf("add %v: a float32 weight's product changed with BF16Products", add)
		}
	}

	edges := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1.00390625, 1.01171875, 1.0078125 + 1.0/(1<<16),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-39, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN()), 3.3895314e38}
	xb, nb := b.FromHost(edges), b.Alloc((len(edges)+1)/2) // two bfloat16 values a float32 slot
	func() {
		defer b.enter()()
		b.launch("f32_to_bf16", blocks1D(len(edges)), 256, 0, devPtr(dbuf(nb).ptr), devPtr(dbuf(xb).ptr), i64Arg(len(edges)))
	}()
	slots := b.ToHost(nb)
	b.Free(xb, nb)
	for i, v := range edges {
		got := uint16(math.Float32bits(slots[i/2]) >> (16 * (i % 2))) // little-endian: element 2j in the low half
		if want := uint16(math.Float32bits(safetensors.RoundBF16(v)) >> 16); got != want {
			t.Errorf("f32_to_bf16(%g) = %#04x, RoundBF16's %#04x", v, got, want)
		}
	}
	if bufs, weights, _ := b.Live(); bufs != 0 || weights != 0 {
		t.Errorf("%d buffers and %d weights left alive", bufs, weights)
	}
}

// TestGPUBF16Products: on a GPU, a bfloat16 weight's products with
// BF16Products (the tensor cores through cublasGemmEx, MatMul and
// MatMulAdd) against float64 sums of the same exact products of bfloat16
// numbers, at the widths of Ministral-3 14B's projections: each output
// within k·2⁻²⁴·Σ|w·x| (float32 accumulation in any order, truncating or
// not), the largest difference logged in units of that bound.
func TestGPUBF16Products(t *testing.T) {
	b := openOrSkip(t)
	defer func() { b.bf16Products = false }()
	for _, sh := range [][3]int{{24, 1024, 5120}, {64, 512, 16384}, {300, 256, 5120}, {7, 33, 96}} {
		c := newBF16Case(sh[0], sh[1], sh[2])
		xr := rounded(c.x)
		for _, add := range []bool{false, true} {
			b.bf16Products = true
			got := c.product(b, c.x, true, add)
			var worst float64
			for r := range c.rows {
				for j := range c.n {
					var sum, abs float64
					for l := range c.k {
						p := float64(c.w[j*c.k+l]) * float64(xr[r*c.k+l]) // exact
						sum, abs = sum+p, abs+math.Abs(p)
					}
					if add {
						sum += float64(c.y0[r*c.n+j])
						abs += math.Abs(float64(c.y0[r*c.n+j]))
					}
					bound := float64(c.k+1) * 0x1p-24 * abs
					worst = max(worst, math.Abs(float64(got[r*c.n+j])-sum)/bound)
				}
			}
			t.Logf("%d rows × %d×%d, add %v: largest difference from the float64 sums %.3g of the bound k·2⁻²⁴·Σ|w·x|", c.rows, c.n, c.k, add, worst)
			if worst > 1 {
				t.Errorf("%d rows × %d×%d, add %v: a product %.3g times the bound from the float64 sum", c.rows, c.n, c.k, add, worst)
			}
		}
	}
}

// widenedBlocks runs the case's plain product (BF16Products off) with
// bfloat16 W widened whole and in blocks of rowsPerBlock rows.
func (c *bf16Case) widenedBlocks(b *Backend, rowsPerBlock int, add bool) (whole, blocks []float32) {
	defer func(chunk int) { b.wideChunk, b.bf16Products = chunk, false }(b.wideChunk)
	b.bf16Products = false
	b.wideChunk = c.n * c.k
	whole = c.product(b, c.x, true, add)
	b.wideChunk = rowsPerBlock * c.k
	return whole, c.product(b, c.x, true, add)
}

// TestEmulatedWidenedBlocks: a bfloat16 weight widened for SGEMM a block of
// rows at a time (ragged: 3 rows of 7) gives the bits of the whole matrix
// widened, MatMul and MatMulAdd, and leaves no scratch alive.
func TestEmulatedWidenedBlocks(t *testing.T) {
	b := newEmuBackend(t)
	c := newBF16Case(5, 7, 37)
	for _, add := range []bool{false, true} {
		whole, blocks := c.widenedBlocks(b, 3, add)
		if i := firstDiff(blocks, whole); i >= 0 {
			t.Errorf("add %v: y[%d] = %g in blocks of 3 rows, %g whole", add, i, blocks[i], whole[i])
		}
	}
	if bufs, weights, _ := b.Live(); bufs != 0 || weights != 0 {
		t.Errorf("%d buffers and %d weights left alive", bufs, weights)
	}
}

// TestGPUWidenedBlocks: on a GPU, blocks of widened rows (cuBLAS may pick
// another kernel per block) within float32 rounding of the whole matrix's
// product, at an LM head's shape in blocks of 2,048 rows.
func TestGPUWidenedBlocks(t *testing.T) {
	b := openOrSkip(t)
	c := newBF16Case(48, 16384, 2048)
	for _, add := range []bool{false, true} {
		whole, blocks := c.widenedBlocks(b, 2048, add)
		var worst, scale float64
		for i := range whole {
			worst = max(worst, math.Abs(float64(blocks[i]-whole[i])))
			scale = max(scale, math.Abs(float64(whole[i])))
		}
		t.Logf("add %v: blocks of 2048 rows differ from the whole by at most %.3g of the largest output", add, worst/scale)
		if worst > 1e-5*scale {
			t.Errorf("add %v: blocks differ from the whole by %.3g of the largest output", add, worst/scale)
		}
	}
}
