// Package synth holds the paper's synthetic experiments (§5.1 and App. C):
// the zeroth-order optimizers of package zo on quadratics whose value is
// exact, so that what an optimizer does is seen without a model's noise.
//
//   - A Trace runs one optimizer on a diagonal quadratic ½ Σ h_i x_i², as a
//     spec file describes it, and writes one JSON line per step (the
//     projected gradients, the second moments, the point).
//   - WritePaper runs the paper's two experiments and writes their CSV
//     files, SVG figures and summary.md: the 9-dimensional quadratics of
//     Zhang et al. (2024) with full and block-cyclic updates over a grid of
//     learning rates, and the tracking of second moments (FO-Adam, ZO-Adam,
//     MEAZO) on block quadratics of growing dimension.
//
// cmd/meazo-synth is its command line. Every run is seeded: the same
// configuration writes the same bytes, whatever the number of threads.
package synth

import (
	"math"
	"math/rand/v2"
)

// quadratic is F(x) = ½ xᵀHx with block-diagonal H: blocks[b] lists the
// coordinates of block b and hb[b] is that block's dense symmetric matrix.
type quadratic struct {
	d      int
	blocks [][]int
	hb     [][][]float64
}

// diagonal returns F(x) = ½ Σ h_i x_i² as one block per coordinate.
func diagonal(h []float64) *quadratic {
	q := &quadratic{d: len(h)}
	for i, v := range h {
		q.blocks = append(q.blocks, []int{i})
		q.hb = append(q.hb, [][]float64{{v}})
	}
	return q
}

// rotatedBlocks returns blocks of consecutive coordinates, block b being
// Q_b diag(eig[b]) Q_bᵀ with Q_b a random orthogonal matrix drawn from rng.
func rotatedBlocks(eig [][]float64, rng *rand.Rand) *quadratic {
	q := &quadratic{}
	for _, lam := range eig {
		k := len(lam)
		idx := make([]int, k)
		for i := range idx {
			idx[i] = q.d + i
		}
		q.d += k
		Q := randomOrthogonal(k, rng)
		h := make([][]float64, k)
		for i := range h {
			h[i] = make([]float64, k)
			for j := range h[i] {
				for l := range k {
					h[i][j] += Q[i][l] * lam[l] * Q[j][l]
				}
			}
		}
		q.blocks = append(q.blocks, idx)
		q.hb = append(q.hb, h)
	}
	return q
}

// randomOrthogonal orthonormalises a Gaussian matrix's columns (Gram-Schmidt).
func randomOrthogonal(k int, rng *rand.Rand) [][]float64 {
	cols := make([][]float64, k)
	for c := range cols {
		for {
			v := make([]float64, k)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			for _, u := range cols[:c] {
				var dot float64
				for i := range v {
					dot += v[i] * u[i]
				}
				for i := range v {
					v[i] -= dot * u[i]
				}
			}
			var n float64
			for _, x := range v {
				n += x * x
			}
			if n = math.Sqrt(n); n > 1e-8 {
				for i := range v {
					v[i] /= n
				}
				cols[c] = v
				break
			}
		}
	}
	Q := make([][]float64, k) // Q[i][l] = column l, row i
	for i := range Q {
		Q[i] = make([]float64, k)
		for l := range k {
			Q[i][l] = cols[l][i]
		}
	}
	return Q
}

// value returns F(x) in float64.
func (q *quadratic) value(x []float64) float64 {
	var f float64
	for b, idx := range q.blocks {
		for i, ii := range idx {
			f += 0.5 * x[ii] * q.row(b, i, x)
		}
	}
	return f
}

// grad writes ∇F(x) = Hx into g.
func (q *quadratic) grad(x, g []float64) {
	for b, idx := range q.blocks {
		for i, ii := range idx {
			g[ii] = q.row(b, i, x)
		}
	}
}

// row returns (Hx) at the i-th coordinate of block b: the block's row i
// times its coordinates of x, summed in order.
func (q *quadratic) row(b, i int, x []float64) float64 {
	var s float64
	for j, jj := range q.blocks[b] {
		s += q.hb[b][i][j] * x[jj]
	}
	return s
}

// layout maps the flat vector x onto parameter groups: groups[g] lists the
// coordinates of group g, in order.
type layout struct {
	groups [][]int
	pos    [][2]int // coordinate -> (group, index in group)
}

func newLayout(d int, groups [][]int) *layout {
	l := &layout{groups: groups, pos: make([][2]int, d)}
	for g, idx := range groups {
		for k, i := range idx {
			l.pos[i] = [2]int{g, k}
		}
	}
	return l
}

func (l *layout) split(x []float64) [][]float32 {
	p := make([][]float32, len(l.groups))
	for g, idx := range l.groups {
		p[g] = make([]float32, len(idx))
		for k, i := range idx {
			p[g][k] = float32(x[i])
		}
	}
	return p
}

func (l *layout) flat(p [][]float32) []float64 {
	x := make([]float64, len(l.pos))
	for i, gk := range l.pos {
		x[i] = float64(p[gk[0]][gk[1]])
	}
	return x
}

// objective evaluates F on grouped float32 parameters.
func (l *layout) objective(q *quadratic) func(p [][]float32) float64 {
	return func(p [][]float32) float64 { return q.value(l.flat(p)) }
}
