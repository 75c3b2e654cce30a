package imageproc

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"
)

// TestPNGEndAsPillowReadsIt: a PNG cut after its image data (no IEND), or
// whose IDAT or IEND checksum is damaged, decodes to every pixel, as
// Pillow 9.4 opens it (checked with Image.open(...).convert("RGB") on such
// files: the original's pixels); image/png alone refused all three. A
// damaged checksum before the image data is still refused, as Pillow
// refuses it.
func TestPNGEndAsPillowReadsIt(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 31, 17))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	for y := range 17 {
		for x := range 31 {
			img.Pix[img.PixOffset(x, y)+3] = 0xff
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	want, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(typ string) int { return bytes.Index(good, []byte(typ)) - 4 } // the chunk's offset
	flip := func(at int) []byte {
		b := slices.Clone(good)
		b[at] ^= 0xff
		return b
	}
	idat := chunk("IDAT")
	idatEnd := idat + 12 + int(binary.BigEndian.Uint32(good[idat:]))
	for _, tc := range []struct {
		name string
		file []byte
		err  string // "": decodes to the original's pixels
	}{
		{"no IEND", good[:len(good)-12], ""},
		{"cut inside IEND", good[:len(good)-5], ""},
		{"IDAT checksum", flip(idatEnd - 1), ""},
		{"IEND checksum", flip(len(good) - 1), ""},
		{"IHDR checksum", flip(chunk("IHDR") + 8 + 13), "checksum"},
		{"cut inside the image data", good[:idatEnd-20], "decode PNG image"},
	} {
		got, err := Decode(tc.file)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (got.Width != want.Width || !bytes.Equal(got.Pix, want.Pix)):
			t.Errorf("%s: other pixels than the file's", tc.name)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
		}
	}
}
