package imageproc

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The test images are drawn here, with Go's image package, and committed
// under testdata/ with the pixel values transformers' ViTImageProcessor
// computed from them (scripts/make_vit_image_fixtures.py). -update redraws
// them; TestDrawnImagesAreCommitted checks that the committed files are
// what this code draws, so the references belong to these images.
var update = flag.Bool("update", false, "redraw imageproc/testdata's images")

// drawing is one test image: its file name and its bytes.
type drawing struct {
	name string
	data []byte
}

// scene draws w×h colour gradients crossed by discs and hard-edged stripes:
// smooth regions, sharp edges and saturated colours for the filters.
func scene(w, h int, seed float64) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 255 * fx
			g := 255 * (0.5 + 0.5*math.Sin(6*fy+seed))
			b := 255 * (1 - fx*fy)
			if (x/7+y/11)%5 == 0 { // stripes
				r, g, b = 255-r, 30, 220
			}
			for i := 0; i < 3; i++ { // discs
				cx, cy := (0.2+0.3*float64(i))*float64(w), (0.3+0.2*float64(i)+0.1*seed)*float64(h)
				if math.Hypot(float64(x)-cx, float64(y)-cy) < float64(min(w, h))/(5+float64(i)) {
					r, g, b = float64(60*i), 255-float64(70*i), float64(40+90*i)
				}
			}
			m.SetRGBA(x, y, color.RGBA{uint8(r), uint8(g), uint8(b), 255})
		}
	}
	return m
}

func encodePNG(t *testing.T, m image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEG(t *testing.T, m image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}); err != nil { // 4:2:0 for colour
		t.Fatal(err)
	}
	return buf.Bytes()
}

// drawings are every test image, PNG and JPEG (image/jpeg writes 4:2:0).
func drawings(t *testing.T) []drawing {
	big, odd, square := scene(300, 200, 0), scene(97, 61, 1), scene(224, 224, 2)
	gray := image.NewGray(image.Rect(0, 0, 150, 100))
	gray16 := image.NewGray16(image.Rect(0, 0, 40, 30))
	alpha := image.NewNRGBA(image.Rect(0, 0, 120, 90))
	pal := image.NewPaletted(image.Rect(0, 0, 64, 48), color.Palette{
		color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 128, 255, 255}, color.NRGBA{20, 200, 90, 128}, color.NRGBA{250, 250, 10, 0},
	})
	for y := 0; y < 100; y++ {
		for x := 0; x < 150; x++ {
			c := big.RGBAAt(2*x, 2*y)
			gray.SetGray(x, y, color.Gray{c.G})
			if x < 120 && y < 90 {
				alpha.SetNRGBA(x, y, color.NRGBA{c.R, c.G, c.B, uint8(x + y)})
			}
			if x < 64 && y < 48 {
				pal.SetColorIndex(x, y, uint8((x/5+y/3)%4))
			}
			if x < 40 && y < 30 {
				gray16.SetGray16(x, y, color.Gray16{uint16(x*1500 + y*7 + (x%3)*90)})
			}
		}
	}
	return []drawing{
		{"scene_300x200.png", encodePNG(t, big)},
		{"scene_97x61.png", encodePNG(t, odd)},
		{"scene_224x224.png", encodePNG(t, square)},
		{"gray_150x100.png", encodePNG(t, gray)},
		{"gray16_40x30.png", encodePNG(t, gray16)},
		{"alpha_120x90.png", encodePNG(t, alpha)},
		{"palette_64x48.png", encodePNG(t, pal)},
		{"scene_300x200.jpg", encodeJPEG(t, big)},
		{"scene_97x61.jpg", encodeJPEG(t, odd)},
		{"gray_150x100.jpg", encodeJPEG(t, gray)},
	}
}

func TestDrawnImagesAreCommitted(t *testing.T) {
	for _, d := range drawings(t) {
		path := filepath.Join("testdata", d.name)
		if *update {
			if err := os.WriteFile(path, d.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./imageproc -run DrawnImages -update draws it)", err)
		}
		if !bytes.Equal(got, d.data) {
			t.Errorf("%s is not what drawings draws: redraw with -update and remake the references", path)
		}
	}
}
