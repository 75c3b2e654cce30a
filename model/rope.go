package model

import (
	"math"

	"github.com/meazo-go/meazo/tensor"
)

// ropeInvFreq returns HF's inv_freq buffer for one head: 1/θ^(2i/d) for
// i < d/2, computed in float32 as modeling_rope_utils does, then llama3's
// or linear frequency scaling when the config asks for it (YaRN's are
// computed apart).
func ropeInvFreq(c *Config) []float32 {
	if c.Yarn != nil {
		return yarnInvFreq(c.HeadDim, float32(c.RopeTheta), c.Yarn)
	}
	d := c.HeadDim
	inv := make([]float32, d/2)
	base := float32(c.RopeTheta)
	for i := range inv {
		exp := float32(2*i) / float32(d)
		inv[i] = 1 / float32(math.Pow(float64(base), float64(exp)))
	}
	if s := c.RopeScaling; s != nil {
		llama3Scale(inv, s)
	}
	if f := float32(c.RopeLinear); f != 0 {
		for i := range inv {
			inv[i] /= f // _compute_linear_scaling_rope_parameters, in float32
		}
	}
	return inv
}

// llama3Scale applies Llama 3.1's frequency-dependent scaling in place
// (modeling_rope_utils._compute_llama3_parameters): long wavelengths are
// divided by factor, short ones kept, and the band between is interpolated.
func llama3Scale(inv []float32, s *RopeScaling) {
	factor := float32(s.Factor)
	lowFF, highFF := float32(s.LowFreqFactor), float32(s.HighFreqFactor)
	orig := float32(s.OriginalMaxPositionEmbeddings)
	lowWavelen := orig / lowFF
	highWavelen := orig / highFF
	for i, f := range inv {
		wavelen := float32(2*math.Pi) / f
		switch {
		case wavelen > lowWavelen:
			inv[i] = f / factor
		case wavelen < highWavelen:
			// high frequency: unchanged
		default:
			smooth := (orig/wavelen - lowFF) / (highFF - lowFF)
			// The explicit conversions round each product, as PyTorch
			// does: without them the compiler may fuse the last
			// multiply-add (it does on arm64).
			inv[i] = float32((1-smooth)*f/factor) + float32(smooth*f)
		}
	}
}

// ropeTable holds cos and sin for a list of positions, [len(pos)][headDim/2]
// (HF's table repeats each half twice: cat(freqs, freqs)).
type ropeTable struct {
	half, rows int
	cos, sin   []float32
}

// newRopeTable computes the angles pos·inv_freq in float32 and their cos/sin
// rounded to float32, as HF's rotary embedding does with autocast off, each
// times scale (YaRN's attention factor, 1 otherwise) in float32.
func newRopeTable(inv []float32, positions []int, scale float32) *ropeTable {
	half := len(inv)
	t := &ropeTable{half: half, rows: len(positions), cos: make([]float32, len(positions)*half), sin: make([]float32, len(positions)*half)}
	for p, pos := range positions {
		for i, f := range inv {
			angle := float32(pos) * f
			t.cos[p*half+i] = float32(math.Cos(float64(angle))) * scale
			t.sin[p*half+i] = float32(math.Sin(float64(angle))) * scale
		}
	}
	return t
}

// rope is a RoPE table as the backend reads it. qcos and qsin, when not
// nil, are the queries' table: Ministral-3's llama-4 scale folded in.
type rope struct {
	cos, sin   tensor.Buf
	qcos, qsin tensor.Buf
	rows       int
}

// newRope computes the table for positions (rows of tn tokens whose first
// sits at cache slot start) and hands it to the backend; nil for a model
// without RoPE (OPT's positions are learned embeddings).
func (m *Model) newRope(positions []int, start, tn int) *rope {
	if m.invFreq == nil {
		return nil
	}
	t := newRopeTable(m.invFreq, positions, m.ropeScale())
	r := &rope{cos: m.Backend.FromHost(t.cos), sin: m.Backend.FromHost(t.sin), rows: t.rows}
	if q := m.llama4Table(t, start, tn); q != nil {
		r.qcos, r.qsin = m.Backend.FromHost(q.cos), m.Backend.FromHost(q.sin)
	}
	return r
}

// queryTable returns the cos and sin that rotate the queries.
func (r *rope) queryTable() (cos, sin tensor.Buf) {
	if r.qcos != nil {
		return r.qcos, r.qsin
	}
	return r.cos, r.sin
}

func (r *rope) free(be tensor.Backend) {
	if r == nil {
		return
	}
	be.Free(r.cos, r.sin)
	if r.qcos != nil {
		be.Free(r.qcos, r.qsin)
	}
}
