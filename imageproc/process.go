package imageproc

import "fmt"

// Pixels is ViTImageProcessor.preprocess on one decoded image: resize (if
// the config says), rescale, normalise, and channels first. It returns
// pixel_values as [3][height][width] float32, computed in the types numpy
// computes them in: the rescale multiplies the uint8 sample in float64 and
// rounds the product to float32 (image_transforms.rescale); the normalise
// subtracts and divides in float32 by the mean and std rounded to float32
// (image_transforms.normalize).
func (c Config) Pixels(img *RGB) ([]float32, error) {
	if err := img.check(); err != nil {
		return nil, fmt.Errorf("preprocess: %w", err)
	}
	if c.DoResize {
		var err error
		if img, err = Resize(img, c.Width, c.Height); err != nil {
			return nil, fmt.Errorf("preprocess: %w", err)
		}
	}
	n := img.Width * img.Height
	out := make([]float32, 3*n)
	var mean, std [3]float32
	for ch := range mean {
		mean[ch], std[ch] = float32(c.Mean[ch]), float32(c.Std[ch])
	}
	for i := 0; i < n; i++ {
		for ch := 0; ch < 3; ch++ {
			out[ch*n+i] = c.value(img.Pix[3*i+ch], mean[ch], std[ch])
		}
	}
	return out, nil
}

// value is one sample's pixel value, given its channel's mean and std
// rounded to float32.
func (c Config) value(sample uint8, mean, std float32) float32 {
	v := float32(sample)
	if c.DoRescale {
		v = float32(float64(sample) * c.RescaleFactor)
	}
	if c.DoNormalize {
		v = (v - mean) / std
	}
	return v
}

// File decodes a PNG, JPEG or GIF file's bytes (Decode) and returns its
// pixel_values (Pixels): [3][height][width] float32, channels first, the
// config's Height and Width (the image's own size when it does not resize).
func (c Config) File(data []byte) ([]float32, error) {
	img, err := Decode(data)
	if err != nil {
		return nil, err
	}
	return c.Pixels(img)
}
