package imageproc

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/gif"
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

// encodeGIF writes frame as a GIF's only frame on a w×h logical screen
// whose global colour table is global: a frame whose palette differs
// carries its own table, and a palette entry of alpha 0 is the frame's
// transparent index.
func encodeGIF(t *testing.T, frame *image.Paletted, w, h int, global color.Palette) []byte {
	var buf bytes.Buffer
	g := &gif.GIF{Image: []*image.Paletted{frame}, Delay: []int{0}, Config: image.Config{ColorModel: global, Width: w, Height: h}}
	if err := gif.EncodeAll(&buf, g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gifFrames are GIF frames smaller than their 31×19 screen, placed at
// (6, 4): one on the global colour table, one with its own table and a
// transparent entry.
func gifFrames(odd *image.RGBA) (plain, local *image.Paletted, global color.Palette) {
	global = color.Palette{color.NRGBA{10, 20, 30, 255}, color.NRGBA{250, 40, 40, 255}, color.NRGBA{40, 250, 40, 255}, color.NRGBA{40, 40, 250, 255},
		color.NRGBA{200, 200, 0, 255}, color.NRGBA{0, 200, 200, 255}, color.NRGBA{200, 0, 200, 255}, color.NRGBA{255, 255, 255, 255}}
	own := color.Palette{color.NRGBA{90, 60, 30, 255}, color.NRGBA{0, 0, 0, 0}, color.NRGBA{30, 60, 90, 255}, color.NRGBA{128, 128, 128, 255}}
	r := image.Rect(6, 4, 20, 13)
	plain, local = image.NewPaletted(r, global), image.NewPaletted(r, own)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := odd.RGBAAt(3*x, 3*y)
			plain.SetColorIndex(x, y, (c.R>>5+c.G>>6)%8)
			local.SetColorIndex(x, y, (c.B>>6+uint8(x))%4)
		}
	}
	return plain, local, global
}

// drawings are every test image, PNG and JPEG (image/jpeg writes 4:2:0),
// and GIFs whose first frame does not cover the screen (Pillow writes
// whole frames; its own GIFs come from the fixture script).
func drawings(t *testing.T) []drawing {
	big, odd, square := scene(300, 200, 0), scene(97, 61, 1), scene(224, 224, 2)
	gifPlain, gifLocal, gifGlobal := gifFrames(odd)
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
		{"gifoffset_31x19.gif", encodeGIF(t, gifPlain, 31, 19, gifGlobal)},
		{"giflocal_31x19.gif", encodeGIF(t, gifLocal, 31, 19, gifGlobal)},
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
