package imageproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/jsonkeys"
)

// Config is what a checkpoint's preprocessor_config.json says the image
// processor does, with ViTImageProcessor's defaults where it says nothing.
type Config struct {
	DoResize      bool
	Height, Width int // the resized image's size
	DoRescale     bool
	RescaleFactor float64
	DoNormalize   bool
	Mean, Std     [3]float64
}

// pilBilinear is PILImageResampling.BILINEAR, the "resample" value of every
// ViT checkpoint (the only filter this package implements).
const pilBilinear = 2

// processorTypes are the processors whose computation Config describes.
var processorTypes = map[string]bool{"": true, "ViTImageProcessor": true, "ViTFeatureExtractor": true}

// knownKeys are the keys Parse reads, and the ones that change nothing here:
// the processor's names, and do_convert_rgb (the image is always converted
// to RGB, which a 3-channel model needs anyway).
var knownKeys = map[string]bool{
	"do_resize": true, "size": true, "resample": true, "do_rescale": true, "rescale_factor": true,
	"do_normalize": true, "image_mean": true, "image_std": true, "do_convert_rgb": true,
	"image_processor_type": true, "feature_extractor_type": true, "processor_class": true,
}

// rawConfig is the file's JSON; pointers tell an absent key from a zero.
type rawConfig struct {
	DoResize      json.RawMessage `json:"do_resize"`
	Size          json.RawMessage `json:"size"`
	Resample      *int            `json:"resample"`
	DoRescale     json.RawMessage `json:"do_rescale"`
	RescaleFactor json.RawMessage `json:"rescale_factor"`
	DoNormalize   json.RawMessage `json:"do_normalize"`
	ImageMean     json.RawMessage `json:"image_mean"`
	ImageStd      json.RawMessage `json:"image_std"`
	ProcessorType string          `json:"image_processor_type"`
	ExtractorType string          `json:"feature_extractor_type"`
}

// LoadConfig reads a preprocessor_config.json.
func LoadConfig(path string) (Config, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("load image processor config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("load %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig reads a preprocessor_config.json's bytes as ViTImageProcessor
// does: absent keys take its defaults (resize to 224×224 with BILINEAR,
// rescale by 1/255, normalise by mean and std 0.5); a size given as one
// number is a square (get_size_dict). A key it does not apply, another
// processor type, another resampling filter, or a value out of range is an
// error naming it.
func ParseConfig(b []byte) (Config, error) {
	var raw rawConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("image processor config: %w", err)
	}
	if k, v := jsonkeys.Unapplied(b, knownKeys); k != "" {
		return Config{}, fmt.Errorf("image processor config: %q = %s is not applied by this reader (ViTImageProcessor's keys are)", k, v)
	}
	for _, t := range []string{raw.ProcessorType, raw.ExtractorType} {
		if !processorTypes[t] {
			return Config{}, fmt.Errorf("image processor config: processor %s is not ViTImageProcessor", clip.Quote(t))
		}
	}
	c := Default(224)
	for _, f := range []struct {
		key string
		raw json.RawMessage
		dst *bool
	}{{"do_resize", raw.DoResize, &c.DoResize}, {"do_rescale", raw.DoRescale, &c.DoRescale}, {"do_normalize", raw.DoNormalize, &c.DoNormalize}} {
		if err := setFlag(f.key, f.raw, f.dst); err != nil {
			return Config{}, err
		}
	}
	switch {
	case string(raw.RescaleFactor) == "null":
		// transformers multiplies by it and fails.
		return Config{}, fmt.Errorf("image processor config: rescale_factor is null (ViTImageProcessor fails on it): give a number, 1/255 as a rule")
	case len(raw.RescaleFactor) > 0:
		if err := json.Unmarshal(raw.RescaleFactor, &c.RescaleFactor); err != nil {
			return Config{}, fmt.Errorf("image processor config: rescale_factor %s is not a number", clip.Raw(string(raw.RescaleFactor)))
		}
	}
	if raw.Resample != nil && *raw.Resample != pilBilinear {
		return Config{}, fmt.Errorf("image processor config: resample = %d; only BILINEAR (%d) is implemented", *raw.Resample, pilBilinear)
	}
	var err error
	if c.Height, c.Width, err = parseSize(raw.Size, c.Height, c.Width); err != nil {
		return Config{}, err
	}
	if err := parseTriple("image_mean", raw.ImageMean, &c.Mean); err != nil {
		return Config{}, err
	}
	if err := parseTriple("image_std", raw.ImageStd, &c.Std); err != nil {
		return Config{}, err
	}
	return c, c.validate()
}

// setFlag reads a do_… flag as ViTImageProcessor does: absent keeps the
// default (true), and null turns the step off (it keeps the None, which
// preprocess reads as false), as false does.
func setFlag(key string, raw json.RawMessage, dst *bool) error {
	switch string(raw) {
	case "":
		return nil
	case "null":
		*dst = false
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("image processor config: %s %s is not true, false or null", key, clip.Raw(string(raw)))
	}
	return nil
}

// parseSize reads "size": a number (a square) or {"height": h, "width": w}.
func parseSize(raw json.RawMessage, h, w int) (int, int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return h, w, nil
	}
	var side int
	if json.Unmarshal(raw, &side) == nil {
		return side, side, nil
	}
	var hw map[string]int
	if err := json.Unmarshal(raw, &hw); err != nil {
		return 0, 0, fmt.Errorf("image processor config: size %s is neither a number nor {\"height\", \"width\"}", clip.Raw(string(raw)))
	}
	for k := range hw {
		if k != "height" && k != "width" {
			return 0, 0, fmt.Errorf("image processor config: size key %s is not implemented (height and width are)", clip.Quote(k))
		}
	}
	if _, ok := hw["height"]; !ok {
		return 0, 0, fmt.Errorf("image processor config: size %s has no height", clip.Raw(string(raw)))
	}
	if _, ok := hw["width"]; !ok {
		return 0, 0, fmt.Errorf("image processor config: size %s has no width", clip.Raw(string(raw)))
	}
	return hw["height"], hw["width"], nil
}

// parseTriple reads a per-channel value: one number for every channel or
// three (transformers' normalize accepts either).
func parseTriple(key string, raw json.RawMessage, dst *[3]float64) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var one float64
	if json.Unmarshal(raw, &one) == nil {
		*dst = [3]float64{one, one, one}
		return nil
	}
	var three []float64
	if err := json.Unmarshal(raw, &three); err != nil || len(three) != 3 {
		return fmt.Errorf("image processor config: %s = %s is not a number or three numbers", key, clip.Raw(string(raw)))
	}
	copy(dst[:], three)
	return nil
}

// CheckSide refuses a configuration whose resize does not give the
// side×side images a model takes (its config.json's image_size): a
// preprocessor_config.json of another model, or a "size" of 32768 that
// would resize every image to gigabytes of pixels before the mismatch
// shows. Without a resize the decoded images must be side×side already,
// which is checked image by image.
func (c Config) CheckSide(side int) error {
	if c.DoResize && (c.Height != side || c.Width != side) {
		return fmt.Errorf("image processor config: size %d×%d is not the %d×%d images the model takes (its config.json's image_size)", c.Height, c.Width, side, side)
	}
	return nil
}

func (c Config) validate() error {
	if c.DoResize && (c.Height <= 0 || c.Width <= 0 || c.Height > maxSide || c.Width > maxSide) {
		return fmt.Errorf("image processor config: size %d×%d is not between 1 and %d a side", c.Height, c.Width, maxSide)
	}
	if c.DoRescale && (c.RescaleFactor <= 0 || math.IsInf(c.RescaleFactor, 0)) {
		return fmt.Errorf("image processor config: rescale_factor %v is not a positive number", c.RescaleFactor)
	}
	for i := range c.Std {
		if c.DoNormalize && (c.Std[i] == 0 || math.IsNaN(c.Std[i]) || math.IsInf(c.Std[i], 0) || math.IsInf(c.Mean[i], 0)) {
			return fmt.Errorf("image processor config: channel %d's mean %v and std %v cannot normalise", i, c.Mean[i], c.Std[i])
		}
		// The arithmetic is float32's (Pixels): a std of 1e-320 is 0 there,
		// a mean of 1e308 infinite, a rescale_factor of 1e300 overflows. The
		// values are monotonic in the sample, so its ends bound them all.
		mean, std := float32(c.Mean[i]), float32(c.Std[i])
		for _, sample := range []uint8{0, 255} {
			if v := c.value(sample, mean, std); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("image processor config: channel %d's sample %d gives pixel value %v (rescale_factor %v, mean %v, std %v, in float32 as transformers computes them)",
					i, sample, v, c.RescaleFactor, c.Mean[i], c.Std[i])
			}
		}
	}
	return nil
}

// Default is ViTImageProcessor's configuration for images of side×side:
// what ParseConfig gives for a file that sets only the size (BILINEAR,
// rescale by 1/255, mean and std 0.5), as google/vit-* publish it.
func Default(side int) Config {
	return Config{DoResize: true, Height: side, Width: side, DoRescale: true, RescaleFactor: 1.0 / 255,
		DoNormalize: true, Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}
}

// JSON renders c as a preprocessor_config.json that transformers'
// ViTImageProcessor and ParseConfig read back as c.
func (c Config) JSON() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(map[string]any{
		"image_processor_type": "ViTImageProcessor",
		"do_resize":            c.DoResize,
		"size":                 map[string]int{"height": c.Height, "width": c.Width},
		"resample":             pilBilinear,
		"do_rescale":           c.DoRescale,
		"rescale_factor":       c.RescaleFactor,
		"do_normalize":         c.DoNormalize,
		"image_mean":           c.Mean,
		"image_std":            c.Std,
	}, "", "  ")
	return append(b, '\n'), err
}
