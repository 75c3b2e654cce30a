package main

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

const vitTiny = "../../model/testdata/vit/vit-tiny"

// TestForwardViT runs meazo-inspect forward on the tiny ViT fixture and
// compares with HF's float64 references (scripts/make_vit_fixtures.py):
// from the reference's pixel_values as JSON, with and without the PEFT
// LoRA adapter, and from the PNG files the references were made from
// (whose pixel_values must be the reference's bit for bit, and so its
// logits the JSON run's).
func TestForwardViT(t *testing.T) {
	ref := fixture.OpenRef(t, filepath.Join(vitTiny, "reference.safetensors"))
	px := ref.F64("pixel_values")
	shape := ref.Shape("pixel_values") // [4, 3, 64, 64]
	nested := make([][][][]float64, shape[0])
	for i := range nested {
		nested[i] = make([][][]float64, shape[1])
		for c := range nested[i] {
			nested[i][c] = make([][]float64, shape[2])
			for y := range nested[i][c] {
				at := ((i*shape[1]+c)*shape[2] + y) * shape[3]
				nested[i][c][y] = px[at : at+shape[3]]
			}
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	b, _ := json.Marshal(map[string]any{"pixel_values": nested, "labels": ref.Ints("labels")})
	os.WriteFile(in, b, 0o644)
	var images []string
	for _, name := range strings.Split("scene_300x200.png,scene_97x61.png,alpha_120x90.png,gray_150x100.png", ",") {
		images = append(images, filepath.Join("../../imageproc/testdata", name))
	}
	run := func(t *testing.T, args ...string) map[string][]float32 {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.safetensors")
		if err := runForward(append([]string{"--model", vitTiny, "--out", out}, args...), nil, io.Discard); err != nil {
			t.Fatal(err)
		}
		return fixture.Tensors(t, out)
	}
	const tol = 2e-4 // docs/MODELS.md: float32 logits against float64 references
	base := run(t, "--input", in, "--hidden-states")
	for _, c := range []struct {
		got, want string
		tol       float64
	}{{"logits", "logits_f64", tol}, {"loss", "loss_f64", tol}, {"hidden_states", "hidden_states_f64", 1e-4}} {
		d, at := fixture.MaxAbsDiff(base[c.got], ref.F64(c.want), 1, nil)
		t.Logf("%s: largest difference from HF's float64 %.3g", c.got, d)
		if d > c.tol || len(base[c.got]) != len(ref.F64(c.want)) {
			t.Errorf("%s: %d values, %d in %s; largest difference %.3g at %d (tolerance %g)", c.got, len(base[c.got]), len(ref.F64(c.want)), c.want, d, at, c.tol)
		}
	}
	adapted := run(t, "--input", in, "--adapter", filepath.Join(vitTiny, "lora"))
	if d, at := fixture.MaxAbsDiff(adapted["logits"], ref.F64("lora_logits_f64"), 1, nil); d > tol {
		t.Errorf("LoRA logits: largest difference %.3g at %d", d, at)
	}
	files := run(t, "--images", strings.Join(images, ","))
	if !slices.Equal(files["pixel_values"], base["pixel_values"]) || !slices.Equal(files["logits"], base["logits"]) {
		t.Errorf("--images: pixel_values or logits differ from the reference pixel_values' run")
	}
	if _, ok := files["loss"]; ok {
		t.Errorf("--images without labels wrote a loss")
	}
	// The same files named in the JSON, relative to it.
	rel := filepath.Join(dir, "rel.json")
	var relImages []string
	for _, p := range images {
		abs, _ := filepath.Abs(p)
		r, _ := filepath.Rel(dir, abs)
		relImages = append(relImages, r)
	}
	b, _ = json.Marshal(map[string]any{"images": relImages, "labels": ref.Ints("labels")})
	os.WriteFile(rel, b, 0o644)
	if got := run(t, "--input", rel); !slices.Equal(got["logits"], base["logits"]) || got["loss"][0] != base["loss"][0] {
		t.Errorf(`"images" in the JSON: logits or loss differ from the reference pixel_values' run`)
	}
	if math.IsNaN(float64(base["loss"][0])) {
		t.Errorf("loss is NaN")
	}
}

// TestForwardViTRefusesBadInput: input that does not fit the model, or
// flags that do not fit the checkpoint, are errors that say what is wrong.
func TestForwardViTRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(v)
		os.WriteFile(p, b, 0o644)
		return p
	}
	img := func(c, h, w int) [][][]float32 {
		out := make([][][]float32, c)
		for i := range out {
			out[i] = make([][]float32, h)
			for y := range out[i] {
				out[i][y] = make([]float32, w)
			}
		}
		return out
	}
	out := filepath.Join(dir, "out.safetensors")
	png := "../../imageproc/testdata/scene_97x61.png"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"channels", []string{"--input", write("c.json", map[string]any{"pixel_values": [][][][]float32{img(1, 64, 64)}})}, "image 0 has 1 channels; the model takes 3"},
		{"side", []string{"--input", write("s.json", map[string]any{"pixel_values": [][][][]float32{img(3, 64, 63)}})}, "row 0 has 63 values; the model takes 64×64"},
		{"labels", []string{"--input", write("l.json", map[string]any{"pixel_values": [][][][]float32{img(3, 64, 64)}, "labels": []int{1, 2}})}, `"labels" has 2 entries for 1 images`},
		{"class", []string{"--input", write("k.json", map[string]any{"pixel_values": [][][][]float32{img(3, 64, 64)}, "labels": []int{37}})}, "label 37 is not one of the 37 classes"},
		{"neither", []string{"--input", write("n.json", map[string]any{"labels": []int{1}})}, `give "pixel_values" [B][C][H][W] or "images"`},
		{"both", []string{"--input", write("b.json", map[string]any{"labels": []int{1}}), "--images", png}, "--input and --images: give one"},
		{"not an image", []string{"--images", filepath.Join(vitTiny, "config.json")}, "config.json"},
		{"out is an input", []string{"--input", write("o.json", map[string]any{"images": []string{"out.safetensors"}})}, "--out"},
		{"an empty name", []string{"--images", png + ","}, "--images: image 2 of 2 is an empty name"},
	} {
		err := runForward(append([]string{"--model", vitTiny, "--out", out}, c.args...), nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run wrote %s", out)
	}
	err := runForward([]string{"--model", "../../model/testdata/opt/opt-tiny", "--images", png, "--out", out}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "are for a ViT image classifier") {
		t.Errorf("--images on a decoder: got %v", err)
	}
}
