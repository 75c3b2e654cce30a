package imageproc

import (
	"bytes"
	"image"
	"image/color"
	stdjpeg "image/jpeg"
	"runtime"
	"testing"
)

// TestDecodeResizeMemory: decoding an image and resizing it to 224×224, as
// train does for every image, allocates the decoder's pixels and the RGB
// image and little else, so that a 32 Mi-pixel image stays within a few
// hundred MiB: no full-size chroma planes besides the decoder's (JPEG), no
// RGB copy of a PNG's RGBA or 16-bit pixels (they are converted in place),
// and no copy of the image for Resize's first pass. The bounds are in
// bytes a pixel, with 1.2 MiB to spare (before, these images took 14.0,
// 11.0 and 15.0 bytes a pixel).
func TestDecodeResizeMemory(t *testing.T) {
	const w, h = 1024, 768
	rgb := image.NewRGBA(image.Rect(0, 0, w, h))
	wide := image.NewNRGBA64(rgb.Rect)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255}
			rgb.SetRGBA(x, y, c)
			wide.SetNRGBA64(x, y, color.NRGBA64{uint16(c.R) << 8, uint16(c.G) << 8, uint16(c.B) << 8, 0x8000})
		}
	}
	var j bytes.Buffer
	if err := stdjpeg.Encode(&j, rgb, &stdjpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		perPixel float64 // the decoder's bytes a pixel and the RGB's 3
	}{
		{"4:2:0 jpeg", j.Bytes(), 1.5 + 3},
		{"rgb png", encodePNG(t, rgb), 4},
		{"16-bit rgba png", encodePNG(t, wide), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			img, err := Decode(tc.data)
			if err == nil {
				_, err = Resize(img, 224, 224)
			}
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&ms)
			// Beyond the pixels: the resize's 224-wide intermediate and
			// result, its filters, and the decoders' buffers.
			const slack = 1.2 * (1 << 20)
			got := float64(ms.TotalAlloc - before)
			t.Logf("%.2f bytes a pixel allocated", got/(w*h))
			if limit := tc.perPixel*w*h + slack; got > limit {
				t.Errorf("%.1f bytes a pixel allocated, want at most %.1f", got/(w*h), limit/(w*h))
			}
		})
	}
}
