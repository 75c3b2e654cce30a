package lora

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
)

// Merging follows PEFT 0.15's lora.Linear.merge, so that a merged model
// holds PEFT's merge_and_unload weights: the delta is get_delta_weight's,
// (B @ A) · scaling, a float32 product (PEFT upcasts a bf16 or fp16
// adapter to float32 when it loads one: autocast_adapter_dtype) scaled in
// float32, and it is added to the weight in float32, the sum rounded once
// to the weight's dtype (torch computes weight.data += delta, a bfloat16
// weight and a float32 delta, in float32). Each element of B·A is summed
// as a CPU GEMM sums it: float32 fused multiply-adds in the order of the
// rank, which gave torch's (1.13, CPU) bits on every element of the
// fixtures (testdata/make_merge_fixtures.py). Another BLAS or a GPU may
// round the r-term sums otherwise in their last bit.

// MergeInto merges the adapter into m's own q_proj and v_proj weights, as
// PEFT's merge_and_unload does, and takes the adapter off m: W' = W +
// scale·B·A, each merged weight stored as it was loaded (bfloat16 when the
// checkpoint stores it so and m holds it so: model.LoadOptions.BF16Weights;
// float32 otherwise). Model.Save then writes a plain model. m must hold its
// projections unstacked (model.LoadOptions.Unstacked), as Save needs.
func (a *Adapter) MergeInto(m *model.Model) error {
	ts, err := m.Tensors()
	if err != nil {
		return fmt.Errorf("merge the adapter: %w", err)
	}
	view := a.View(a.params)
	for l := range m.Layers {
		attn := &m.Layers[l].Attn
		for _, p := range []struct {
			target string
			w      *tensor.Weight
			lo     *model.LoRA
		}{{"q_proj", &attn.Q, view.Layers[l].Q}, {"v_proj", &attn.V, view.Layers[l].V}} {
			if p.lo == nil {
				continue
			}
			i := slices.IndexFunc(ts, func(t model.Tensor) bool {
				return t.Layer == l && strings.HasSuffix(t.Name, ".self_attn."+p.target+".weight")
			})
			if i < 0 {
				return fmt.Errorf("merge the adapter: layer %d has no %s weight", l, p.target)
			}
			merged := mergeRows(m.Backend, *p.w, []int{0}, []*model.LoRA{p.lo}, ts[i].BF16)
			m.Backend.FreeWeight(*p.w)
			*p.w = merged
		}
	}
	m.Adapter = nil
	return nil
}

// Merge returns a copy of m whose q_proj/v_proj weights include the adapter
// (W + scale·B·A, in float32), so evaluation runs without the low-rank
// terms. m itself is unchanged; the copy shares every other weight with it.
func (a *Adapter) Merge(m *model.Model) *model.Model { return Merge(m, a.View(a.params)) }

// Merge returns a copy of m with the model-side adapter view merged into its
// weights (see Adapter.Merge), held in float32 whatever m holds them in.
// In a model whose q|k|v are stacked (tensor.Stacker) the merged rows are
// q's and v's blocks of the stack.
func Merge(m *model.Model, view *model.Adapter) *model.Model {
	merged := *m
	merged.Adapter = nil
	merged.Layers = slices.Clone(m.Layers)
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	for l := range merged.Layers {
		attn := &merged.Layers[l].Attn
		q, v := view.Layers[l].Q, view.Layers[l].V
		if attn.QKV != nil {
			if q != nil || v != nil {
				attn.QKV = mergeRows(m.Backend, attn.QKV, []int{0, qd + kvd}, []*model.LoRA{q, v}, false)
			}
			continue
		}
		if q != nil {
			attn.Q = mergeRows(m.Backend, attn.Q, []int{0}, []*model.LoRA{q}, false)
		}
		if v != nil {
			attn.V = mergeRows(m.Backend, attn.V, []int{0}, []*model.LoRA{v}, false)
		}
	}
	return &merged
}

// mergeRows returns a new matrix: w with scale·B·A added to its rows from
// first[i] on for each non-nil los[i], stored by the model's backend in
// float32, or rounded to bfloat16 and stored so when bf16.
func mergeRows(be tensor.Backend, w tensor.Weight, first []int, los []*model.LoRA, bf16 bool) tensor.Weight {
	n, k := w.Shape()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	buf := be.Alloc(n * k)
	be.Rows(buf, w, ids)
	dense := be.ToHost(buf)
	for p, lo := range los {
		if lo == nil {
			continue
		}
		// Rows are independent, so they are merged on every core, in
		// blocks of rows (each row's arithmetic, and so its bits, does
		// not depend on which goroutine runs it): Qwen3-0.6B's 56
		// matrices took 5.3 s on one.
		const block = 64
		rows := len(lo.B) / lo.R
		parallel.For((rows+block-1)/block, 0, func(b int) {
			acc := make([]float32, k)
			for i := b * block; i < min(rows, (b+1)*block); i++ {
				addDelta(dense[(first[p]+i)*k:(first[p]+i+1)*k], acc, lo, i)
			}
		})
	}
	if bf16 {
		for i, x := range dense {
			dense[i] = safetensors.RoundBF16(x)
		}
	}
	merged := be.Pack(dense, n, k, bf16)
	be.Free(buf)
	return merged
}

// addDelta adds row i of PEFT's delta, fl32(fl32(B·A)·scale), to row (in
// float32); acc is scratch of the row's length.
func addDelta(row, acc []float32, lo *model.LoRA, i int) {
	k := len(row)
	clear(acc)
	for r, b := range lo.B[i*lo.R : (i+1)*lo.R] {
		for j, av := range lo.A[r*k : (r+1)*k] {
			// A float32 FMA: the product is exact in float64, and the sum
			// rounded to float64 and then to float32 is the sum rounded
			// once but in the rare double-rounding case (about 2⁻²⁹).
			acc[j] = float32(float64(b)*float64(av) + float64(acc[j]))
		}
	}
	for j, s := range acc {
		// The conversion rounds the product before the sum: Go may
		// otherwise fuse them (an FMA, on arm64), which PEFT does not.
		row[j] += float32(s * lo.Scale)
	}
}

// FreeMerged releases the weights a Merge of base made (the merged q_proj
// and v_proj matrices, or q|k|v stacked), once merged is no longer used. On the CPU the
// garbage collector would free them anyway; a device backend needs it.
func FreeMerged(merged, base *model.Model) {
	for l := range merged.Layers {
		m, b := &merged.Layers[l].Attn, &base.Layers[l].Attn
		for _, w := range [][2]tensor.Weight{{m.Q, b.Q}, {m.V, b.V}, {m.QKV, b.QKV}} {
			if w[0] != w[1] {
				base.Backend.FreeWeight(w[0])
			}
		}
	}
}
