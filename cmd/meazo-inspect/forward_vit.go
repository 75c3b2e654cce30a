package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

// forward of an image classifier (a ViT checkpoint: model.IsViT) takes
// images instead of tokens: the input JSON's "pixel_values" [B][C][H][W],
// as transformers' ViTImageProcessor returns them, or image files (--images,
// or the JSON's "images": paths relative to the JSON file) that the
// checkpoint's preprocessor_config.json turns into pixel_values as
// ViTImageProcessor does (package imageproc). It writes what
// ViTForImageClassification returns: logits [B][num_labels], loss when
// the JSON has "labels" [B], and, asked for, hidden_states
// [layers+1][B][tokens][hidden]; and the pixel_values it ran.

// vitInput is forward's input JSON for a ViT.
type vitInput struct {
	PixelValues [][][][]float32 `json:"pixel_values"`
	Images      []string        `json:"images"`
	Labels      []int           `json:"labels"`
}

// vitForward are forward's flags that a ViT's forward reads.
type vitForward struct {
	model, adapter, backend, input, images, out string
	threads                                     int
	hiddenStates                                bool
}

func runForwardViT(o vitForward, stdout io.Writer) error {
	cfg, err := model.LoadViTConfig(filepath.Join(o.model, "config.json"))
	if err != nil {
		return err
	}
	if cfg.Headless {
		return fmt.Errorf("%s is a ViTModel, the encoder without a classifier: forward runs ViTForImageClassification checkpoints", o.model)
	}
	px, labels, n, err := vitPixels(o, cfg)
	if err != nil {
		return err
	}
	be, err := backends.Open(o.backend, o.threads, os.Stderr)
	if err != nil {
		return err
	}
	m, err := model.LoadViT(o.model, be)
	if err != nil {
		return err
	}
	defer m.Free()
	if o.adapter != "" {
		if err := train.AttachViTAdapter(o.adapter, m); err != nil {
			return err
		}
	}
	side, k := cfg.ImageSize, cfg.NumLabels
	tensors := []safetensors.Tensor{safetensors.F32Tensor("pixel_values", []int{n, cfg.NumChannels, side, side}, px)}
	var logits []float32
	if labels != nil {
		var loss float64
		if loss, logits, err = m.Loss(px, n, labels); err != nil {
			return err
		}
		tensors = append(tensors, safetensors.F32Tensor("loss", []int{1}, []float32{float32(loss)}))
		fmt.Fprintf(stdout, "loss %.7g over %d images\n", loss, n)
	} else if logits, err = m.Logits(px, n); err != nil {
		return err
	}
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("the logits are not finite (%v at image %d, class %d): the model's weights or config.json hold values that make its arithmetic meaningless; nothing written", v, i/k, i%k)
		}
	}
	tensors = append(tensors, safetensors.F32Tensor("logits", []int{n, k}, logits))
	if o.hiddenStates {
		states, err := m.HiddenStates(px, n)
		if err != nil {
			return err
		}
		var all []float32
		for _, s := range states {
			all = append(all, s...)
		}
		tensors = append(tensors, safetensors.F32Tensor("hidden_states", []int{len(states), n, cfg.Tokens(), cfg.HiddenSize}, all))
	}
	if err := safetensors.WriteFile(o.out, tensors, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (logits [%d,%d], pixel_values [%d,%d,%d,%d])\n", o.out, n, k, n, cfg.NumChannels, side, side)
	return nil
}

// vitPixels reads forward's input for a ViT of config c: pixel_values
// [n][C][side][side] flattened, the labels (nil: none) and n.
func vitPixels(o vitForward, c *model.ViTConfig) (px []float32, labels []int, n int, err error) {
	var in vitInput
	base := "."
	switch {
	case o.input != "" && o.images != "":
		return nil, nil, 0, fmt.Errorf("--input and --images: give one")
	case o.images != "":
		in.Images = strings.Split(o.images, ",")
	default:
		b, err := inputfile.ReadFile(o.input)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: invalid JSON: %w", o.input, err)
		}
		base = filepath.Dir(o.input)
	}
	where := o.input
	if where == "" {
		where = "--images"
	}
	switch {
	case (in.PixelValues == nil) == (in.Images == nil):
		return nil, nil, 0, fmt.Errorf(`%s: give "pixel_values" [B][C][H][W] or "images" [paths], one of them`, where)
	case in.PixelValues != nil:
		px, n, err = flattenPixels(in.PixelValues, c)
	default:
		for i, p := range in.Images {
			if p == "" { // "a.png," (joined to the base, it named the directory)
				return nil, nil, 0, fmt.Errorf("%s: image %d of %d is an empty name", where, i+1, len(in.Images))
			}
			if !filepath.IsAbs(p) {
				in.Images[i] = filepath.Join(base, p)
			}
		}
		if err := outpath.Check("--out", o.out, in.Images...); err != nil {
			return nil, nil, 0, err
		}
		px, n, err = preprocess(in.Images, o.model, c)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", where, err)
	}
	if in.Labels != nil && len(in.Labels) != n {
		return nil, nil, 0, fmt.Errorf(`%s: "labels" has %d entries for %d images`, where, len(in.Labels), n)
	}
	return px, in.Labels, n, nil
}

// flattenPixels checks that v is [n][C][side][side] for config c and
// flattens it.
func flattenPixels(v [][][][]float32, c *model.ViTConfig) ([]float32, int, error) {
	if len(v) == 0 {
		return nil, 0, fmt.Errorf(`"pixel_values" has no image`)
	}
	side := c.ImageSize
	px := make([]float32, 0, len(v)*c.PixelsPerImage())
	for i, img := range v {
		if len(img) != c.NumChannels {
			return nil, 0, fmt.Errorf(`"pixel_values" image %d has %d channels; the model takes %d`, i, len(img), c.NumChannels)
		}
		for ch, plane := range img {
			if len(plane) != side {
				return nil, 0, fmt.Errorf(`"pixel_values" image %d channel %d has %d rows; the model takes %d×%d images`, i, ch, len(plane), side, side)
			}
			for y, row := range plane {
				if len(row) != side {
					return nil, 0, fmt.Errorf(`"pixel_values" image %d channel %d row %d has %d values; the model takes %d×%d images`, i, ch, y, len(row), side, side)
				}
				px = append(px, row...)
			}
		}
	}
	return px, len(v), nil
}

// preprocess turns image files into pixel_values as the checkpoint's preprocessor_config.json says, for
// a model of config c.
func preprocess(paths []string, modelDir string, c *model.ViTConfig) ([]float32, int, error) {
	if len(paths) == 0 {
		return nil, 0, fmt.Errorf("no image")
	}
	proc, err := imageproc.LoadConfig(filepath.Join(modelDir, "preprocessor_config.json"))
	if err != nil {
		return nil, 0, err
	}
	if err := proc.CheckSide(c.ImageSize); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", filepath.Join(modelDir, "preprocessor_config.json"), err)
	}
	var px []float32
	for _, p := range paths {
		b, err := inputfile.ReadFile(p)
		if err != nil {
			return nil, 0, err
		}
		v, err := proc.File(b)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s: %w", p, err)
		}
		if len(v) != c.PixelsPerImage() {
			return nil, 0, fmt.Errorf("image %s: preprocessor_config.json makes it %d values, but the model takes %d×%d×%d images", p, len(v), c.NumChannels, c.ImageSize, c.ImageSize)
		}
		px = append(px, v...)
	}
	return px, len(paths), nil
}
