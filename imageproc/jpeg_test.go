package imageproc

import (
	"bytes"
	"image/jpeg"
	"math"
	"strings"
	"testing"
)

// jpegBounds bound the differences from libjpeg (through Pillow and
// ViTImageProcessor) measured on the test JPEGs with jpeg.go's fancy
// upsampling: the decoded samples, and pixel_values. What is left comes from
// image/jpeg's inverse DCT, which is not libjpeg's islow: planes a level
// apart here and there, up to 3 levels in RGB once the colour conversion
// has multiplied a chroma difference by 1.772 (measured: at most 3 levels
// in 2.6% of the 4:2:0 samples; at most 1 level in a grayscale or 4:4:4
// CMYK JPEG), and so 2/255/std after the resize (measured 0.0349 with
// ImageNet's std 0.225). image/jpeg's own chroma repetition is up to 118
// levels off on the same image. MODELS.md records the measurement.
const (
	jpegMaxSample = 3
	jpegMaxPixel  = 0.036
)

// TestJPEGAgainstLibjpeg measures how far Go's decoding of each test JPEG
// is from libjpeg's, with libjpeg's upsampling (Decode) and with image/jpeg's
// own (repeated chroma), and checks the bounds above. It logs the numbers
// (go test -v -run JPEG).
func TestJPEGAgainstLibjpeg(t *testing.T) {
	ref := openReference(t)
	for _, name := range referenceNames(ref, "decoded/") {
		if !strings.HasSuffix(name, ".jpg") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, err := ref.Bytes("decoded/" + name)
			if err != nil {
				t.Fatal(err)
			}
			data := readImage(t, name)
			got, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			d := countDiff(got.Pix, want)
			naive := countDiff(stdlibRGB(t, data), want)
			t.Logf("decoded: %d of %d samples differ from libjpeg's, by at most %d (image/jpeg's own upsampling: %d, by at most %d)",
				d.n, len(want), d.max, naive.n, naive.max)
			if d.max > jpegMaxSample {
				t.Errorf("a sample is %d from libjpeg's; the bound is %d", d.max, jpegMaxSample)
			}
		})
	}
	for _, key := range referenceNames(ref, "pixel_values/") {
		if !strings.HasSuffix(key, ".jpg") {
			continue
		}
		t.Run(key, func(t *testing.T) {
			got, want := pixelValues(t, ref, key)
			var worst float64
			n := 0
			for i := range want {
				if e := math.Abs(float64(got[i] - want[i])); e > 0 {
					n++
					worst = max(worst, e)
				}
			}
			t.Logf("pixel_values: %d of %d differ from transformers', by at most %.4g", n, len(want), worst)
			if worst > jpegMaxPixel {
				t.Errorf("a pixel value is %.4g from transformers'; the bound is %g", worst, jpegMaxPixel)
			}
		})
	}
}

// stdlibRGB is image/jpeg's decoding converted by the standard library's
// colour model (each chroma sample repeated over the pixels it covers).
func stdlibRGB(t *testing.T, data []byte) []uint8 {
	m, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bounds()
	out := make([]uint8, 0, 3*b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := m.At(x, y).RGBA()
			out = append(out, uint8(r>>8), uint8(g>>8), uint8(bl>>8))
		}
	}
	return out
}
