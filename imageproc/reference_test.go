package imageproc

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/safetensors"
)

// The references were computed by Pillow 9.4.0 and transformers 4.51's
// ViTImageProcessor from the images drawing draws
// (scripts/make_vit_image_fixtures.py).

func openReference(t *testing.T) *safetensors.File {
	t.Helper()
	f, err := safetensors.Open(filepath.Join("testdata", "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readImage(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// referenceNames lists the names under prefix in the reference file.
func referenceNames(f *safetensors.File, prefix string) []string {
	var names []string
	for _, ti := range f.Tensors() {
		if strings.HasPrefix(ti.Name, prefix) {
			names = append(names, strings.TrimPrefix(ti.Name, prefix))
		}
	}
	return names
}

// TestDecodeMatchesPillow: every PNG decodes to the RGB bytes of Pillow's
// open(…).convert("RGB"), whatever its colour type, depth and mode (RGB,
// RGBA, L, LA, I, P; 16-bit colour, gray and gray+alpha; tRNS; Adam7; gAMA
// and iCCP, which Pillow does not apply), and so JPEGs are
// TestJPEGAgainstLibjpeg's.
func TestDecodeMatchesPillow(t *testing.T) {
	ref := openReference(t)
	for _, name := range referenceNames(ref, "decoded/") {
		if strings.HasSuffix(name, ".jpg") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, err := ref.Bytes("decoded/" + name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(readImage(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if d := countDiff(got.Pix, want); d.n != 0 {
				t.Errorf("%d of %d samples differ from Pillow's (largest by %d)", d.n, len(want), d.max)
			}
		})
	}
}

// TestResizeMatchesPillow: Resize is Image.resize(size, BILINEAR) bit for
// bit, reducing and enlarging, to 1×1 and to sizes larger on one axis only.
func TestResizeMatchesPillow(t *testing.T) {
	ref := openReference(t)
	names := referenceNames(ref, "resized/")
	if len(names) < 10 {
		t.Fatalf("only %d resized references", len(names))
	}
	for _, key := range names {
		t.Run(key, func(t *testing.T) {
			file, size, _ := strings.Cut(key, "/")
			var w, h int
			if _, err := fmt.Sscanf(size, "%dx%d", &w, &h); err != nil {
				t.Fatal(err)
			}
			want, err := ref.Bytes("resized/" + key)
			if err != nil {
				t.Fatal(err)
			}
			src, err := Decode(readImage(t, file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Resize(src, w, h)
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != w || got.Height != h {
				t.Fatalf("resized to %d×%d", got.Width, got.Height)
			}
			if d := countDiff(got.Pix, want); d.n != 0 {
				t.Errorf("%d of %d samples differ from Pillow's (largest by %d)", d.n, len(want), d.max)
			}
		})
	}
}

// TestPixelValuesMatchTransformers: pixel_values from the PNG files are
// ViTImageProcessor's bit for bit, under the published in21k config and
// another with a non-square size and ImageNet's statistics.
func TestPixelValuesMatchTransformers(t *testing.T) {
	ref := openReference(t)
	names := referenceNames(ref, "pixel_values/")
	if len(names) < 12 {
		t.Fatalf("only %d pixel_values references", len(names))
	}
	for _, key := range names {
		if strings.HasSuffix(key, ".jpg") {
			continue
		}
		t.Run(key, func(t *testing.T) {
			got, want := pixelValues(t, ref, key)
			if len(got) != len(want) {
				t.Fatalf("%d values, want %d", len(got), len(want))
			}
			bad := 0
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					bad++
				}
			}
			if bad != 0 {
				t.Errorf("%d of %d values differ from transformers'", bad, len(want))
			}
		})
	}
}

// pixelValues returns Pixels' values for the reference key
// CONFIG/IMAGE and transformers' values for it.
func pixelValues(t *testing.T, ref *safetensors.File, key string) (got, want []float32) {
	t.Helper()
	config, file, _ := strings.Cut(key, "/")
	cfg, err := LoadConfig(filepath.Join("testdata", config+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if want, err = ref.Float32("pixel_values/" + key); err != nil {
		t.Fatal(err)
	}
	if got, err = cfg.File(readImage(t, file)); err != nil {
		t.Fatal(err)
	}
	return got, want
}

type diff struct{ n, max int }

func countDiff(got, want []uint8) diff {
	if len(got) != len(want) {
		return diff{n: max(len(got), len(want)), max: 255}
	}
	var d diff
	for i := range got {
		if e := int(got[i]) - int(want[i]); e != 0 {
			d.n++
			d.max = max(d.max, e, -e)
		}
	}
	return d
}

// TestViTFixturePixelValues: the tiny ViT fixture's inputs
// (scripts/make_vit_fixtures.py: ViTImageProcessor at 64×64 on four of
// these PNGs) are Pixels' bit for bit, so a model test may start from
// either.
func TestViTFixturePixelValues(t *testing.T) {
	dir := filepath.Join("..", "model", "testdata", "vit", "vit-tiny")
	cfg, err := LoadConfig(filepath.Join(dir, "preprocessor_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := f.Float32("pixel_values")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(f.Metadata()["images"], ",")
	per := 3 * cfg.Height * cfg.Width
	if len(names) != 4 || len(want) != len(names)*per {
		t.Fatalf("%d images %q, %d values", len(names), names, len(want))
	}
	for i, name := range names {
		got, err := cfg.File(readImage(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[i*per+j]) {
				t.Fatalf("%s: value %d is %v, transformers' %v", name, j, got[j], want[i*per+j])
			}
		}
	}
}
