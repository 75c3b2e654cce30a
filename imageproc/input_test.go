package imageproc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	stdjpeg "image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
)

// gifHeader is a GIF's header and logical screen descriptor for a w×h
// image with a 2-colour global table, and nothing after.
func gifHeader(w, h int) []byte {
	return append([]byte("GIF89a"), byte(w), byte(w>>8), byte(h), byte(h>>8), 0x80, 0, 0, 0, 0, 0, 255, 255, 255)
}

// gifFrameOnly is gifHeader(w, h) followed by blocks, the descriptor of a
// frame at (x, y) of fw×fh with LZW code size lit and one sub-block of
// data (a clear code), and the trailer.
func gifFrameOnly(w, h int, blocks string, x, y, fw, fh int, lit byte) []byte {
	b := append(gifHeader(w, h), blocks...)
	b = append(b, ',', byte(x), byte(x>>8), byte(y), byte(y>>8), byte(fw), byte(fw>>8), byte(fh), byte(fh>>8), 0, lit)
	return append(b, 1, 4, 0, ';')
}

// pngHeader is a PNG signature and an IHDR chunk declaring w×h RGB, 8 bits.
func pngHeader(w, h uint32) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	chunk := append([]byte("IHDR"), ihdr[:]...)
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestDecodeRefusesBadImages: what is not a whole PNG, JPEG or GIF of a sane
// size is an error saying what is wrong, before any large allocation.
func TestDecodeRefusesBadImages(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "scene_97x61.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	goodPNG, err := os.ReadFile(filepath.Join("testdata", "scene_97x61.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a PNG, JPEG or GIF"},
		{"webp", []byte("RIFF\x10\x00\x00\x00WEBPVP8 "), "not a PNG, JPEG or GIF"},
		{"truncated gif header", []byte("GIF89a\x01\x00\x01\x00"), "decode GIF image"},
		{"huge gif", gifHeader(30000, 30000), "larger than"},
		{"gif header only", gifHeader(3000, 3000), "cannot hold a 3000×3000 image"},
		// Pillow refuses these too (a tiny frame on a large screen: gifMinBytes).
		{"gif frame past the screen in a few bytes", gifFrameOnly(10, 10, "", 0, 0, 5000, 5000, 2), "cannot hold a 5000×5000 image"},
		{"gif trailer before the image", append(gifHeader(4, 4), ';'), "has no image"},
		{"gif 0×0 frame", gifFrameOnly(4, 4, "", 1, 1, 0, 0, 2), "first image is 0×0"},
		{"gif LZW code size 1", gifFrameOnly(4, 4, "", 0, 0, 4, 4, 1), "LZW code size is 1"},
		{"gif short control extension", gifFrameOnly(4, 4, "\x21\xf9\x03\x01\x00\x00\x00", 0, 0, 4, 4, 2), "graphic control extension of 3 bytes"},
		{"gif data short of the frame", gifFrameOnly(4, 4, "", 0, 0, 4, 4, 2), "data ends or is damaged in its row 1 of 4"},
		{"truncated gif", cut(readTestdata(t, "gifpast_14x10.gif"), 30), "decode GIF image"},
		{"truncated jpeg", good[:len(good)/2], "decode JPEG image"},
		{"truncated png", goodPNG[:len(goodPNG)/2], "decode PNG image"},
		{"png header only", pngHeader(10, 10), "decode PNG image"},
		{"huge png", pngHeader(30000, 30000), "larger than"},
		{"60000×60000 png", pngHeader(60000, 60000), "larger than"},
		{"too wide png", pngHeader(1<<16, 1), "larger than"},
		{"60000×60000 jpeg", jpegWithSize(t, good, 60000, 60000), "larger than"},
		// Headers of images within the limits over a few bytes: refused
		// before the decoder allocates the pixels (a 65-byte PNG made 256
		// MiB, a 1.4 KB progressive JPEG 240 MiB).
		{"5792×5792 16-bit png in 65 bytes", pngData(pngHeaderOf(5792, 5792, 16, 6), 1000), "65 bytes cannot hold a 5792×5792 image"},
		{"5792×5792 jpeg in 3 KB", jpegWithSize(t, good, 5792, 5792), "cannot hold a 5792×5792 image"},
		{"5792×5792 progressive jpeg in 1 KB", jpegWithSize(t, readTestdata(t, "pilprog_97x61.jpg"), 5792, 5792), "cannot hold"},
		{"truncated progressive jpeg", cut(readTestdata(t, "pilprog_97x61.jpg"), 2), "decode JPEG image"},
		{"truncated gray jpeg", cut(readTestdata(t, "gray_150x100.jpg"), 2), "decode JPEG image"},
		{"truncated cmyk jpeg", cut(readTestdata(t, "cmyk_300x200.jpg"), 2), "decode JPEG image"},
		{"restart interval without restart markers", withDRI(good), "decode JPEG image"},
		{"truncated progressive jpeg with restarts", cut(readTestdata(t, "rstprog_97x61.jpg"), 2), "decode JPEG image"},
		{"restart marker out of sequence", wrongRST(t, readTestdata(t, "rst420_97x61.jpg")), "bad RST marker"},
		{"truncated 16-bit gray png with tRNS", cut(readTestdata(t, "png16graytrns_49x31.png"), 2), "decode PNG image"},
		{"bad huffman table", badDHT(t, good), "decode JPEG image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			_, err := Decode(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode: %v, want an error containing %q", err, tc.want)
			}
			runtime.ReadMemStats(&ms)
			if mb := float64(ms.TotalAlloc-before) / (1 << 20); mb > 16 {
				t.Errorf("%.0f MiB allocated before the error", mb)
			}
		})
	}
}

// TestDecodeAcceptsSmallestFiles: solid images as small as their encoders
// make them (best compression, quality 1) are not taken for damaged files
// by the size bounds (pngMinBytes, jpegMinBytes).
func TestDecodeAcceptsSmallestFiles(t *testing.T) {
	for _, wh := range [][2]int{{2048, 2048}, {32768, 8}, {8, 32768}} {
		g := image.NewGray(image.Rect(0, 0, wh[0], wh[1]))
		var p, j bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&p, g); err != nil {
			t.Fatal(err)
		}
		if err := stdjpeg.Encode(&j, g, &stdjpeg.Options{Quality: 1}); err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{p.Bytes(), j.Bytes()} {
			if img, err := Decode(b); err != nil || img.Width != wh[0] || img.Height != wh[1] {
				t.Errorf("%d×%d in %d bytes: %v", wh[0], wh[1], len(b), err)
			}
		}
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cut keeps the first 1/n of b.
func cut(b []byte, n int) []byte { return b[:len(b)/n] }

// pngHeaderOf is pngHeader with another bit depth and colour type.
func pngHeaderOf(w, h uint32, depth, colour byte) []byte {
	b := pngHeader(w, h)
	b[24], b[25] = depth, colour
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// pngData appends an IDAT chunk of n zero bytes, compressed.
func pngData(header []byte, n int) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, n))
	zw.Close()
	chunk := append([]byte("IDAT"), z.Bytes()...)
	b := binary.BigEndian.AppendUint32(slices.Clone(header), uint32(z.Len()))
	b = append(b, chunk...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
}

// jpegSegment is the offset of a JPEG's first marker segment of one of the
// given markers.
func jpegSegment(t testing.TB, b []byte, markers ...byte) int {
	t.Helper()
	for i := 2; i+4 < len(b); i += 2 + int(binary.BigEndian.Uint16(b[i+2:])) {
		if b[i] != 0xff {
			break
		}
		if slices.Contains(markers, b[i+1]) {
			return i
		}
	}
	t.Fatalf("no marker %#x", markers)
	return 0
}

// jpegWithSize rewrites a JPEG's frame header to say w×h.
func jpegWithSize(t testing.TB, b []byte, w, h int) []byte {
	b = slices.Clone(b)
	i := jpegSegment(t, b, 0xc0, 0xc1, 0xc2) // a frame header: baseline, extended or progressive
	binary.BigEndian.PutUint16(b[i+5:], uint16(h))
	binary.BigEndian.PutUint16(b[i+7:], uint16(w))
	return b
}

// withDRI inserts a restart interval of one MCU into a JPEG without
// restart markers.
func withDRI(b []byte) []byte {
	return slices.Concat(b[:2], []byte{0xff, 0xdd, 0, 4, 0, 1}, b[2:])
}

// wrongRST turns a JPEG's first restart marker, RST0, into RST3.
func wrongRST(t testing.TB, b []byte) []byte {
	i := bytes.Index(b, []byte{0xff, 0xd0})
	if i < 0 {
		t.Fatal("no RST0 marker")
	}
	b = slices.Clone(b)
	b[i+1] = 0xd3
	return b
}

// badDHT makes a JPEG's first Huffman table claim 255 codes of each length.
func badDHT(t testing.TB, b []byte) []byte {
	b = slices.Clone(b)
	i := jpegSegment(t, b, 0xc4)
	for k := range 16 {
		b[i+5+k] = 0xff
	}
	return b
}

func TestResizeRefusesBadSizes(t *testing.T) {
	img := &RGB{Width: 2, Height: 2, Pix: make([]uint8, 12)}
	for _, wh := range [][2]int{{0, 5}, {5, -1}, {maxSide + 1, 1}} {
		if _, err := Resize(img, wh[0], wh[1]); err == nil {
			t.Errorf("Resize to %v: no error", wh)
		}
	}
	if _, err := Resize(&RGB{Width: 2, Height: 2, Pix: make([]uint8, 11)}, 4, 4); err == nil || !strings.Contains(err.Error(), "11 samples") {
		t.Errorf("Resize of a short image: %v", err)
	}
}

// TestParseConfig: the published configs' forms, ViTImageProcessor's
// defaults, and what is refused.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       Config
		err        string
	}{
		{name: "defaults", json: `{}`, want: Config{DoResize: true, Height: 224, Width: 224, DoRescale: true,
			RescaleFactor: 1.0 / 255, DoNormalize: true, Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{name: "in21k", json: `{"do_normalize": true, "do_resize": true, "feature_extractor_type": "ViTFeatureExtractor",
			"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 384}`,
			want: Config{DoResize: true, Height: 384, Width: 384, DoRescale: true, RescaleFactor: 1.0 / 255,
				DoNormalize: true, Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{name: "rect and scalar mean", json: `{"size": {"height": 10, "width": 20}, "image_mean": 0.25, "image_std": [1, 2, 3], "do_rescale": false}`,
			want: Config{DoResize: true, Height: 10, Width: 20, RescaleFactor: 1.0 / 255,
				DoNormalize: true, Mean: [3]float64{0.25, 0.25, 0.25}, Std: [3]float64{1, 2, 3}}},
		// null turns a step off, as in ViTImageProcessor (it keeps the None).
		{name: "null flags", json: `{"do_resize": null, "do_rescale": null, "do_normalize": null}`, want: Config{Height: 224, Width: 224,
			RescaleFactor: 1.0 / 255, Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}},
		{name: "null rescale factor", json: `{"rescale_factor": null}`, err: "rescale_factor is null"},
		{name: "flag not a bool", json: `{"do_resize": 1}`, err: "do_resize 1 is not true, false or null"},
		{name: "bicubic", json: `{"resample": 3}`, err: "only BILINEAR"},
		{name: "center crop", json: `{"do_center_crop": true, "crop_size": 224}`, err: `"crop_size"`},
		{name: "shortest edge", json: `{"size": {"shortest_edge": 224}}`, err: "shortest_edge"},
		{name: "other processor", json: `{"image_processor_type": "CLIPImageProcessor"}`, err: "CLIPImageProcessor"},
		{name: "two means", json: `{"image_mean": [0.5, 0.5]}`, err: "image_mean"},
		{name: "zero std", json: `{"image_std": [0.5, 0, 0.5]}`, err: "channel 1"},
		// Pixels computes in float32: these are 0, infinite or overflow there.
		{name: "std zero in float32", json: `{"image_std": [1e-320, 0.5, 0.5]}`, err: "channel 0's sample 0 gives pixel value -Inf"},
		{name: "mean infinite in float32", json: `{"image_mean": [0.5, 1e39, 0.5]}`, err: "channel 1's sample 0 gives pixel value -Inf"},
		{name: "rescale overflows", json: `{"rescale_factor": 1e300}`, err: "channel 0's sample 255 gives pixel value +Inf"},
		{name: "zero size", json: `{"size": 0}`, err: "size 0×0"},
		{name: "not json", json: `{"size": `, err: "image processor config"},
		// A value of megabytes is quoted in part, with its length.
		{name: "processor of 1 MiB", json: `{"image_processor_type": "` + strings.Repeat("P", 1<<20) + `"}`, err: `P"… (1048576 bytes) is not ViTImageProcessor`},
		{name: "size key of 1 MiB", json: `{"size": {"` + strings.Repeat("é", 1<<19) + `": 1}}`, err: `é"… (1048576 bytes) is not implemented`},
		{name: "size of 1 MiB", json: `{"size": "` + strings.Repeat("s", 1<<20) + `"}`, err: `s… (1048578 bytes) is neither a number`},
		{name: "a million means", json: `{"image_mean": [` + strings.Repeat("0.5, ", 1<<20) + `0.5]}`, err: `image_mean = [0.5, 0.5,`},
		{name: "unknown key of 1 MiB", json: `{"` + strings.Repeat("k", 1<<20) + `": 1}`, err: `kkk… (1048576 bytes)" = 1 is not applied`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %.300v (%d bytes), want one containing %q", err, len(fmt.Sprint(err)), tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzDecode: any bytes give an RGB image of the size the header says, or
// an error; never a panic, a hang or gigabytes. (Its seeds run in every go
// test; make fuzz fuzzes it.)
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"scene_97x61.png", "scene_97x61.jpg", "palette_64x48.png", "gray16_40x30.png", "cmyk_300x200.jpg", "ycck_97x61.jpg",
		"pilprog_97x61.jpg", "pilproggray_97x61.jpg", "gray_150x100.jpg", "pil422_97x61.jpg", "pil444_97x61.jpg", "pilstripes_53x45.jpg", "alpha_120x90.png",
		"rst420_97x61.jpg", "rstprog_97x61.jpg", "rstscans_97x61.jpg", "png16graytrns_49x31.png", "png16adam7_49x31.png", "pngpaltrns_49x31.png",
		"orient6be_13x7.jpg", "orient5long_13x7.jpg", "orient7_13x7.png", "narrow420_2x9.jpg",
		"gif_49x31.gif", "giftrns_49x31.gif", "giflocal_31x19.gif", "gifpast_14x10.gif", "gifnotable_8x6.gif", "gifextra_12x9.gif"} {
		f.Add(readTestdata(f, name))
	}
	f.Add(pngHeader(30000, 30000))
	good := readTestdata(f, "scene_97x61.jpg")
	f.Add(withDRI(good))
	f.Add(badDHT(f, good))
	f.Add(pngData(pngHeaderOf(64, 64, 16, 2), 64*(1+64*6)))
	f.Add(progressiveGray(64, 3))
	cfg := Config{DoResize: true, Height: 8, Width: 8, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
		Mean: [3]float64{0.5, 0.5, 0.5}, Std: [3]float64{0.5, 0.5, 0.5}}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzguard.Run(func() {
			img, err := Decode(b)
			if err != nil {
				return
			}
			if err := img.check(); err != nil {
				t.Fatal(err)
			}
			if px, err := cfg.Pixels(img); err != nil || len(px) != 3*8*8 {
				t.Fatalf("Pixels: %d values, %v", len(px), err)
			}
		})
	})
}

// FuzzParseConfig: any preprocessor_config.json gives a valid Config, whose
// pixel values are finite, or an error.
func FuzzParseConfig(f *testing.F) {
	for _, name := range []string{"vit-in21k.json", "imagenet-128x80.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if err := c.validate(); err != nil {
			t.Fatal(err)
		}
		c.DoResize = false // a 2×1 image of the extreme samples, as it is
		px, err := c.Pixels(&RGB{Width: 2, Height: 1, Pix: []uint8{0, 0, 0, 255, 255, 255}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range px {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("pixel values %v", px)
			}
		}
	})
}

// TestCheckSide: a resize to another size than the model's images is
// refused; no resize leaves the check to each decoded image.
func TestCheckSide(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		side int
		want string
	}{
		{Default(224), 224, ""},
		{Default(32768), 224, "size 32768×32768 is not the 224×224"},
		{Config{DoResize: true, Height: 224, Width: 160}, 224, "size 224×160"},
		{Config{DoResize: false, Height: 32768, Width: 32768}, 224, ""},
	} {
		err := tc.c.CheckSide(tc.side)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v side %d: %v, want %q", tc.c, tc.side, err, tc.want)
		}
	}
}

// TestDefaultJSON: the preprocessor_config.json that Default renders reads
// back as the same configuration.
func TestDefaultJSON(t *testing.T) {
	for _, side := range []int{64, 224} {
		b, err := Default(side).JSON()
		if err != nil {
			t.Fatal(err)
		}
		if c, err := ParseConfig(b); err != nil || c != Default(side) {
			t.Errorf("side %d: %s reads back as %+v, %v", side, b, c, err)
		}
	}
}
