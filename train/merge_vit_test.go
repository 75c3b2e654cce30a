package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

var (
	vitTinyDir   = filepath.Join("..", "model", "testdata", "vit", "vit-tiny")
	vitMergeLoRA = []string{"lora", "lora-all-linear", "lora-layers"} // the fixture's PEFT-made adapters: q/v, all-linear, layers_to_transform [0, 2]
)

// vitPixels are the fixture's four images.
func vitPixels(t *testing.T) []float32 {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(vitTinyDir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Float32("pixel_values")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// vitLogits are the logits of the ViT in dir (on the CPU) on the fixture's
// images, with the adapter in adapter attached unless it is "".
func vitLogits(t *testing.T, dir, adapter string) []float32 {
	t.Helper()
	m, err := model.LoadViT(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if adapter != "" {
		if err := AttachViTAdapter(adapter, m); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Logits(vitPixels(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// rawTensors are the tensors of a single-file checkpoint in dir by name:
// dtype, shape and bytes.
func rawTensors(t *testing.T, dir string) map[string]safetensors.Tensor {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]safetensors.Tensor{}
	for _, info := range f.Tensors() {
		b, err := f.Bytes(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[info.Name] = safetensors.Tensor{Name: info.Name, Dtype: info.Dtype, Shape: info.Shape, Data: b}
	}
	return out
}

// TestMergeViT: MergeLoRA of each fixture adapter into vit-tiny writes a
// ViTForImageClassification directory (the base's config.json and
// preprocessor_config.json, model.safetensors) whose logits, loaded as a
// plain model, are those of the base with the adapter attached within
// 2e-4 (float32: the merged weight rounds once where the attached adapter
// adds its own product); the tensors are the base's names, shapes and
// dtype, the base's own bytes but for the adapted layers' weights (which
// must change: a merge of nothing would pass the rest) and the classifier,
// which is the adapter's.
func TestMergeViT(t *testing.T) {
	base := rawTensors(t, vitTinyDir)
	for _, name := range vitMergeLoRA {
		t.Run(name, func(t *testing.T) {
			adapter := filepath.Join(vitTinyDir, name)
			out := filepath.Join(t.TempDir(), "merged")
			what, err := MergeLoRA(MergeOptions{Model: vitTinyDir, Adapter: adapter, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(what, "ViTForImageClassification") || !strings.HasSuffix(what, "weights float32") {
				t.Errorf("report %q", what)
			}
			var files []string
			entries, _ := os.ReadDir(out)
			for _, e := range entries {
				files = append(files, e.Name())
			}
			if want := []string{"config.json", "model.safetensors", "preprocessor_config.json"}; !slices.Equal(files, want) {
				t.Errorf("--out holds %v, want %v", files, want)
			}
			for _, f := range []string{"config.json", "preprocessor_config.json"} {
				a, _ := os.ReadFile(filepath.Join(vitTinyDir, f))
				b, _ := os.ReadFile(filepath.Join(out, f))
				if !bytes.Equal(a, b) {
					t.Errorf("%s is not the base's", f)
				}
			}
			fixture.CloseLogits(t, "merged vs attached", vitLogits(t, out, ""), vitLogits(t, vitTinyDir, adapter), 37, nil, 2e-4)

			got := rawTensors(t, out)
			adapted := map[string]bool{}
			for _, n := range adaptedWeights(t, adapter) {
				adapted[n] = true
			}
			if len(got) != len(base) {
				t.Errorf("%d tensors, the base has %d", len(got), len(base))
			}
			for n, b := range base {
				g, ok := got[n]
				switch {
				case !ok:
					t.Errorf("%s is missing", n)
				case g.Dtype != b.Dtype || !slices.Equal(g.Shape, b.Shape):
					t.Errorf("%s is %s %v, the base's %s %v", n, g.Dtype, g.Shape, b.Dtype, b.Shape)
				case strings.HasPrefix(n, "classifier."):
					want := fixture.Tensors(t, filepath.Join(adapter, "adapter_model.safetensors"))["base_model.model."+n]
					if !slices.Equal(f32s(g.Data), want) {
						t.Errorf("%s is not the adapter's", n)
					}
				case adapted[n] == bytes.Equal(g.Data, b.Data):
					t.Errorf("%s: adapted %v, but changed %v", n, adapted[n], !adapted[n])
				}
			}
		})
	}
}

// adaptedWeights are the names of the weights the adapter in dir changes:
// one per LoRA A matrix it saves.
func adaptedWeights(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for n := range fixture.Tensors(t, filepath.Join(dir, "adapter_model.safetensors")) {
		if s, ok := strings.CutSuffix(n, ".lora_A.weight"); ok {
			names = append(names, strings.TrimPrefix(s, "base_model.model.")+".weight")
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s: no LoRA matrices", dir)
	}
	return names
}

func f32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// mergeViTInto runs MergeLoRA of adapter into the ViT in modelDir and
// returns the merged directory.
func mergeViTInto(t *testing.T, modelDir, adapter string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := MergeLoRA(MergeOptions{Model: modelDir, Adapter: adapter, Out: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMergeViTHeadless: an adapter merged into the ViTModel checkpoint of
// the same weights (google/vit-base-patch16-224-in21k's layout, which a
// pets run starts from: names without "vit.", a pooler, no classifier)
// writes the ViTForImageClassification that merging into vit-tiny writes:
// the same tensors, bit for bit (the pooler left out, the classifier the
// adapter's), and a config.json of ViTForImageClassification with the
// adapter's 37 classes, named LABEL_0… as transformers names them.
func TestMergeViTHeadless(t *testing.T) {
	headless := t.TempDir()
	fixture.WriteViTModel(t, vitTinyDir, headless)
	adapter := filepath.Join(vitTinyDir, "lora-all-linear")
	got, want := rawTensors(t, mergeViTInto(t, headless, adapter)), rawTensors(t, mergeViTInto(t, vitTinyDir, adapter))
	if len(got) != len(want) {
		t.Errorf("%d tensors, merging into the ViTForImageClassification wrote %d", len(got), len(want))
	}
	for n, w := range want {
		if g, ok := got[n]; !ok || g.Dtype != w.Dtype || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s differs from the ViTForImageClassification's merge (or is missing)", n)
		}
	}
	out := mergeViTInto(t, headless, filepath.Join(vitTinyDir, "lora"))
	c, err := model.LoadViTConfig(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Architectures []string
		ID2Label      map[string]string `json:"id2label"`
		Label2ID      map[string]int    `json:"label2id"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if c.Headless || c.NumLabels != 37 || raw.ID2Label["36"] != "LABEL_36" || raw.Label2ID["LABEL_36"] != 36 || !slices.Equal(raw.Architectures, []string{"ViTForImageClassification"}) {
		t.Errorf("merged config: headless %v, %d classes, %v, class 36 %q; want a ViTForImageClassification of 37, LABEL_36", c.Headless, c.NumLabels, raw.Architectures, raw.ID2Label["36"])
	}
	if !slices.Equal(vitLogits(t, out, ""), vitLogits(t, mergeViTInto(t, vitTinyDir, filepath.Join(vitTinyDir, "lora")), "")) {
		t.Errorf("the merge of the ViTModel does not give the logits of the ViTForImageClassification's")
	}
}

// toBF16ViT writes a copy of vit-tiny with every tensor stored as bfloat16
// into a new directory.
func toBF16ViT(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var ts []safetensors.Tensor
	f, err := safetensors.Open(filepath.Join(vitTinyDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, info := range f.Tensors() {
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.BF16Tensor(info.Name, info.Shape, v))
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "preprocessor_config.json"} {
		b, err := os.ReadFile(filepath.Join(vitTinyDir, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMergeViTBF16: a ViT stored in bfloat16 is merged into bfloat16: every
// tensor written as bfloat16, the base's own bytes but for the adapted
// weights, each the float32 merge (lora.MergeViT of the model as loaded)
// rounded once to bfloat16, and the classifier the adapter's rounded so;
// the logits are the attached adapter's within what that rounding moves.
func TestMergeViTBF16(t *testing.T) {
	dir := toBF16ViT(t)
	adapter := filepath.Join(vitTinyDir, "lora-layers")
	out := filepath.Join(t.TempDir(), "merged")
	what, err := MergeLoRA(MergeOptions{Model: dir, Adapter: adapter, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(what, "weights bfloat16") {
		t.Errorf("report %q", what)
	}
	m := mustViT(t, dir)
	a, err := lora.LoadViT(adapter, m, false)
	if err != nil {
		t.Fatal(err)
	}
	merged := lora.MergeViT(m, a.View(a.Params()))
	defer lora.FreeMergedViT(merged, m)
	want := map[string][]float32{}
	for l := range merged.Layers {
		ml := &merged.Layers[l]
		for _, lin := range []*model.ViTLinear{&ml.Q, &ml.K, &ml.V, &ml.O, &ml.Up, &ml.Down} {
			v := readWeight(m.Backend, lin.W)
			for i := range v {
				v[i] = safetensors.RoundBF16(v[i])
			}
			want[lin.Name+".weight"] = v
		}
	}
	adapted := map[string]bool{}
	for _, n := range adaptedWeights(t, adapter) {
		adapted[n] = true
	}
	base, got := rawTensors(t, dir), rawTensors(t, out)
	for n, b := range base {
		g := got[n]
		switch {
		case g.Dtype != safetensors.BF16:
			t.Errorf("%s is %s, want BF16 as the base stores it", n, g.Dtype)
		case adapted[n]:
			if bytes.Equal(g.Data, b.Data) || !slices.Equal(bf16s(g.Data), want[n]) {
				t.Errorf("%s is not the float32 merge rounded once to bfloat16", n)
			}
		case !strings.HasPrefix(n, "classifier.") && !bytes.Equal(g.Data, b.Data):
			t.Errorf("%s changed, but the adapter does not adapt it", n)
		}
	}
	fixture.CloseLogits(t, "bf16 merged vs attached", vitLogits(t, out, ""), vitLogits(t, dir, adapter), 37, nil, 5e-2)
}

func mustViT(t *testing.T, dir string) *model.ViT {
	t.Helper()
	m, err := model.LoadViT(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

func bf16s(b []byte) []float32 {
	v := make([]float32, len(b)/2)
	for i := range v {
		v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	}
	return v
}

// TestMergedViTLoadsInTransformers: each fixture adapter merged by
// MergeLoRA, into vit-tiny and (lora-all-linear) into its ViTModel
// checkpoint, is loaded whole by transformers 4.51's
// ViTForImageClassification.from_pretrained (no missing, unexpected or
// mismatched weight: scripts/peft_check.py's strict base job), and gives
// the logits of PEFT 0.15's merge_and_unload of the same adapter on
// vit-tiny within 2e-4: the fixtures' float32 tolerance on logits (which
// reach about 5 here), left for a BLAS that sums B·A in another order; on
// this project's CPU GEMM path the merged weights are PEFT's bits and the
// logits were equal (the log says).
func TestMergedViTLoadsInTransformers(t *testing.T) {
	py := fixture.NewPEFT(t)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	pixels, base := abs(filepath.Join(vitTinyDir, "reference.safetensors")), abs(vitTinyDir)
	tmp := t.TempDir()
	headless := t.TempDir()
	fixture.WriteViTModel(t, vitTinyDir, headless)
	type check struct{ name, merged, adapter string }
	var checks []check
	for _, name := range vitMergeLoRA {
		adapter := abs(filepath.Join(vitTinyDir, name))
		checks = append(checks, check{name, abs(mergeViTInto(t, vitTinyDir, adapter)), adapter})
	}
	adapter := abs(filepath.Join(vitTinyDir, "lora-all-linear"))
	checks = append(checks, check{"lora-all-linear into the ViTModel", abs(mergeViTInto(t, headless, adapter)), adapter})
	out := func(i int, kind string) string { return filepath.Join(tmp, kind+string(rune('0'+i))+".safetensors") }
	var jobs []map[string]any
	for i, c := range checks {
		jobs = append(jobs,
			map[string]any{"kind": "base", "strict": true, "base": c.merged, "pixel_values": pixels, "out": out(i, "ours")},
			map[string]any{"kind": "merge", "adapter": c.adapter, "base": base, "pixel_values": pixels, "out": out(i, "peft")})
	}
	jobs = append(jobs, map[string]any{"kind": "base", "base": base, "pixel_values": pixels, "out": out(9, "base")})
	py.Run(map[string]any{"jobs": jobs})
	plain := fixture.Tensors(t, out(9, "base"))["logits"]
	for i, c := range checks {
		ours, peft := fixture.Tensors(t, out(i, "ours"))["logits"], fixture.Tensors(t, out(i, "peft"))["logits"]
		fixture.CloseLogits(t, c.name+": transformers on our merge vs PEFT's merge_and_unload", ours, peft, 37, nil, 2e-4)
		if d, _ := fixture.MaxAbsDiff(peft, fixture.Widen(plain), 37, nil); d < 0.1 {
			t.Errorf("%s: PEFT's merge moves the logits by %.3g only: is the adapter merged?", c.name, d)
		}
	}
}

// TestMergeViTFloat32: --dtype float32 writes a bfloat16 ViT's merge in
// float32, every tensor, the adapted weights the float32 merge unrounded
// (it was ignored: the merge was rounded to bfloat16 and said so).
func TestMergeViTFloat32(t *testing.T) {
	dir := toBF16ViT(t)
	adapter := filepath.Join(vitTinyDir, "lora-layers")
	out := filepath.Join(t.TempDir(), "merged")
	what, err := MergeLoRA(MergeOptions{Model: dir, Adapter: adapter, Out: out, Float32: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(what, "weights float32") {
		t.Errorf("report %q", what)
	}
	for n, g := range rawTensors(t, out) {
		if g.Dtype != safetensors.F32 {
			t.Errorf("%s is %s, want F32", n, g.Dtype)
		}
	}
	fixture.CloseLogits(t, "float32 merged vs attached", vitLogits(t, out, ""), vitLogits(t, dir, adapter), 37, nil, 2e-4)
}
