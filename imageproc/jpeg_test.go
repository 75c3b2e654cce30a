package imageproc

import (
	"bytes"
	"image/jpeg"
	"math"
	"strings"
	"testing"
)

// TestJPEGAgainstLibjpeg checks that each test JPEG decodes to libjpeg's
// samples (Pillow's, through which transformers reads images) bit for bit,
// and that its pixel_values are transformers' bit for bit: the test JPEGs
// are 4:2:0 baseline from image/jpeg, and Pillow's 4:4:4, 4:2:2,
// progressive colour and gray, CMYK, saturated stripes whose ringing
// the range limit clamps, images 1 to 5 pixels across (narrow*.jpg: at
// most 4, libjpeg-turbo repeats the chroma instead of filtering it), a
// YCCK one, and libjpeg's with restart markers
// (rst*.jpg: baseline 4:2:0, 4:2:2, 4:4:4 and gray, intervals in MCUs and
// in rows, one scan a component, progressive) and with the subsamplings
// Pillow does not write (sub*.jpg: 4:4:0, 4:1:1 and 4:1:0, and small ones),
// Pillow's CMYK with subsampled planes (pilcmyk*.jpg) and a YCCK one with
// its K subsampled (ycckk420_97x61.jpg). It logs, for comparison, how
// far the standard library's image/jpeg (its own inverse DCT and repeated
// chroma) is from libjpeg on each, or that it refuses it (go test -v -run
// JPEG).
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
			if std, err := stdlibRGB(data); err != nil {
				t.Logf("image/jpeg refuses it: %v", err)
			} else {
				naive := countDiff(std, want)
				t.Logf("image/jpeg with its own upsampling: %d of %d samples differ from libjpeg's, by at most %d", naive.n, len(want), naive.max)
			}
			if d := countDiff(got.Pix, want); d.n > 0 {
				t.Errorf("%d of %d samples differ from libjpeg's, by at most %d", d.n, len(want), d.max)
			}
		})
	}
	for _, key := range referenceNames(ref, "pixel_values/") {
		if !strings.HasSuffix(key, ".jpg") {
			continue
		}
		t.Run(key, func(t *testing.T) {
			got, want := pixelValues(t, ref, key)
			n := 0
			var worst float64
			for i := range want {
				if e := math.Abs(float64(got[i] - want[i])); e > 0 || math.IsNaN(e) {
					n++
					worst = max(worst, e)
				}
			}
			if n > 0 {
				t.Errorf("%d of %d pixel values differ from transformers', by at most %.4g", n, len(want), worst)
			}
		})
	}
}

// stdlibRGB is image/jpeg's decoding converted by the standard library's
// colour model (each chroma sample repeated over the pixels it covers).
func stdlibRGB(data []byte) ([]uint8, error) {
	m, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := m.Bounds()
	out := make([]uint8, 0, 3*b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := m.At(x, y).RGBA()
			out = append(out, uint8(r>>8), uint8(g>>8), uint8(bl>>8))
		}
	}
	return out, nil
}
