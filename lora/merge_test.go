package lora

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// mergeTol is the logits' tolerance against PEFT's: the project's
// (peftTol, the fixtures' float32 tolerance with an adapter).
const mergeTol = peftTol

// TestMergePEFT merges a PEFT adapter (testdata/make_merge_fixtures.py: B
// drawn at random, not PEFT's zero) into the shared tiny fixtures and checks
// the result against PEFT's merge_and_unload: the merged weights within
// float32 rounding (mergeWeightsClose), in the model's dtype; the logits of
// the merged model, saved and loaded again as a plain model, within
// mergeTol of PEFT's merged model's and, in float32, of our unmerged model
// with the adapter attached; and the saved files say the model's dtype.
func TestMergePEFT(t *testing.T) {
	for _, tc := range mergeCases {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.baseDir(t)
			dir := filepath.Join("testdata", "merge", tc.name)
			ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
			shape := ref.Shape("input_ids")
			in := model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids")}

			bf16 := tc.dtype == safetensors.BF16
			m, err := model.LoadWith(base, model.LoadOptions{Unstacked: true, BF16Weights: bf16})
			if err != nil {
				t.Fatal(err)
			}
			a, err := Load(filepath.Join(dir, "adapter"), m, false)
			if err != nil {
				t.Fatal(err)
			}
			a.Attach(m)
			attached := logits(t, m, in)
			m.Adapter = nil
			before := tensorValues(t, m)
			if err := a.MergeInto(m); err != nil {
				t.Fatal(err)
			}
			if m.Adapter != nil {
				t.Error("MergeInto left the adapter on the model")
			}
			mergeWeightsClose(t, ref, before, tensorValues(t, m), a, tc.dtype)

			out := filepath.Join(t.TempDir(), "merged")
			if err := m.Save(out, model.SaveOptions{Source: base, Float16: true}); err != nil {
				t.Fatal(err)
			}
			savedDtypes(t, out, tc.dtype)
			plain, err := model.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			got := logits(t, plain, in)
			v := plain.VocabSize
			fixture.CloseLogits(t, "merged model vs PEFT's merge_and_unload", got, f32(ref.F64("logits_merged")), v, nil, mergeTol)
			if tc.dtype == safetensors.F32 {
				fixture.CloseLogits(t, "merged model vs ours with the adapter attached", got, attached, v, nil, mergeTol)
				fixture.CloseLogits(t, "ours with the adapter attached vs PEFT's", attached, f32(ref.F64("logits_lora")), v, nil, mergeTol)
			}
			moves(t, "the merge", got, logits(t, mustLoad(t, base), in), v, nil)
		})
	}
}

// mergeCases are the cases of testdata/merge (make_merge_fixtures.py).
var mergeCases = []mergeCase{
	{"llama-tiny", "llama-tiny", safetensors.F32},
	{"qwen3-tiny-bf16", "qwen3-tiny/bf16", safetensors.BF16},
	{"llama-tiny-all", "llama-tiny", safetensors.F32}, // every projection: all-linear
	{"qwen3-tiny-bf16-all", "qwen3-tiny/bf16", safetensors.BF16},
	{"opt-tiny-f16", "", safetensors.F16}, // a float16 checkpoint, as OPT-1.3B's
}

type mergeCase struct {
	name, base string // the case (testdata/merge/NAME) and its model under fixtures/models ("": NAME/model)
	dtype      safetensors.Dtype
}

// baseDir is the case's base model's directory.
func (tc mergeCase) baseDir(t *testing.T) string {
	if tc.base == "" {
		return filepath.Join("testdata", "merge", tc.name, "model")
	}
	return fixture.Dir(t, "fixtures", "models", tc.base)
}

// TestMergedLoadsInTransformers: transformers' from_pretrained loads the
// merged model as a plain one (scripts/peft_check.py's "base" job: the
// class of its config.json, float32) and computes PEFT's merged model's
// logits from it, within mergeTol. A tensor missing or misnamed would be
// initialised at random there, with a warning only: the logits catch it.
func TestMergedLoadsInTransformers(t *testing.T) {
	py := fixture.NewPEFT(t)
	var jobs []map[string]any
	type check struct {
		name, out string
		ref       *fixture.Ref
	}
	var checks []check
	for _, tc := range mergeCases {
		base := tc.baseDir(t)
		dir := filepath.Join("testdata", "merge", tc.name)
		m, err := model.LoadWith(base, model.LoadOptions{Unstacked: true, BF16Weights: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := Load(filepath.Join(dir, "adapter"), m, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.MergeInto(m); err != nil {
			t.Fatal(err)
		}
		merged := filepath.Join(t.TempDir(), "merged")
		if err := m.Save(merged, model.SaveOptions{Source: base, Float16: true}); err != nil {
			t.Fatal(err)
		}
		ref := fixture.OpenRef(t, filepath.Join(dir, "reference.safetensors"))
		ids, shape := ref.Ints("input_ids"), ref.Shape("input_ids")
		ones := slices.Repeat([]int{1}, len(ids))
		c := check{name: tc.name, out: filepath.Join(t.TempDir(), "logits.safetensors"), ref: ref}
		checks = append(checks, c)
		jobs = append(jobs, fixture.PEFTJob(map[string]any{"kind": "base"}, merged, ids, ones, shape[0], c.out))
	}
	py.Run(map[string]any{"jobs": jobs})
	for _, c := range checks {
		got := fixture.Tensors(t, c.out)["logits"]
		fixture.CloseLogits(t, c.name+": transformers on our merged model vs PEFT's merged model", got, f32(c.ref.F64("logits_merged")), len(got)/len(c.ref.Ints("input_ids")), nil, mergeTol)
	}
}

// mergeWeightsClose checks every merged weight of the adapter's targets against
// PEFT's, element by element, and that nothing else changed. The delta is
// a float32 GEMM over the rank, whose summation order is the BLAS's.
// First the bound any order keeps: two float32 sums of r terms are each
// within the error bound of such a sum, (r+1)·u·scale·Σᵣ|B_ir·A_rj| with
// the scaling's rounding (u = 2⁻²⁴), of the exact one, and the sums with W
// within one rounding each, u·|W'|: float32 weights must agree within
// twice that. A bfloat16 (float16) weight is that float32 sum rounded, so ours and
// PEFT's must be equal but where the exact sum (float64, here) lies within
// the bound of the rounding boundary between two neighbours, which either
// may then be. A weight outside that is a wrong merge (Fatalf). Then the
// bits: merge.go sums in the order torch's CPU GEMM summed when the
// fixtures were made, and its arithmetic is the same on every platform
// (explicit conversions, nothing Go may fuse), so every weight must be
// PEFT's exactly; another order within the bound (a float64 sum rounded
// once, the scale applied to B first) fails here. Fixtures remade with
// another BLAS may need this second check relaxed.
func mergeWeightsClose(t *testing.T, ref *fixture.Ref, before, after map[string][]float32, a *Adapter, dtype safetensors.Dtype) {
	t.Helper()
	const u = 1.0 / (1 << 24)
	view, scale := a.View(a.Params()), float64(a.Scale())
	merged, maxd, differ, values := 0, 0.0, 0, 0
	round := map[safetensors.Dtype]func(float32) float32{safetensors.BF16: safetensors.RoundBF16, safetensors.F16: safetensors.RoundF16}[dtype]
	for name, w := range before {
		layer, target, ok := projection(name, a)
		if !ok {
			if !slices.Equal(w, after[name]) {
				t.Errorf("%s changed in the merge; only the adapter's targets may", name)
			}
			continue
		}
		merged++
		lo := *view.Layers[layer].Slot(target)
		want, got, k := ref.F64("merged/"+name), after[name], len(w)/(len(lo.B)/lo.R)
		for e := range want {
			i, j := e/k, e%k
			exact, abs := float64(w[e]), 0.0
			for r := range lo.R {
				p := float64(lo.B[i*lo.R+r]) * float64(lo.A[r*k+j])
				exact += scale * p
				abs += math.Abs(p)
			}
			bound := 2 * (float64(lo.R+1)*u*scale*abs + u*math.Abs(exact))
			d := math.Abs(float64(got[e]) - want[e])
			maxd = math.Max(maxd, d)
			values++
			if d != 0 {
				differ++
			}
			switch {
			case round == nil && d <= bound, round != nil && d == 0:
			case round != nil && roundsEither(round, exact, bound, float64(got[e]), want[e]):
			default:
				t.Fatalf("%s[%d,%d]: %g, PEFT's %g (|Δ| %.3g, bound %.3g)", name, i, j, got[e], want[e], d, bound)
			}
		}
	}
	if merged != len(a.targets)*len(view.Layers) {
		t.Errorf("%d weights merged, want %v of %d layers", merged, a.Targets(), len(view.Layers))
	}
	t.Logf("merged weights: max |Δ| from PEFT's %.3g", maxd)
	if differ > 0 {
		t.Errorf("%d of %d merged weights differ from PEFT's bits (max |Δ| %.3g, within the bound of another summation order): "+
			"merge.go no longer sums B·A·scale as torch's CPU GEMM did for the fixtures", differ, values, maxd)
	}
}

// roundsEither says whether a and b are the roundings (bfloat16 or
// float16) of two values within bound of exact.
func roundsEither(round func(float32) float32, exact, bound, a, b float64) bool {
	lo, hi := round(float32(exact-bound)), round(float32(exact+bound))
	in := func(x float64) bool { return x == float64(lo) || x == float64(hi) }
	return in(a) && in(b)
}

// projection splits "….layers.L.MODULE.weight" of one of a's targets.
func projection(name string, a *Adapter) (layer int, target model.Proj, ok bool) {
	for _, tg := range a.targets {
		suffix := "." + tg.Module + ".weight"
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		head := strings.TrimSuffix(name, suffix)
		n, err := strconv.Atoi(head[strings.LastIndex(head, ".")+1:])
		return n, tg.Proj, err == nil
	}
	return 0, 0, false
}

// tensorValues reads every parameter tensor of m back from its backend.
func tensorValues(t *testing.T, m *model.Model) map[string][]float32 {
	t.Helper()
	ts, err := m.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, tn := range ts {
		if tn.Vector != nil {
			out[tn.Name] = append([]float32(nil), m.Backend.ToHost(tn.Vector)[:tn.Cols]...)
			continue
		}
		ids := make([]int, tn.Rows)
		for i := range ids {
			ids[i] = i
		}
		buf := m.Backend.Alloc(tn.Rows * tn.Cols)
		m.Backend.Rows(buf, tn.Weight, ids)
		out[tn.Name] = append([]float32(nil), m.Backend.ToHost(buf)...)
		m.Backend.Free(buf)
	}
	return out
}

// savedDtypes: every tensor of the saved model is in the model's dtype,
// and config.json's torch_dtype says it.
func savedDtypes(t *testing.T, dir string, want safetensors.Dtype) {
	t.Helper()
	name := map[safetensors.Dtype]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}[want]
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, n := range ck.Names() {
		if info, _ := ck.Info(n); info.Dtype != want {
			t.Errorf("saved %s is %s, want %s", n, info.Dtype, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TorchDtype string `json:"torch_dtype"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.TorchDtype != name {
		t.Errorf("saved config.json: torch_dtype %q (%v), want %q", cfg.TorchDtype, err, name)
	}
}

func mustLoad(t *testing.T, dir string) *model.Model {
	t.Helper()
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestMergeRowsAnyWorkers: the merge's blocks of rows run on every core,
// and the merged weights are the same bits on one: each row's arithmetic
// is its own. The projections here have 256 and 128 rows, several blocks.
func TestMergeRowsAnyWorkers(t *testing.T) {
	cfg := tinyConfig()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadDim = 256, 256, 64
	m, err := model.NewRandom(cfg, 1, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(m, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Params() { // B is zero at PEFT's init: give it values
		for j := range p {
			p[j] = float32(math.Sin(float64(j))) * 0.1
		}
	}
	var got [2]map[string][]float32
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		got[i] = tensorValues(t, a.Merge(m))
		runtime.GOMAXPROCS(prev)
	}
	for name, w := range got[0] {
		if !slices.Equal(w, got[1][name]) {
			t.Errorf("%s: merged on 1 and on 4 goroutines, the bits differ", name)
		}
	}
}

// TestMergeRounding: MergeIntoRounded says what rounding the merged weights
// to the checkpoint's dtype took from the merge, ‖round(W+ΔW) − (W+ΔW)‖ /
// ‖ΔW‖, as the float64 sums over the weights before and after the merge
// give it (ΔW = scale·B·A); nothing for a float32 model. With the adapter's
// change scaled down 1000× (a ZO run's small updates), a large part of it
// is lost to bfloat16's and float16's spacing (about half, and a seventh).
func TestMergeRounding(t *testing.T) {
	names := map[safetensors.Dtype]string{safetensors.BF16: "bfloat16", safetensors.F16: "float16"}
	for _, tc := range mergeCases {
		for _, shrink := range []float32{1, 1e-3} {
			t.Run(tc.name+"/"+strconv.FormatFloat(float64(shrink), 'g', -1, 32), func(t *testing.T) {
				m, err := model.LoadWith(tc.baseDir(t), model.LoadOptions{Unstacked: true, BF16Weights: tc.dtype == safetensors.BF16})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Free()
				a, err := Load(filepath.Join("testdata", "merge", tc.name, "adapter"), m, false)
				if err != nil {
					t.Fatal(err)
				}
				view := a.View(a.Params())
				for l := range view.Layers {
					for p := range model.NumProj {
						if lo := *view.Layers[l].Slot(p); lo != nil {
							for i := range lo.B {
								lo.B[i] *= shrink
							}
						}
					}
				}
				before := tensorValues(t, m)
				rd, err := a.MergeIntoRounded(m)
				if err != nil {
					t.Fatal(err)
				}
				after := tensorValues(t, m)
				var errSq, deltaSq float64
				scale := float64(a.Scale())
				for name, w := range before {
					layer, target, ok := projection(name, a)
					if !ok {
						continue
					}
					lo := *view.Layers[layer].Slot(target)
					k := len(w) / (len(lo.B) / lo.R)
					for e := range w {
						i, j, d := e/k, e%k, 0.0
						for r := range lo.R {
							d += scale * float64(lo.B[i*lo.R+r]) * float64(lo.A[r*k+j])
						}
						deltaSq += d * d
						x := float64(after[name][e]) - (float64(w[e]) + d)
						errSq += x * x
					}
				}
				want := math.Sqrt(errSq / deltaSq)
				if rd.Dtype != names[tc.dtype] {
					t.Errorf("Rounding.Dtype %q, want %q", rd.Dtype, names[tc.dtype])
				}
				if tc.dtype == safetensors.F32 {
					if rd.Relative() != 0 {
						t.Errorf("float32 merge: Relative %g, want 0 (nothing rounded)", rd.Relative())
					}
					return
				}
				if got := rd.Relative(); math.Abs(got-want) > 1e-3*want {
					t.Errorf("Relative %.6g, want %.6g (float64 sums over the weights)", got, want)
				}
				if shrink < 1 && want < 0.1 {
					t.Errorf("a 1000× smaller change lost only %.3g of itself to %s rounding: the check is not exercised", want, rd.Dtype)
				}
				t.Logf("%s: rounding took %.3g of the adapter's change", rd.Dtype, rd.Relative())
			})
		}
	}
}
