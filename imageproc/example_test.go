package imageproc_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"github.com/meazo-go/meazo/imageproc"
)

// An image file's bytes become a ViT's pixel_values as its
// preprocessor_config.json says: here a 4×4 PNG made in memory is resized
// to 2×2 (Pillow's BILINEAR, each output pixel a weighted mean of its
// neighbours), rescaled to [0, 1] and normalised by mean and std 0.5 to
// [−1, 1], channels first: [3][2][2]. transformers' ViTImageProcessor
// gives the same float32 values.
func ExampleConfig_File() {
	cfg, err := imageproc.ParseConfig([]byte(`{
		"image_processor_type": "ViTImageProcessor",
		"size": {"height": 2, "width": 2},
		"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			img.Set(x, y, color.NRGBA{R: uint8(85 * x), G: uint8(85 * y), B: 255, A: 255})
		}
	}
	var file bytes.Buffer
	if err := png.Encode(&file, img); err != nil {
		fmt.Println(err)
		return
	}

	pixels, err := cfg.File(file.Bytes())
	if err != nil {
		fmt.Println(err)
		return
	}
	for c, name := range []string{"R", "G", "B"} {
		fmt.Printf("%s %.4f\n", name, pixels[c*4:(c+1)*4])
	}
	// Output:
	// R [-0.5216 0.5216 -0.5216 0.5216]
	// G [-0.5216 -0.5216 0.5216 0.5216]
	// B [1.0000 1.0000 1.0000 1.0000]
}
