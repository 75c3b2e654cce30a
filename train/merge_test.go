package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/safetensors"
)

// mergeFixture makes a random tiny model stored in dtype (F32, BF16 or
// F16) with a tokenizer file, and a LoRA adapter for it with nonzero B,
// and returns their directories.
func mergeFixture(t *testing.T, dtype safetensors.Dtype) (modelDir, adapterDir string) {
	t.Helper()
	root := t.TempDir()
	modelDir, adapterDir = filepath.Join(root, "model"), filepath.Join(root, "adapter")
	cfg := &model.Config{Architecture: "Qwen3ForCausalLM", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
		BOSTokenID: -1, EOSTokenIDs: []int{2}}
	write := model.WriteRandom
	if dtype == safetensors.BF16 {
		write = model.WriteRandomBF16
	}
	if err := write(modelDir, cfg, 3, 0.2); err != nil {
		t.Fatal(err)
	}
	if dtype == safetensors.F16 {
		toF16(t, filepath.Join(modelDir, "model.safetensors"))
	}
	if err := os.WriteFile(filepath.Join(modelDir, "tokenizer_config.json"), []byte(`{"eos_token": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.New(m, lora.Options{R: 2, Alpha: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Params() {
		for i := range p {
			p[i] = float32(i%7-3) / 10
		}
	}
	if err := a.Save(adapterDir); err != nil {
		t.Fatal(err)
	}
	return modelDir, adapterDir
}

// TestMergeLoRA: the merged model directory loads as a plain model whose
// logits are those of the base model with the adapter attached (within the
// fixtures' tolerance; the weights themselves are checked against PEFT's
// in lora's TestMergePEFT), holds the weights in the base model's dtype
// and its tokenizer files, and is written into a new directory or an empty
// one.
func TestMergeLoRA(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stored, want safetensors.Dtype // the base model's dtype, the merged model's
		emptyOut     bool              // --out exists, empty
	}{
		{"float32", safetensors.F32, safetensors.F32, false},
		{"bf16", safetensors.BF16, safetensors.BF16, false},
		{"float16", safetensors.F16, safetensors.F16, false},
		{"into an empty directory", safetensors.F32, safetensors.F32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modelDir, adapterDir := mergeFixture(t, tc.stored)
			out := filepath.Join(t.TempDir(), "merged")
			if tc.emptyOut {
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var temps []string // OnTemp: the directory a signal handler removes, then "" once it is renamed
			what, err := MergeLoRA(MergeOptions{Model: modelDir, Adapter: adapterDir, Out: out, OnTemp: func(d string) { temps = append(temps, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(temps) != 2 || filepath.Dir(temps[0]) != filepath.Dir(out) || temps[0] == out || temps[1] != "" {
				t.Errorf("OnTemp was told %q, want the temporary directory beside --out, then \"\"", temps)
			}
			dtype := "weights " + map[safetensors.Dtype]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}[tc.want]
			first, rounding, _ := strings.Cut(what, "\n")
			if !strings.HasSuffix(first, dtype) || !strings.Contains(first, out) {
				t.Errorf("report %q does not name %s and end its first line with %s", what, out, dtype)
			}
			if (tc.want != safetensors.F32) != strings.HasPrefix(rounding, "rounding the merged weights to ") {
				t.Errorf("report %q: a line on the rounding to the stored dtype where, and only where, there is one", what)
			}
			files, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name())
			}
			if want := []string{"config.json", "model.safetensors", "tokenizer_config.json"}; !slices.Equal(names, want) {
				t.Errorf("--out holds %v, want %v", names, want)
			}
			mergedLogitsMatch(t, modelDir, adapterDir, out, tc.want)
			savedAs(t, out, tc.want)
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
				t.Errorf("the temporary directory was left beside --out: %d entries", len(entries))
			}
		})
	}
}

// mergedLogitsMatch: the merged model's logits are the base model's with
// the adapter attached, within the float32 tolerance of the fixtures; with
// bfloat16 or float16 weights, within what their rounding changes.
func mergedLogitsMatch(t *testing.T, modelDir, adapterDir, out string, dtype safetensors.Dtype) {
	t.Helper()
	in := model.Input{B: 2, T: 5, Tokens: []int{3, 9, 27, 4, 5, 60, 2, 11, 8, 1}}
	base, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := AttachAdapter(adapterDir, base); err != nil {
		t.Fatal(err)
	}
	want, err := base.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := merged.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	// The merged weights are rounded to the checkpoint's dtype (bfloat16:
	// 2⁻⁹ relative; float16: 2⁻¹²), the attached adapter's sums are not.
	tol := map[safetensors.Dtype]float64{safetensors.F32: 2e-4, safetensors.BF16: 5e-2, safetensors.F16: 1e-2}[dtype]
	fixture.CloseLogits(t, "merged vs attached", got.Logits, want.Logits, merged.VocabSize, nil, tol)
	base.Adapter = nil
	plain, err := base.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := fixture.MaxAbsDiff(got.Logits, fixture.Widen(plain.Logits), merged.VocabSize, nil); d < 10*tol {
		t.Errorf("the merge moves the logits by %.3g only: a merge that changed nothing would pass", d)
	}
}

// savedAs: every tensor in dir's model.safetensors is in dtype.
func savedAs(t *testing.T, dir string, dtype safetensors.Dtype) {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, info := range f.Tensors() {
		if info.Dtype != dtype {
			t.Errorf("merged %s is %s, want %s as the base model stores it", info.Name, info.Dtype, dtype)
		}
	}
}

// TestMergeLoRARefuses: what cannot be merged, or written where asked, is
// refused with what it is, and nothing is written.
func TestMergeLoRARefuses(t *testing.T) {
	modelDir, adapterDir := mergeFixture(t, safetensors.F32)
	root := t.TempDir()
	prompt := filepath.Join(root, "prompt")
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prompttune.Random(m, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Save(prompt, m); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "run", "best") // a full-parameter run's best/: a model
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		copyFile(t, filepath.Join(modelDir, f), filepath.Join(full, f))
	}
	fanIn := filepath.Join(root, "fan-in")
	copyDir(t, adapterDir, fanIn)
	editFile(t, filepath.Join(fanIn, "adapter_config.json"), `"fan_in_fan_out": false`, `"fan_in_fan_out": true`)
	full2 := filepath.Join(root, "nonempty")
	if err := os.MkdirAll(full2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full2, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	afile := filepath.Join(root, "a-file")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	for _, tc := range []struct {
		name, model, adapter, out, want string
	}{
		{"prompt tuning", modelDir, prompt, out, "is a prompt-tuning adapter"},
		{"a full-parameter best/", modelDir, full, out, "it is a whole model already, with nothing to merge"},
		{"fan_in_fan_out", modelDir, fanIn, out, "fan_in_fan_out is not supported"},
		{"no adapter", modelDir, filepath.Join(root, "missing"), out, "no such directory"},
		{"no model", filepath.Join(root, "missing"), adapterDir, out, "--model " + filepath.Join(root, "missing") + ": no such directory"},
		{"a file as the model", afile, adapterDir, out, "--model " + afile + ": a file, not a model directory"},
		{"a run directory as the model", filepath.Join(root, "run"), adapterDir, out, "a run directory, not a model"},
		{"--out not empty", modelDir, adapterDir, full2, "is not empty (it holds notes.txt)"},
		{"--out a file", modelDir, adapterDir, afile, "is a file"},
		{"--out inside the adapter", modelDir, adapterDir, filepath.Join(adapterDir, "merged"), "is inside the input"},
		{"--out the model", modelDir, adapterDir, modelDir, "is the input"},
		{"no --out", modelDir, adapterDir, "", "are required"},
		{"a ViT with a decoder's adapter", vitTinyDir, adapterDir, out, "is an image classifier (ViT), so --adapter must be a ViT's LoRA adapter: --adapter " + adapterDir + " has no classifier"},
		{"a decoder with a ViT's adapter", modelDir, filepath.Join(vitTinyDir, "lora"), out, "an adapter that saves the classifier is an image classifier's (a ViT), not a decoder model's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MergeLoRA(MergeOptions{Model: tc.model, Adapter: tc.adapter, Out: tc.out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one that says %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestMergeLoRAIntoCurrentDir: an empty working directory as --out ("." or
// its path) is refused before the merge, not after it with "remove .:
// invalid argument", and nothing is written.
func TestMergeLoRAIntoCurrentDir(t *testing.T) {
	modelDir, adapterDir := mergeFixture(t, safetensors.F32)
	cwd := filepath.Join(t.TempDir(), "here")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	for _, out := range []string{".", cwd, cwd + "/"} {
		_, err := MergeLoRA(MergeOptions{Model: modelDir, Adapter: adapterDir, Out: out})
		if err == nil || !strings.Contains(err.Error(), "is the current directory") {
			t.Errorf("--out %s: error %v, want one that says it is the current directory", out, err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(cwd)); len(entries) != 1 {
			t.Errorf("--out %s: %d entries beside it, want the directory alone", out, len(entries))
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// toF16 rewrites the float32 safetensors file path in float16, each value
// rounded to the nearest float16, as torch's .half() rounds.
func toF16(t *testing.T, path string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.Tensor
	for _, info := range f.Tensors() {
		v, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, safetensors.F16Tensor(info.Name, info.Shape, v))
	}
	f.Close()
	if err := safetensors.WriteFile(path, out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

// TestMergeLoRALayers: an adapter on some layers (layers_to_transform) is
// merged into those layers alone, and the progress line and the report
// name them, not every layer of the model.
func TestMergeLoRALayers(t *testing.T) {
	modelDir, _ := mergeFixture(t, safetensors.F32)
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.New(m, lora.Options{R: 2, Alpha: 6, Layers: []int{1}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Params() {
		for i := range p {
			p[i] = float32(i%7-3) / 10
		}
	}
	adapterDir := filepath.Join(t.TempDir(), "adapter")
	if err := a.Save(adapterDir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	var log strings.Builder
	what, err := MergeLoRA(MergeOptions{Model: modelDir, Adapter: adapterDir, Out: out, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if want := "merged into its q_proj, v_proj of layer 1 (r 2"; !strings.Contains(what, want) {
		t.Errorf("report %q does not say %q", what, want)
	}
	if want := "into q_proj, v_proj of layer 1\n"; !strings.Contains(log.String(), want) {
		t.Errorf("progress %q does not say %q", log.String(), want)
	}
	mergedLogitsMatch(t, modelDir, adapterDir, out, safetensors.F32)
}

// TestMergeLoRAMultimodal: PEFT's adapter on the tiny Ministral-3 checkpoint
// (Mistral3ForConditionalGeneration: the language model under
// model.language_model, a vision tower and a projector the text path never
// reads) merged into it: the merged directory holds every tensor of the
// source under its name, the vision tower's and the projector's byte for
// byte, and gives the logits of the model with the adapter merged in
// float64 (transformers 5's, made by scripts/make_ministral_fixtures.py)
// within the adapters' tolerance (MODELS.md: 3e-4).
func TestMergeLoRAMultimodal(t *testing.T) {
	src := "../model/testdata/ministral3/ministral3-tiny"
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := MergeLoRA(MergeOptions{Model: src, Adapter: filepath.Join(src, "lora"), Out: out}); err != nil {
		t.Fatal(err)
	}
	a, b := openCheckpoints(t, src, out)
	if !slices.Equal(slices.Sorted(slices.Values(a.Names())), slices.Sorted(slices.Values(b.Names()))) {
		t.Fatalf("merged tensors %v, source's %v", b.Names(), a.Names())
	}
	changed := 0
	for _, n := range a.Names() {
		x, _ := a.Float64(n)
		y, _ := b.Float64(n)
		ia, _ := a.Info(n)
		ib, _ := b.Info(n)
		if ia.Dtype != ib.Dtype {
			t.Errorf("%s: stored as %s, the source's %s", n, ib.Dtype, ia.Dtype)
		}
		if !slices.Equal(x, y) {
			changed++
			if !strings.HasPrefix(n, "model.language_model.layers.") {
				t.Errorf("%s changed: only the language model's adapted projections may", n)
			}
		}
	}
	if changed == 0 {
		t.Fatal("no tensor changed: the adapter was not merged")
	}
	m, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ref := fixture.OpenRef(t, filepath.Join(src, "reference.safetensors"))
	shape, mask := ref.Shape("input_ids"), ref.Ints("attention_mask")
	res, err := m.Forward(model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids"), Mask: mask}, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	worst, _ := fixture.MaxAbsDiff(res.Logits, ref.F64("lora_logits_f64"), m.VocabSize, func(r int) bool { return mask[r] == 1 })
	if worst > 3e-4 {
		t.Errorf("merged logits %.3g from the float64 merge's", worst)
	}
	t.Logf("merged logits within %.3g of the float64 merge's; %d tensors changed", worst, changed)
}

// TestMergeLoRAFloat32: on Ministral-3's bfloat16 checkpoint, a merge
// rounds the merged weights to bfloat16 and says how much of the adapter's
// change that took; with Float32 (--dtype float32) the language model is
// written in float32 (the vision tower and projector still copied byte for
// byte), nothing is rounded, and the merged model's logits are those of the
// adapter attached to the bfloat16 model. The adapter's change scaled down
// 1000× (the size of a ZO run's: a 20-step r=16 run on the tiny model lost
// 82% of it) makes the bfloat16 merge lose a large part of it, which its
// report says.
func TestMergeLoRAFloat32(t *testing.T) {
	src := "../model/testdata/ministral3/ministral3-tiny/bf16"
	adapter := filepath.Join(t.TempDir(), "small")
	shrinkAdapter(t, "../model/testdata/ministral3/ministral3-tiny/lora", adapter, 1e-3)

	what, err := MergeLoRA(MergeOptions{Model: src, Adapter: adapter, Out: filepath.Join(t.TempDir(), "bf16")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(what, "rounding the merged weights to bfloat16 changed them by") || !strings.Contains(what, "--dtype float32") {
		t.Errorf("the bfloat16 merge does not say what rounding took, or how to keep it:\n%s", what)
	}
	t.Log(what)
	out := filepath.Join(t.TempDir(), "f32")
	what, err = MergeLoRA(MergeOptions{Model: src, Adapter: adapter, Out: out, Float32: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(what, "rounding") || !strings.HasSuffix(what, "weights float32") {
		t.Errorf("the float32 merge says:\n%s", what)
	}
	a, b := openCheckpoints(t, src, out)
	for _, n := range a.Names() {
		ia, _ := a.Info(n)
		ib, ok := b.Info(n)
		switch {
		case !ok:
			t.Errorf("%s missing from the merge", n)
		case strings.HasPrefix(n, "model.language_model.") || n == "lm_head.weight":
			if ib.Dtype != safetensors.F32 {
				t.Errorf("%s stored as %s, want F32", n, ib.Dtype)
			}
		default:
			x, _ := a.Float64(n)
			y, _ := b.Float64(n)
			if ib.Dtype != ia.Dtype || !slices.Equal(x, y) {
				t.Errorf("%s: %s, changed from the source's %s", n, ib.Dtype, ia.Dtype)
			}
		}
	}

	ref := fixture.OpenRef(t, "../model/testdata/ministral3/ministral3-tiny/reference.safetensors")
	shape, mask := ref.Shape("input_ids"), ref.Ints("attention_mask")
	in := model.Input{B: shape[0], T: shape[1], Tokens: ref.Ints("input_ids"), Mask: mask}
	base, err := model.LoadWith(src, model.LoadOptions{BF16Weights: true})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	la, err := lora.Load(adapter, base, false)
	if err != nil {
		t.Fatal(err)
	}
	la.Attach(base)
	want, err := base.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Free()
	got, err := merged.Forward(in, model.Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	wantF64 := make([]float64, len(want.Logits))
	for i, v := range want.Logits {
		wantF64[i] = float64(v)
	}
	worst, _ := fixture.MaxAbsDiff(got.Logits, wantF64, merged.VocabSize, func(r int) bool { return mask[r] == 1 })
	if worst > 3e-5 {
		t.Errorf("the float32 merge's logits %.3g from the adapter's on the bfloat16 model", worst)
	}
	t.Logf("float32 merge: logits within %.3g of the adapter's", worst)
}

// shrinkAdapter copies the PEFT adapter in src to dst with every lora_B
// scaled by factor.
func shrinkAdapter(t *testing.T, src, dst string, factor float64) {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(src, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []safetensors.Tensor
	for _, info := range f.Tensors() {
		n := info.Name
		v, err := f.Float64(n)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, len(v))
		for i := range v {
			x[i] = float32(v[i])
			if strings.Contains(n, "lora_B") {
				x[i] = float32(v[i] * factor)
			}
		}
		ts = append(ts, safetensors.F32Tensor(n, info.Shape, x))
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(filepath.Join(dst, "adapter_model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(src, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "adapter_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openCheckpoints opens the safetensors checkpoints of the model
// directories src and out, closed when the test ends.
func openCheckpoints(t *testing.T, src, out string) (a, b *safetensors.Checkpoint) {
	t.Helper()
	for _, x := range []struct {
		dir string
		to  **safetensors.Checkpoint
	}{{src, &a}, {out, &b}} {
		ck, err := safetensors.OpenCheckpoint(x.dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ck.Close() })
		*x.to = ck
	}
	return a, b
}

// TestMergeLoRAFloat32OnFloat16: --dtype float32 on a float16 checkpoint
// (OPT's) keeps the merge whole as on a bfloat16 one: the merged weights
// are written in float32 without being rounded to float16 first, and the
// report has no rounding line.
func TestMergeLoRAFloat32OnFloat16(t *testing.T) {
	modelDir, adapterDir := mergeFixture(t, safetensors.F16)
	out := filepath.Join(t.TempDir(), "f32")
	what, err := MergeLoRA(MergeOptions{Model: modelDir, Adapter: adapterDir, Out: out, Float32: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(what, "rounding") || !strings.HasSuffix(what, "weights float32") {
		t.Errorf("the float32 merge says:\n%s", what)
	}
	savedAs(t, out, safetensors.F32)
	mergedLogitsMatch(t, modelDir, adapterDir, out, safetensors.F32)
	// Each merged weight is W + ΔW in float32, not its float16 rounding.
	f, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Float64("model.layers.0.self_attn.q_proj.weight")
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, x := range v {
		if float64(safetensors.RoundF16(float32(x))) != x {
			off++
		}
	}
	if off == 0 {
		t.Errorf("every merged q_proj weight is a float16 value: the float32 merge was rounded to float16")
	}
}

// TestMergeableAdapterQuotesLongPEFTType: an adapter_config.json whose
// peft_type is megabytes long is refused with its start and its length.
func TestMergeableAdapterQuotesLongPEFTType(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"peft_type": "`+strings.Repeat("P", 1<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mergeableAdapter(dir)
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), `peft_type "PPPP`) || !strings.Contains(err.Error(), "only a LoRA adapter (LORA) is merged") {
		t.Fatalf("error %.300v, want the peft_type quoted in part", err)
	}
}

// TestMergeNotesLeftovers: a merge names the temporary directory an earlier
// merge into the same --out left when it was killed (a whole model's
// files), and removes nothing (it may be a merge running now).
func TestMergeNotesLeftovers(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, ".merged.tmp-123")
	if err := os.Mkdir(left, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, ".other.tmp-5"), 0o755)
	var log strings.Builder
	noteLeftovers(MergeOptions{Out: filepath.Join(dir, "merged"), Log: &log}, dir)
	if !strings.Contains(log.String(), "note: "+left+" is what a merge into") || strings.Contains(log.String(), "other") {
		t.Errorf("log %q", log.String())
	}
	if _, err := os.Stat(left); err != nil {
		t.Errorf("the leftover was removed: %v", err)
	}
}
