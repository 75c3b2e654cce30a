package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
)

const vitTinyConfig = "../../model/testdata/vit/vit-tiny/config.json"

// TestViTStep runs vitstep on the tiny ViT fixture's config and checks the
// lines the GPU session reads: the two forwards, the step against them,
// the run of steps, and the peak memory.
func TestViTStep(t *testing.T) {
	var out bytes.Buffer
	if err := runViTStep([]string{"-model", vitTinyConfig, "-batch", "3", "-reps", "2", "-steps", "4", "-threads", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`^# .*: ViT, 3 layers, hidden 64, 64x64 images in 16 patches, 37 classes, 153317 parameters`,
		`LoRA r=16 on query/value and the classifier trained whole \(14693 trainable\)`,
		`^3x64 +2 plain forwards +[0-9.]+ +1\.00$`,
		`^3x64 +of which images in +[0-9.]+ +[0-9.]+$`,
		`^3x64 +ZO step q=1 +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+$`,
		`^3x64 +4 MEAZO steps on new random batches: [0-9.]+ s/step .*; loss [0-9.]+ at the first, [0-9.]+ at the last$`,
		`^peak RSS [0-9.]+ GiB$`,
	} {
		if !regexp.MustCompile(`(?m)` + w).MatchString(out.String()) {
			t.Errorf("no line matches %q in:\n%s", w, out.String())
		}
	}
}

// TestViTStepRefuses: a missing or non-ViT config and bad sizes are
// errors naming the flag or the file.
func TestViTStepRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-model: a ViTForImageClassification config.json is required"},
		{[]string{"-model", vitTinyConfig, "-batch", "0"}, "-batch: must be between 1 and 4096"},
		{[]string{"-model", vitTinyConfig, "-reps", "0"}, "-reps: must be >= 1"},
		{[]string{"-model", vitTinyConfig, "-steps", "-1"}, "-steps: must be >= 0"},
		{[]string{"-model", "../../scripts/gpu/qwen3-8b-config.json"}, "qwen3-8b-config.json"},
		{[]string{"-model", "no-such.json"}, "no-such.json"},
	} {
		var out bytes.Buffer
		err := runViTStep(tc.args, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestViTB16PetsConfig holds scripts/gpu/vit-b16-pets-config.json, the
// model the GPU session's models part measures on both sides, to the
// paper's ViT-B/16 on Pets: 85,827,109 parameters, 618,277 of them
// trainable with LoRA r = 16 on query and value and the classifier.
func TestViTB16PetsConfig(t *testing.T) {
	c, err := model.LoadViTConfig("../../scripts/gpu/vit-b16-pets-config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.NumLabels != 37 || c.ImageSize != 224 || c.PatchSize != 16 || c.ParamCount() != 85_827_109 {
		t.Fatalf("%d classes, %d px, patches of %d, %d parameters; want 37, 224, 16, 85,827,109", c.NumLabels, c.ImageSize, c.PatchSize, c.ParamCount())
	}
	// One layer of the real width is enough to count the adapter: the
	// count is per layer plus the classifier.
	one := *c
	one.NumLayers = 1
	m, err := model.NewRandomViT(&one, 1, 0.02, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	a, err := lora.NewViT(m, lora.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	head := 37*768 + 37
	if got := (a.Count()-head)*c.NumLayers + head; got != 618_277 {
		t.Errorf("%d trainable for 12 layers, want 618,277", got)
	}
}
