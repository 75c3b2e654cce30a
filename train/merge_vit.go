package train

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/peftweights"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
)

// mergeViT is MergeLoRA for a ViT image classifier (opts.Model a
// ViTForImageClassification checkpoint, or a ViTModel one such as
// google/vit-base-patch16-224-in21k, which a pets run starts from) and a
// ViT LoRA adapter (lora.LoadViT): it writes into opts.Out the
// ViTForImageClassification that PEFT's merge_and_unload makes of them,
// as save_pretrained would write it: config.json (the base's; a ViTModel's
// made a ViTForImageClassification with the adapter's classes, named
// LABEL_0… as transformers names them), the base's
// preprocessor_config.json, and model.safetensors (sharded as
// save_pretrained shards) holding every weight of the base by its
// ViTForImageClassification name, in the dtype the base stores it: the
// adapted linear layers W + scale·B·A (lora.MergeViT: in float32, rounded
// once to that dtype), the classifier the adapter's trained copy
// (modules_to_save), every other tensor the base's own bytes, copied as it
// is written (a pooler, which ViTForImageClassification has not, left out,
// as its loader leaves it unread). Only the merged weights and the
// classifier are held in memory, encoded.
func mergeViT(opts MergeOptions, start time.Time) (string, error) {
	labels, err := vitAdapterClasses(opts.Adapter)
	if err != nil {
		return "", fmt.Errorf("--model %s is an image classifier (ViT), so --adapter must be a ViT's LoRA adapter: %w", opts.Model, err)
	}
	opts.phase(start, "loading %s", opts.Model)
	m, err := model.LoadViTWith(opts.Model, model.ViTLoadOptions{Backend: opts.Backend, NumLabels: labels})
	if err != nil {
		return "", fmt.Errorf("--model: %w (the adapter's classifier has %d classes)", err, labels)
	}
	defer m.Free()
	a, err := lora.LoadViT(opts.Adapter, m, false)
	if err != nil {
		return "", fmt.Errorf("--adapter: %w", err)
	}
	opts.phase(start, "merging %s into %s of %s", opts.Adapter, strings.Join(a.Targets(), ", "), layerList(a.Layers()))
	merged := lora.MergeViT(m, a.View(a.Params()))
	defer lora.FreeMergedViT(merged, m)
	opts.phase(start, "writing %s", opts.Out)
	var dtypes []string
	err = writeWhole(opts, func(dir string) error {
		var err error
		dtypes, err = writeMergedViT(dir, opts.Model, m, merged, opts.Float32)
		return err
	})
	if err != nil {
		return "", err
	}
	opts.phase(start, "done")
	where := strings.Join(a.Targets(), ", ")
	if ls := a.Layers(); len(ls) < m.Config.NumLayers {
		where += " of " + layerList(ls)
	}
	scale := a.Alpha() / float64(a.Rank())
	if a.RSLoRA() {
		scale = a.Alpha() / math.Sqrt(float64(a.Rank()))
	}
	return fmt.Sprintf("wrote %s: the ViTForImageClassification %s with the LoRA adapter %s merged into its %s (r %d, scale %g) and the adapter's classifier (%d classes); weights %s",
		opts.Out, opts.Model, opts.Adapter, where, a.Rank(), scale, labels, strings.Join(dtypes, ", ")), nil
}

// vitAdapterClasses is the number of classes of the classifier a ViT
// adapter saves (modules_to_save: base_model.model.classifier.bias), so
// that a ViTModel base gets a classifier of that size to merge into.
func vitAdapterClasses(dir string) (int, error) {
	f, err := peftweights.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const bias = "base_model.model.classifier.bias"
	info, ok := f.Info(bias)
	if !ok || len(info.Shape) != 1 || info.Shape[0] < 1 {
		return 0, fmt.Errorf("--adapter %s has no classifier (tensor %q of shape [classes]), which a ViT's adapter saves (modules_to_save [\"classifier\"])", dir, bias)
	}
	return info.Shape[0], nil
}

// writeMergedViT writes into dir the merged ViT's files (see mergeViT)
// from the checkpoint in src that m was loaded from, and returns the
// dtypes its weights were written in (every one float32 with f32: --dtype
// float32).
func writeMergedViT(dir, src string, m, merged *model.ViT, f32 bool) ([]string, error) {
	ck, err := safetensors.OpenCheckpoint(src)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	tensors, written, err := mergedViTTensors(ck, src, m, merged, f32)
	if err != nil {
		return nil, err
	}
	if err := safetensors.WriteSharded(dir, tensors, map[string]string{"format": "pt"}, safetensors.DefaultMaxShard); err != nil {
		return nil, err
	}
	if err := writeViTConfig(dir, src, &m.Config); err != nil {
		return nil, err
	}
	if b, err := inputfile.ReadFile(filepath.Join(src, "preprocessor_config.json")); err == nil {
		if err := atomicfile.WriteFile(filepath.Join(dir, "preprocessor_config.json"), b); err != nil {
			return nil, err
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("--model: %w", err)
	}
	names := map[safetensors.Dtype]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16", safetensors.F64: "float64"}
	var dtypes []string
	for d := range written {
		dtypes = append(dtypes, names[d])
	}
	slices.Sort(dtypes)
	return dtypes, nil
}

// mergedViTLinears are the merged weights of the linear layers the adapter
// changed, by tensor name, each read back from the backend when asked.
func mergedViTLinears(m, merged *model.ViT) map[string]func() []float32 {
	out := map[string]func() []float32{}
	for l := range merged.Layers {
		for p := range model.NumProj {
			lin, base := merged.Layers[l].Linear(p), m.Layers[l].Linear(p)
			if lin != nil && lin.W != base.W {
				w := lin.W
				out[lin.Name+".weight"] = func() []float32 { return readWeight(m.Backend, w) }
			}
		}
	}
	return out
}

// mergedViTTensors are the merged model's tensors in the checkpoint ck's
// order and dtypes (a ViTModel's under vit., its new classifier last, in
// its final norm's dtype; no pooler), and the dtypes written. With f32
// (--dtype float32) a bfloat16 or float16 tensor is written in float32:
// the merge kept whole, the base's values widened exactly; any other of the
// base's tensors is its bytes copied (safetensors.Checkpoint.Copy).
func mergedViTTensors(ck *safetensors.Checkpoint, src string, m, merged *model.ViT, f32 bool) ([]safetensors.Tensor, map[safetensors.Dtype]bool, error) {
	headless := m.Config.Headless
	mergedW := mergedViTLinears(m, merged)
	classifier := map[string][]float32{"classifier.weight": merged.Adapter.Classifier, "classifier.bias": merged.Adapter.ClassifierBias}
	var tensors []safetensors.Tensor
	written := map[safetensors.Dtype]bool{}
	var headDtype safetensors.Dtype
	add := func(name string, dtype safetensors.Dtype, shape []int, v []float64) error {
		if f32 && (dtype == safetensors.BF16 || dtype == safetensors.F16) {
			dtype = safetensors.F32
		}
		t, err := encodeAs(name, dtype, shape, v)
		if err != nil {
			return fmt.Errorf("--model %s: %w", src, err)
		}
		written[dtype] = true
		tensors = append(tensors, t)
		return nil
	}
	for _, sn := range ck.Names() {
		info, _ := ck.Info(sn)
		name := sn
		if strings.HasPrefix(sn, "pooler.") || strings.HasPrefix(sn, "vit.pooler.") {
			continue // ViTForImageClassification has no pooler (add_pooling_layer=False); the loader skips it too
		}
		if headless && !strings.HasPrefix(sn, "vit.") {
			name = "vit." + sn
		}
		if headDtype == "" || name == "vit.layernorm.weight" {
			headDtype = info.Dtype // a ViTModel's new classifier: stored as its final norm is
		}
		var v []float64
		var err error
		switch {
		case mergedW[name] != nil:
			v = widen(mergedW[name]())
			delete(mergedW, name)
		case classifier[name] != nil:
			v = widen(classifier[name])
			delete(classifier, name)
		case !f32 || info.Dtype != safetensors.BF16 && info.Dtype != safetensors.F16:
			// The base's own tensor, in its dtype: its bytes copied.
			written[info.Dtype] = true
			tensors = append(tensors, ck.Copy(sn, name))
			continue
		default:
			if v, err = ck.Float64(sn); err != nil {
				return nil, nil, err
			}
			ck.Release(sn)
		}
		if err := add(name, info.Dtype, info.Shape, v); err != nil {
			return nil, nil, err
		}
	}
	if len(mergedW) > 0 {
		return nil, nil, fmt.Errorf("--model %s: the checkpoint has no tensor %s to merge into", src, slices.Sorted(maps.Keys(mergedW))[0])
	}
	if headless { // the new classifier, after the encoder, as save_pretrained orders a ViTForImageClassification
		c := &m.Config
		for _, t := range []struct {
			name  string
			shape []int
		}{{"classifier.weight", []int{c.NumLabels, c.HiddenSize}}, {"classifier.bias", []int{c.NumLabels}}} {
			if err := add(t.name, headDtype, t.shape, widen(classifier[t.name])); err != nil {
				return nil, nil, err
			}
		}
	}
	return tensors, written, nil
}

// readWeight reads a weight of backend be back to the host, [out][in].
func readWeight(be tensor.Backend, w tensor.Weight) []float32 {
	n, k := w.Shape()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	buf := be.Alloc(n * k)
	defer be.Free(buf)
	be.Rows(buf, w, ids)
	return slices.Clone(be.ToHost(buf)) // (a host backend's ToHost may be the buffer itself)
}

// encodeAs stores v in dtype (the base checkpoint's), rounded to nearest
// even where dtype is narrower than the values: a float32 merge rounded
// once to bfloat16 or float16, as PEFT's weight += delta rounds it; the
// base's own values are returned exactly (they were read from dtype).
func encodeAs(name string, dtype safetensors.Dtype, shape []int, v []float64) (safetensors.Tensor, error) {
	switch dtype {
	case safetensors.F64:
		return safetensors.F64Tensor(name, shape, v), nil
	case safetensors.F32, safetensors.BF16, safetensors.F16:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		switch dtype {
		case safetensors.BF16:
			return safetensors.BF16Tensor(name, shape, f), nil
		case safetensors.F16:
			return safetensors.F16Tensor(name, shape, f), nil
		}
		return safetensors.F32Tensor(name, shape, f), nil
	}
	return safetensors.Tensor{}, fmt.Errorf("tensor %q is stored as %s, which a merged ViT is not written in (float32, bfloat16, float16 or float64)", name, dtype)
}

// writeViTConfig writes the merged model's config.json: the base's as it
// is for a ViTForImageClassification; for a ViTModel, the same made a
// ViTForImageClassification (architectures) with c.NumLabels classes,
// id2label and label2id named LABEL_0… as transformers names classes it is
// not told the names of.
func writeViTConfig(dir, src string, c *model.ViTConfig) error {
	b, err := inputfile.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if c.Headless {
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("--model %s: config.json: %w", src, err)
		}
		id2label, label2id := map[string]string{}, map[string]int{}
		for i := range c.NumLabels {
			id2label[strconv.Itoa(i)] = "LABEL_" + strconv.Itoa(i)
			label2id["LABEL_"+strconv.Itoa(i)] = i
		}
		cfg["architectures"] = []string{"ViTForImageClassification"}
		cfg["id2label"], cfg["label2id"] = id2label, label2id
		if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
			return err
		}
		b = append(b, '\n')
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), b)
}

func widen(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
