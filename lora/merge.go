package lora

import (
	"fmt"
	"math"
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

// MergeInto merges the adapter into m's own weights of its targets, as
// PEFT's merge_and_unload does, and takes the adapter off m: W' = W +
// scale·B·A, each merged weight stored as it was loaded (bfloat16 when the
// checkpoint stores it so and m holds it so: model.LoadOptions.BF16Weights;
// float16 values held in float32 when the checkpoint stores float16;
// float32 otherwise). Model.Save then writes a plain model (with
// SaveOptions.Float16, a float16 checkpoint's merge in float16, as PEFT
// leaves it). m must hold its projections unstacked
// (model.LoadOptions.Unstacked), as Save needs.
func (a *Adapter) MergeInto(m *model.Model) error {
	_, err := a.MergeIntoRounded(m)
	return err
}

// Rounding is what storing merged weights in their checkpoint's dtype
// took from a merge: a bfloat16 (or float16) weight holds W + scale·B·A
// rounded, and an adapter's change smaller than half the weight's spacing
// there (ZO's small updates, on bfloat16's 8 bits of mantissa) is lost to
// it, in part or whole.
type Rounding struct {
	Dtype string  // "bfloat16" or "float16"; "" when no merged weight was rounded (float32)
	Err   float64 // ‖round(W + ΔW) − (W + ΔW)‖², summed over the merged matrices
	Delta float64 // ‖ΔW‖², the adapter's change as the float32 merge holds it, summed likewise
}

// Relative is ‖round(W + ΔW) − (W + ΔW)‖ / ‖ΔW‖: 0 when the rounding kept
// the merge whole, about 1 (or more) when it lost the adapter's change.
func (r Rounding) Relative() float64 {
	if r.Delta == 0 {
		return 0
	}
	return math.Sqrt(r.Err / r.Delta)
}

// MergeIntoRounded is MergeInto, and says what the rounding of the merged
// weights to the dtype they are stored in took from the merge.
func (a *Adapter) MergeIntoRounded(m *model.Model) (Rounding, error) {
	var rd Rounding
	ts, err := m.Tensors()
	if err != nil {
		return rd, fmt.Errorf("merge the adapter: %w", err)
	}
	view := a.View(a.params)
	for l := range m.Layers {
		for _, t := range a.targets {
			w := m.Weight(l, t.Proj)
			i := slices.IndexFunc(ts, func(x model.Tensor) bool {
				return x.Layer == l && strings.HasSuffix(x.Name, "."+t.Module+".weight")
			})
			lo := *view.Layers[l].Slot(t.Proj)
			if lo == nil {
				continue // a layer layers_to_transform leaves out
			}
			if i < 0 || *w == nil {
				return rd, fmt.Errorf("merge the adapter: layer %d has no %s weight of its own", l, t.Name)
			}
			merged := mergeRows(m.Backend, *w, []int{0}, []*model.LoRA{lo}, ts[i], &rd)
			m.Backend.FreeWeight(*w)
			*w = merged
		}
	}
	m.Adapter = nil
	return rd, nil
}

// Merge returns a copy of m whose weights include the adapter (W +
// scale·B·A on each target, in float32), so evaluation runs without the
// low-rank terms. m itself is unchanged; the copy shares every other
// weight with it.
func (a *Adapter) Merge(m *model.Model) *model.Model { return Merge(m, a.View(a.params)) }

// Merge returns a copy of m with the model-side adapter view merged into its
// weights (see Adapter.Merge), held in float32 whatever m holds them in.
// In a model whose projections are stacked (tensor.Stacker: q|k|v,
// gate|up) the merged rows are the targets' blocks of the stack.
func Merge(m *model.Model, view *model.Adapter) *model.Model {
	merged := *m
	merged.Adapter = nil
	merged.Layers = slices.Clone(m.Layers)
	for l := range merged.Layers {
		la := &view.Layers[l]
		for _, st := range stacksOf(&merged, l) {
			var los []*model.LoRA
			for _, p := range st.parts {
				los = append(los, *la.Slot(p))
			}
			if slices.ContainsFunc(los, func(lo *model.LoRA) bool { return lo != nil }) {
				*st.w = mergeRows(m.Backend, *st.w, st.first, los, model.Tensor{}, nil)
			}
		}
		for _, pr := range m.Projections() {
			if w, lo := merged.Weight(l, pr.Proj), *la.Slot(pr.Proj); lo != nil && *w != nil {
				*w = mergeRows(m.Backend, *w, []int{0}, []*model.LoRA{lo}, model.Tensor{}, nil)
			}
		}
	}
	return &merged
}

// stacked is a weight that holds several projections' matrices one on top
// of the other (tensor.Stacker): parts[i]'s rows start at row first[i].
type stacked struct {
	w     *tensor.Weight
	parts []model.Proj
	first []int
}

// stacksOf lists the stacked weights of layer l of m: q|k|v and gate|up,
// where the backend stacks them.
func stacksOf(m *model.Model, l int) []stacked {
	a, mlp := &m.Layers[l].Attn, &m.Layers[l].MLP
	qd, kvd := m.NumHeads*m.HeadDim, m.NumKVHeads*m.HeadDim
	var s []stacked
	if a.QKV != nil {
		s = append(s, stacked{&a.QKV, []model.Proj{model.ProjQ, model.ProjK, model.ProjV}, []int{0, qd, qd + kvd}})
	}
	if mlp.GateUp != nil {
		s = append(s, stacked{&mlp.GateUp, []model.Proj{model.ProjGate, model.ProjUp}, []int{0, m.IntermediateSize}})
	}
	return s
}

// mergeRows returns a new matrix: w with scale·B·A added to its rows from
// first[i] on for each non-nil los[i], stored by the model's backend as
// stored says: in float32; rounded to bfloat16 and stored so (stored.BF16);
// or rounded to float16 and held in float32 (stored.F16). A non-nil rd
// adds what that rounding took from the merge (Rounding).
func mergeRows(be tensor.Backend, w tensor.Weight, first []int, los []*model.LoRA, stored model.Tensor, rd *Rounding) tensor.Weight {
	n, k := w.Shape()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	buf := be.Alloc(n * k)
	be.Rows(buf, w, ids)
	dense := be.ToHost(buf)
	var orig []float32 // w as it was, where rd measures the rounding
	if rd != nil && (stored.BF16 || stored.F16) {
		orig = slices.Clone(dense)
	}
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
	switch {
	case stored.BF16:
		rd.measure("bfloat16", orig, dense, safetensors.RoundBF16)
		roundAll(dense, safetensors.RoundBF16)
	case stored.F16:
		rd.measure("float16", orig, dense, safetensors.RoundF16)
		roundAll(dense, safetensors.RoundF16)
	}
	merged := be.Pack(dense, n, k, stored.BF16)
	be.Free(buf)
	return merged
}

// measure adds to rd what rounding merged (orig with the deltas added, in
// float32) with round takes from the merge; nothing when rd or orig is nil.
func (rd *Rounding) measure(dtype string, orig, merged []float32, round func(float32) float32) {
	if rd == nil || orig == nil {
		return
	}
	rd.Dtype = dtype
	for j, x := range merged {
		d, e := float64(x)-float64(orig[j]), float64(round(x))-float64(x)
		rd.Delta += d * d
		rd.Err += e * e
	}
}

// roundAll rounds every value of v with round.
func roundAll(v []float32, round func(float32) float32) {
	for i, x := range v {
		v[i] = round(x)
	}
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

// FreeMerged releases the weights a Merge of base made (the merged
// matrices, stacked or not), once merged is no longer used. On the CPU the
// garbage collector would free them anyway; a device backend needs it.
func FreeMerged(merged, base *model.Model) {
	for l := range merged.Layers {
		ws := [][2]tensor.Weight{{merged.Layers[l].Attn.QKV, base.Layers[l].Attn.QKV}, {merged.Layers[l].MLP.GateUp, base.Layers[l].MLP.GateUp}}
		for p := range model.NumProj {
			ws = append(ws, [2]tensor.Weight{*merged.Weight(l, p), *base.Weight(l, p)})
		}
		for _, w := range ws {
			if w[0] != w[1] {
				base.Backend.FreeWeight(w[0])
			}
		}
	}
}

// MergeViT returns a copy of the ViT m with the adapter view merged as
// PEFT 0.15's merge_and_unload merges it: each adapted linear layer's
// weight W + scale·B·A (get_delta_weight, in float32: mergeRows), and the
// classifier the adapter's trained copy (modules_to_save: merging keeps
// the copy in place of the original). The copy's Adapter holds that
// classifier alone, so a forward of it runs no low-rank term. m itself is
// unchanged; the copy shares every other weight with it (FreeMergedViT
// releases what MergeViT made).
func MergeViT(m *model.ViT, view *model.ViTAdapter) *model.ViT {
	merged := *m
	merged.Layers = slices.Clone(m.Layers)
	merged.Adapter = &model.ViTAdapter{Classifier: view.Classifier, ClassifierBias: view.ClassifierBias}
	for l := range merged.Layers {
		if l >= len(view.Layers) {
			break
		}
		for p := range model.NumProj {
			lo := *view.Layers[l].Slot(p)
			lin := merged.Layers[l].Linear(p)
			if lo == nil || lin == nil {
				continue
			}
			lin.W = mergeRows(m.Backend, lin.W, []int{0}, []*model.LoRA{lo}, model.Tensor{}, nil)
		}
	}
	return &merged
}

// FreeMergedViT releases the weights a MergeViT of base made, once merged
// is no longer used.
func FreeMergedViT(merged, base *model.ViT) {
	for l := range merged.Layers {
		for p := range model.NumProj {
			if w, b := merged.Layers[l].Linear(p), base.Layers[l].Linear(p); w != nil && w.W != b.W {
				base.Backend.FreeWeight(w.W)
			}
		}
	}
}
