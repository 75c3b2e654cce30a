package model

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
	"github.com/meazo-go/meazo/tensor"
)

const vitTinyDir = "testdata/vit/vit-tiny"

// TestParseViTConfig: the published forms, ViTConfig's defaults, and what
// is refused.
func TestParseViTConfig(t *testing.T) {
	arch := `"architectures": ["ViTForImageClassification"], "id2label": {"0": "a", "1": "b"}`
	for _, tc := range []struct {
		name, json, err string
		check           func(*ViTConfig) bool
	}{
		{name: "defaults are ViT-B/16", json: `{` + arch + `}`, check: func(c *ViTConfig) bool {
			return c.HiddenSize == 768 && c.NumLayers == 12 && c.Tokens() == 197 && c.NumLabels == 2 && c.LayerNormEps == 1e-12 && c.QKVBias
		}},
		{name: "vit-base model (in21k)", json: `{"architectures": ["ViTModel"], "initializer_range": 0.02}`, check: func(c *ViTConfig) bool {
			return c.Headless && c.NumLabels == 0 && c.InitializerRange == 0.02
		}},
		{name: "masked image model", json: `{"architectures": ["ViTForMaskedImageModeling"]}`, err: "architectures"},
		{name: "initializer range", json: `{` + arch + `, "initializer_range": 0}`, err: "initializer_range"},
		{name: "relu", json: `{` + arch + `, "hidden_act": "relu"}`, err: "hidden_act"},
		{name: "heads", json: `{` + arch + `, "hidden_size": 100, "num_attention_heads": 12}`, err: "not a multiple of num_attention_heads"},
		{name: "patches", json: `{` + arch + `, "image_size": 100}`, err: "not a multiple of patch_size"},
		{name: "huge", json: `{` + arch + `, "image_size": 4096, "patch_size": 4}`, err: "more tokens"},
		{name: "zero layers", json: `{` + arch + `, "num_hidden_layers": 0}`, err: "num_hidden_layers is 0"},
		{name: "labels with a gap", json: `{"architectures": ["ViTForImageClassification"], "id2label": {"0": "a", "2": "b"}}`, err: `no "1"`},
		// transformers' PretrainedConfig: without id2label num_labels, else 2
		// (save_pretrained leaves two default labels out of config.json).
		{name: "no labels", json: `{"architectures": ["ViTForImageClassification"]}`, check: func(c *ViTConfig) bool { return c.NumLabels == 2 }},
		{name: "num_labels", json: `{"architectures": ["ViTForImageClassification"], "num_labels": 5}`, check: func(c *ViTConfig) bool { return c.NumLabels == 5 }},
		{name: "id2label over num_labels", json: `{` + arch + `, "num_labels": 5}`, check: func(c *ViTConfig) bool { return c.NumLabels == 2 }},
		{name: "empty id2label", json: `{"architectures": ["ViTForImageClassification"], "id2label": {}}`, err: "id2label's classes is 0"},
		{name: "sizes as pairs", json: `{` + arch + `, "image_size": [32, 32], "patch_size": [8, 8]}`, check: func(c *ViTConfig) bool {
			return c.ImageSize == 32 && c.PatchSize == 8 && c.Tokens() == 17
		}},
		{name: "oblong images", json: `{` + arch + `, "image_size": [32, 48]}`, err: "image_size is [32, 48]: only square images"},
		{name: "size of three", json: `{` + arch + `, "patch_size": [8, 8, 8]}`, err: "patch_size is [8, 8, 8]: want n or [height, width]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseViTConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("%+v, %v", c, err)
			}
		})
	}
}

// TestViTRefusesBadInput: pixel values of the wrong length, labels out of
// range, a checkpoint with a tensor missing or one too many.
func TestViTRefusesBadInput(t *testing.T) {
	m, err := LoadViT(vitTinyDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	px := make([]float32, 2*m.Config.PixelsPerImage())
	if _, err := m.Logits(px[:len(px)-1], 2); err == nil || !strings.Contains(err.Error(), "pixel values") {
		t.Errorf("short pixels: %v", err)
	}
	if _, err := m.Logits(nil, 0); err == nil {
		t.Error("no images: no error")
	}
	if _, _, err := m.Loss(px, 2, []int{0, 37}); err == nil || !strings.Contains(err.Error(), "label 37") {
		t.Errorf("label 37 of 37 classes: %v", err)
	}
	// Images uploaded once: forwards on them give Loss's and Logits' bits;
	// after Free, and with labels for another number of images, an error.
	for i := range px {
		px[i] = float32(i%13)/13 - 0.5
	}
	im, err := m.Images(px, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLogits, err := m.Loss(px, 2, []int{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, logits, err := m.LossOf(im, []int{3, 5})
		if err != nil || got != want || !slices.Equal(logits, wantLogits) {
			t.Fatalf("LossOf: %v, %v (%v); Loss: %v, %v", got, logits, err, want, wantLogits)
		}
	}
	if got, err := m.LogitsOf(im); err != nil || !slices.Equal(got, wantLogits) {
		t.Errorf("LogitsOf: %v (%v), want %v", got, err, wantLogits)
	}
	if _, _, err := m.LossOf(im, []int{3}); err == nil || !strings.Contains(err.Error(), "1 labels for 2 images") {
		t.Errorf("one label for two images: %v", err)
	}
	// Images cut for another model: on another backend, or in patches of
	// another size (as many values, in another order), an error.
	other, err := LoadViT(vitTinyDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	if _, err := other.LogitsOf(im); err == nil || !strings.Contains(err.Error(), "another backend") {
		t.Errorf("images of another backend: %v", err)
	}
	c8 := m.Config
	c8.PatchSize = 8
	small, err := NewRandomViT(&c8, 1, 0.02, m.Backend)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	if _, err := small.LogitsOf(im); err == nil || !strings.Contains(err.Error(), "cut for another model") {
		t.Errorf("images cut in patches of %d for a model of patches of 8: %v", m.Config.PatchSize, err)
	}
	im.Free()
	im.Free()
	if _, err := m.LogitsOf(im); err == nil || !strings.Contains(err.Error(), "after Free") {
		t.Errorf("images used after Free: %v", err)
	}
	// A decoder's update on a ViT (gate_proj): refused, not ignored; and
	// output.dense's with the widths of a square projection (A [r][hidden]
	// where it reads the intermediate size): refused, not read past.
	m.Adapter = &ViTAdapter{Layers: make([]LayerAdapter, m.Config.NumLayers)}
	m.Adapter.Layers[1].Gate = &LoRA{R: 1, A: make([]float32, m.Config.HiddenSize), B: make([]float32, m.Config.IntermediateSize), Scale: 1}
	if _, err := m.Logits(px, 2); err == nil || !strings.Contains(err.Error(), "layer 1's adapter updates gate_proj, which a ViT layer does not have") {
		t.Errorf("a gate update: %v", err)
	}
	m.Adapter.Layers[1].Gate = nil
	m.Adapter.Layers[2].Down = &LoRA{R: 1, A: make([]float32, m.Config.HiddenSize), B: make([]float32, m.Config.HiddenSize), Scale: 1}
	if _, err := m.Logits(px, 2); err == nil || !strings.Contains(err.Error(), "layer 2's LoRA of output.dense has 64 and 64 values at rank 1: want A [r][128] and B [64][r]") {
		t.Errorf("an output.dense update of the wrong shape: %v", err)
	}
	m.Adapter = nil

	// Another model's config over these weights: a layer's tensors unused.
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(vitTinyDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "config.json" {
			b = []byte(strings.Replace(string(b), `"num_hidden_layers": 3`, `"num_hidden_layers": 2`, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadViT(dir, nil); err == nil || !strings.Contains(err.Error(), "vit.encoder.layer.2") {
		t.Errorf("2 of 3 layers: %v", err)
	}
	cfg, _ := os.ReadFile(filepath.Join(vitTinyDir, "config.json"))
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(cfg), `"num_hidden_layers": 3`, `"num_hidden_layers": 4`, 1)), 0o644)
	if _, err := LoadViT(dir, nil); err == nil || !strings.Contains(err.Error(), `missing tensor "vit.encoder.layer.3.layernorm_before.weight"`) {
		t.Errorf("4 of 3 layers: %v", err)
	}
}

// TestLoadViTHeadless: a ViTModel checkpoint loads as
// ViTForImageClassification.from_pretrained(num_labels=…) loads it: the
// same encoder as the fixture's, the pooler skipped unread, a fresh
// classifier of the asked classes (transformers' init: truncated normal of
// std initializer_range, zero bias) drawn from the seed.
func TestLoadViTHeadless(t *testing.T) {
	dir := t.TempDir()
	fixture.WriteViTModel(t, vitTinyDir, dir)
	if _, err := LoadViT(dir, nil); err == nil || !strings.Contains(err.Error(), "number of classes must be given") {
		t.Fatalf("a ViTModel without classes: %v", err)
	}
	m, err := LoadViTWith(dir, ViTLoadOptions{NumLabels: 5, HeadSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ref, err := LoadViT(vitTinyDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Free()
	px := make([]float32, m.Config.PixelsPerImage())
	for i := range px {
		px[i] = float32(i%17)/8 - 1
	}
	got, err1 := m.HiddenStates(px, 1)
	want, err2 := ref.HiddenStates(px, 1)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]float32]) {
		t.Error("the ViTModel checkpoint's encoder computes other hidden states than the fixture's")
	}
	w, b := classifierOf(m), m.Backend.ToHost(m.Classifier.B)
	if len(w) != 5*64 || slices.ContainsFunc(b, func(x float32) bool { return x != 0 }) {
		t.Fatalf("classifier: %d weights, bias %v; want 5×64 and zero", len(w), b)
	}
	var sum, sq float64
	for _, x := range w {
		sum, sq = sum+float64(x), sq+float64(x)*float64(x)
	}
	mean, std := sum/float64(len(w)), math.Sqrt(sq/float64(len(w))-sum*sum/float64(len(w)*len(w)))
	if math.Abs(mean) > 0.004 || math.Abs(std-0.02) > 0.003 {
		t.Errorf("fresh classifier weights: mean %.4f, std %.4f; want 0 and initializer_range 0.02", mean, std)
	}
	again, err := LoadViTWith(dir, ViTLoadOptions{NumLabels: 5, HeadSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	other, err := LoadViTWith(dir, ViTLoadOptions{NumLabels: 5, HeadSeed: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(classifierOf(again), w) || slices.Equal(classifierOf(other), w) {
		t.Error("the fresh classifier is not a function of the seed")
	}
	again.Free()
	other.Free()
	// A classifier checkpoint of other classes than the task's.
	if _, err := LoadViTWith(vitTinyDir, ViTLoadOptions{NumLabels: 10}); err == nil || !strings.Contains(err.Error(), "gives 37 classes (id2label, else num_labels, else transformers' 2), but the task has 10") {
		t.Errorf("37 classes for a task of 10: %v", err)
	}
}

// classifierOf reads a ViT's classifier weight back from its backend.
func classifierOf(m *ViT) []float32 {
	be := m.Backend
	rows := make([]int, m.Config.NumLabels)
	for i := range rows {
		rows[i] = i
	}
	dst := be.Alloc(len(rows) * m.Config.HiddenSize)
	defer be.Free(dst)
	be.Rows(dst, m.Classifier.W, rows)
	return slices.Clone(be.ToHost(dst))
}

// TestNewRandomViT: a random ViT of the tiny fixture's config has its
// LayerNorm scales near 1 and its other tensors near 0, gives finite logits,
// and is the same model again for the same seed (another for another seed).
func TestNewRandomViT(t *testing.T) {
	c, err := LoadViTConfig(filepath.Join(vitTinyDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	logits := func(seed uint64) []float32 {
		m, err := NewRandomViT(c, seed, 0.02, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		be := m.Backend
		for _, x := range []struct {
			name     string
			buf      tensor.Buf
			lo, high float32
		}{{"layernorm_before.weight", m.Layers[0].NormBefore.W, 0.9, 1.1}, {"layernorm_after.weight", m.Layers[1].NormAfter.W, 0.9, 1.1},
			{"vit.layernorm.weight", m.Norm.W, 0.9, 1.1}, {"layernorm_before.bias", m.Layers[0].NormBefore.B, -0.04, 0.04},
			{"cls_token", m.Embed.CLS, -0.04, 0.04}} {
			for i, v := range be.ToHost(x.buf) {
				if !(v >= x.lo && v <= x.high) {
					t.Fatalf("seed %d: %s[%d] = %v, want in [%v, %v]", seed, x.name, i, v, x.lo, x.high)
				}
			}
		}
		px := make([]float32, 2*c.PixelsPerImage())
		for i := range px {
			px[i] = float32(i%7)/7 - 0.5
		}
		out, err := m.Logits(px, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("seed %d: logit %d is %v", seed, i, v)
			}
		}
		return slices.Clone(out)
	}
	a, b, other := logits(1), logits(1), logits(2)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave other logits")
	}
	if slices.Equal(a, other) {
		t.Error("seeds 1 and 2 gave the same logits")
	}
}

// TestWriteRandomViT: the written checkpoint loads back (config.json parses
// to the same config) and gives the returned model's logits bit for bit; a
// config without classes is refused.
func TestWriteRandomViT(t *testing.T) {
	c, err := LoadViTConfig(filepath.Join(vitTinyDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := WriteRandomViT(dir, c, 3, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	back, err := LoadViT(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	if back.Config != *c {
		t.Errorf("config.json reads back as %+v, want %+v", back.Config, *c)
	}
	px := make([]float32, 3*c.PixelsPerImage())
	for i := range px {
		px[i] = float32(i%11)/11 - 0.5
	}
	want, err := m.Logits(px, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.Logits(px, 3)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("the written checkpoint's logits differ from the model's (%v)", err)
	}
	headless := *c
	headless.Headless, headless.NumLabels = true, 0
	if _, err := WriteRandomViT(t.TempDir(), &headless, 3, 0.02); err == nil || !strings.Contains(err.Error(), "no classifier") {
		t.Errorf("a ViTModel config: got %v", err)
	}
}

// TestViTPatches: the patches of images cut side by side are the
// convolution's input rows: patch (gy, gx) of image i holds, channel by
// channel and row by row, the p×p pixels at (gy·p, gx·p), for a batch of
// more images than workers.
func TestViTPatches(t *testing.T) {
	c := &ViTConfig{NumChannels: 3, ImageSize: 12, PatchSize: 4}
	n := 2*runtime.GOMAXPROCS(0) + 1
	px := make([]float32, n*c.PixelsPerImage())
	for i := range px {
		px[i] = float32(i)
	}
	got := c.patches(px, n)
	p, side, grid, width := c.PatchSize, c.ImageSize, c.ImageSize/c.PatchSize, c.NumChannels*c.PatchSize*c.PatchSize
	if len(got) != len(px) {
		t.Fatalf("%d patch values for %d pixels", len(got), len(px))
	}
	for img := range n {
		for k := range c.Patches() {
			gy, gx := k/grid, k%grid
			for j := range width {
				ch, y, x := j/(p*p), j/p%p, j%p
				want := px[img*c.PixelsPerImage()+ch*side*side+(gy*p+y)*side+gx*p+x]
				if v := got[(img*c.Patches()+k)*width+j]; v != want {
					t.Fatalf("image %d, patch %d, value %d: %v, want %v", img, k, j, v, want)
				}
			}
		}
	}
}
