package model

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// TestBinToSafetensors: scripts/bin_to_safetensors.py, on checkpoints that
// PyTorch's torch.save wrote (scripts/make_bin_checkpoints.py), converts a
// state dict exactly (float32 and float16, a module's state_dict() with its
// _metadata, the shards pytorch_model.bin.index.json names, views made
// contiguous, the base model's names given save_pretrained's "model." and
// the tied lm_head left out), and refuses what is not a zip checkpoint of a
// state dict, a missing shard, config.json or checkpoint, with a message
// naming the file, writing nothing. Needs Debian's python3-torch (skipped
// without it, failed under MEAZO_REQUIRE_PEFT=1).
func TestBinToSafetensors(t *testing.T) {
	py := fixture.NewPEFT(t)
	src, out := filepath.Join("testdata", "opt", "opt-tiny"), t.TempDir()
	if msg, err := py.Python("make_bin_checkpoints.py", src, out); err != nil {
		t.Fatalf("make_bin_checkpoints.py: %v\n%s", err, msg)
	}
	convert := func(name string) (string, error) { return py.Python("bin_to_safetensors.py", filepath.Join(out, name)) }

	if msg, err := convert("f32"); err != nil {
		t.Fatalf("f32: %v\n%s", err, msg)
	}
	sameTensors(t, "f32", filepath.Join(out, "f32", "model.safetensors"), filepath.Join(src, "model.safetensors"))
	if _, err := Load(filepath.Join(out, "f32")); err != nil {
		t.Errorf("the converted float32 checkpoint does not load: %v", err)
	}
	// torch.save(model.state_dict()): the OrderedDict's _metadata attribute
	// (the modules' versions) names no tensor and is dropped.
	if msg, err := convert("meta"); err != nil {
		t.Fatalf("meta: %v\n%s", err, msg)
	}
	sameTensors(t, "meta", filepath.Join(out, "meta", "model.safetensors"), filepath.Join(src, "model.safetensors"))
	// The shards pytorch_model.bin.index.json names, into one file.
	if msg, err := convert("sharded"); err != nil {
		t.Fatalf("sharded: %v\n%s", err, msg)
	}
	sameTensors(t, "sharded", filepath.Join(out, "sharded", "model.safetensors"), filepath.Join(src, "model.safetensors"))
	if msg, err := convert("f16"); err != nil {
		t.Fatalf("f16: %v\n%s", err, msg)
	}
	sameTensors(t, "f16", filepath.Join(out, "f16", "model.safetensors"), filepath.Join(out, "f16", "expected.safetensors"))
	if msg, err := convert("f32"); err == nil || !strings.Contains(msg, "exists: nothing written") {
		t.Errorf("a second conversion over model.safetensors: %v, %q; want a refusal", err, msg)
	}

	noConfig, noBin := filepath.Join(out, "no-config"), filepath.Join(out, "no-bin")
	os.MkdirAll(noConfig, 0o755)
	os.MkdirAll(noBin, 0o755)
	os.WriteFile(filepath.Join(noBin, "config.json"), []byte("{}"), 0o644)
	for dir, want := range map[string]string{
		noConfig:                        filepath.Join(noConfig, "config.json") + ": No such file or directory: MODEL_DIR is the model's directory",
		noBin:                           noBin + ": no pytorch_model.bin, nor pytorch_model.bin.index.json and its shards: nothing to convert",
		filepath.Join(out, "shardgone"): "pytorch_model.bin.index.json: names pytorch_model-00002-of-00002.bin, which is not in",
	} {
		msg, err := py.Python("bin_to_safetensors.py", dir)
		if err == nil || !strings.Contains(msg, want) || strings.Contains(msg, "Traceback") {
			t.Errorf("%s: %v, %q; want a one-line refusal saying %q", dir, err, msg, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
			t.Errorf("%s: model.safetensors written by a refused conversion", dir)
		}
	}
	for name, want := range map[string]string{
		"legacy": "not a complete zip file", "trunc": "not a complete zip file",
		"module": "torch.nn.modules.linear.Linear is not part of a state dict", "list": "it holds a list, not a state dict",
		"nonsd": "entry 'step' is not a tensor",
	} {
		msg, err := convert(name)
		bin := filepath.Join(out, name, "pytorch_model.bin")
		if err == nil || !strings.Contains(msg, bin+": ") || !strings.Contains(msg, want) || strings.Contains(msg, "Traceback") {
			t.Errorf("%s: %v, %q; want a one-line refusal naming %s and saying %q", name, err, msg, bin, want)
		}
		entries, _ := os.ReadDir(filepath.Join(out, name))
		if len(entries) != 2 {
			t.Errorf("%s: the folder has %d files after a refused conversion, want its 2", name, len(entries))
		}
	}
}

// sameTensors fails t unless the safetensors files got and want hold the
// same tensors, names and values (widened to float32) alike.
func sameTensors(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := fixture.Tensors(t, got), fixture.Tensors(t, want)
	if !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
		t.Fatalf("%s: tensors %v, want %v", what, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
	}
	for name, v := range w {
		if !slices.Equal(g[name], v) {
			t.Errorf("%s: %s differs", what, name)
		}
	}
}
