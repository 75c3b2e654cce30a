package imageproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/meazo-go/meazo/imageproc/internal/jpeg"
)

// RGB is an 8-bit RGB image, its samples interleaved row by row (R, G, B of
// pixel (0, 0), then of (1, 0), …): Pillow's "RGB" mode, which transformers
// turns into a uint8 array of shape (Height, Width, 3).
type RGB struct {
	Width, Height int
	Pix           []uint8
}

// maxSide and maxPixels bound what Decode accepts before it allocates: a
// 2-byte header must not be able to ask for gigabytes. Pillow refuses images
// over twice its MAX_IMAGE_PIXELS (89,478,485) as decompression bombs;
// 32 Mi pixels (at most 256 MiB decoded, in 16-bit RGBA) is below that and
// well above any photograph of a pet.
const (
	maxSide   = 1 << 15
	maxPixels = 32 << 20
)

func (m *RGB) check() error {
	switch {
	case m == nil:
		return errors.New("no image")
	case m.Width <= 0 || m.Height <= 0 || m.Width > maxSide || m.Height > maxSide:
		return fmt.Errorf("image is %d×%d; sides must be between 1 and %d", m.Width, m.Height, maxSide)
	case len(m.Pix) != 3*m.Width*m.Height:
		return fmt.Errorf("%d×%d RGB image has %d samples, want %d", m.Width, m.Height, len(m.Pix), 3*m.Width*m.Height)
	}
	return nil
}

// format is one file format Decode reads, told apart by its signature (as
// Pillow's Image.open tells them apart). minBytes is the fewest bytes a
// whole file of a w×h image can have.
type format struct {
	name     string
	magic    []byte
	config   func([]byte) (image.Config, error)
	decode   func([]byte) (image.Image, error)
	minBytes func(w, h int) int
}

var formats = []format{
	{"PNG", []byte("\x89PNG\r\n\x1a\n"), readerConfig(png.DecodeConfig), decodePNG, pngMinBytes},
	{"JPEG", []byte{0xff, 0xd8, 0xff}, readerConfig(jpeg.DecodeConfig), func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }, jpegMinBytes},
	{"GIF", []byte("GIF8"), gifConfig, decodeGIF, gifMinBytes},
}

// readerConfig is a DecodeConfig that reads the file's bytes.
func readerConfig(config func(io.Reader) (image.Config, error)) func([]byte) (image.Config, error) {
	return func(b []byte) (image.Config, error) { return config(bytes.NewReader(b)) }
}

// decodePNG is image/png's Decode, except in two cases where Pillow reads
// the file otherwise. A 16-bit gray PNG with a tRNS chunk comes back as the
// 16-bit gray image it is: image/png gives it an alpha channel (NRGBA64),
// which toRGB would convert by its high byte, where Pillow opens it as mode
// I like any 16-bit gray PNG (the transparent value kept aside in its info,
// which convert("RGB") ignores) and clips it to 255. And a palette image
// whose pixels use entries past its PLTE chunk's (an error by the PNG
// specification) takes them from Pillow's default palette, gray i at entry
// i, where image/png makes them black.
//
// A file whose image data Pillow reads in full but whose end image/png
// refuses is read from its chunks up to the image data's end (pngThroughData).
func decodePNG(b []byte) (image.Image, error) {
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		if fixed := pngThroughData(b); fixed != nil {
			if m2, err2 := png.Decode(bytes.NewReader(fixed)); err2 == nil {
				m, err = m2, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if p, ok := m.(*image.Paletted); ok {
		plte, _ := pngChunk(b, "PLTE")
		for i := len(plte) / 3; i < len(p.Palette); i++ {
			p.Palette[i] = color.RGBA{R: uint8(i), G: uint8(i), B: uint8(i), A: 0xff}
		}
	}
	// image/png decodes nothing whose first chunk is not IHDR, so its bit
	// depth and colour type are at their fixed offsets.
	const depth, colourType = 24, 25
	if nrgba, ok := m.(*image.NRGBA64); ok && b[depth] == 16 && b[colourType] == 0 {
		gray := image.NewGray16(nrgba.Rect)
		for i := range len(gray.Pix) / 2 {
			copy(gray.Pix[2*i:2*i+2], nrgba.Pix[8*i:8*i+2]) // R: the gray value, not premultiplied
		}
		return gray, nil
	}
	return m, nil
}

// pngMinBytes bounds a PNG's compressed pixel data from below: each row is
// a filter byte and at least one bit a pixel, and deflate packs at most
// 1032 bytes into one (a 258-byte match coded in 2 bits).
func pngMinBytes(w, h int) int { return h * (1 + (w+7)/8) / 1032 }

// pngChunk is the contents of a PNG file's first chunk of the type, and
// whether it has one (a damaged chunk list ends the search).
func pngChunk(data []byte, typ string) ([]byte, bool) {
	for i := 8; i+12 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[i:]))
		if n < 0 || n > len(data)-i-12 {
			return nil, false
		}
		if string(data[i+4:i+8]) == typ {
			return data[i+8 : i+8+n], true
		}
		i += 12 + n
	}
	return nil, false
}

// pngThroughData is a PNG file's chunks up to its last IDAT, the IDAT
// chunks' checksums recomputed, then an IEND; nil when it has no IDAT.
// Pillow 9.4 reads the image data without checking its checksums (its
// load_read skips them) and stops at whatever follows it without
// checking it: a file cut after its image data (no IEND), or with a
// damaged IDAT or IEND checksum, opens there with every pixel, where
// image/png refuses it. The chunks before the data are kept as they are:
// Pillow checks their checksums too.
func pngThroughData(data []byte) []byte {
	end := 0
	var idat []int // offsets of the IDAT chunks
	for i := 8; i+12 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[i:]))
		if n < 0 || n > len(data)-i-12 {
			break
		}
		if string(data[i+4:i+8]) == "IDAT" {
			idat, end = append(idat, i), i+12+n
		}
		i += 12 + n
	}
	if idat == nil {
		return nil
	}
	out := append(make([]byte, 0, end+12), data[:end]...) // data is the caller's
	out = append(out, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82)
	for _, i := range idat {
		n := int(binary.BigEndian.Uint32(out[i:]))
		binary.BigEndian.PutUint32(out[i+8+n:], crc32.ChecksumIEEE(out[i+4:i+8+n]))
	}
	return out
}

// jpegMinBytes bounds a JPEG's entropy-coded data from below: every 8×8
// block of the first component (full size: the others are subsampled from
// it) has its DC coefficient coded, in a Huffman code of at least one bit.
func jpegMinBytes(w, h int) int { return (w + 7) / 8 * ((h + 7) / 8) / 8 }

// Decode reads a PNG, JPEG or GIF file's bytes (a GIF's first frame:
// gif.go) into RGB as the HF loaders hand an image to ViTImageProcessor:
// turned upright by its EXIF Orientation tag (orient.go:
// ImageOps.exif_transpose, which datasets and transformers' load_image
// apply) and converted as Pillow's Image.convert("RGB") would (see toRGB).
// Any other format, an image larger
// than maxPixels or than its file's bytes can hold (checked from the
// header, before the pixels are allocated), and a damaged file are errors.
// The result's Pix may be the front of the decoder's larger buffer (a PNG's
// RGBA, converted in place): Decode's peak memory is the decoder's pixels
// and not also a copy.
func Decode(data []byte) (*RGB, error) {
	f, cfg, err := header(data)
	if err != nil {
		return nil, err
	}
	// A few bytes claiming a large image would have the decoder
	// allocate its pixels (a 65-byte PNG 256 MiB, a 1 KB progressive
	// JPEG 240 MiB) before it finds the data missing.
	if n := f.minBytes(cfg.Width, cfg.Height); len(data) < n {
		return nil, fmt.Errorf("decode %s image: %d bytes cannot hold a %d×%d image (it takes at least %d): the file is cut short or its header is wrong", f.name, len(data), cfg.Width, cfg.Height, n)
	}
	m, err := f.decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s image: %w", f.name, err)
	}
	rgb, err := toRGB(m)
	if err != nil {
		return nil, fmt.Errorf("decode %s image: %w", f.name, err)
	}
	return orient(rgb, orientation(data)), nil
}

// header finds data's format by its signature and reads the image's size
// from its header, refusing what Decode does not accept: another format,
// a damaged header, an image over maxSide a side or maxPixels.
func header(data []byte) (*format, image.Config, error) {
	for i := range formats {
		f := &formats[i]
		if !bytes.HasPrefix(data, f.magic) {
			continue
		}
		cfg, err := f.config(data)
		if err != nil {
			return nil, cfg, fmt.Errorf("decode %s image: %w", f.name, err)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxSide || cfg.Height > maxSide || cfg.Width*cfg.Height > maxPixels {
			return nil, cfg, fmt.Errorf("decode %s image: %d×%d is larger than the %d pixels (%d a side) this reader accepts", f.name, cfg.Width, cfg.Height, maxPixels, maxSide)
		}
		return f, cfg, nil
	}
	return nil, image.Config{}, fmt.Errorf("decode image: not a PNG, JPEG or GIF file (it starts %q)", data[:min(len(data), 8)])
}

// toRGB converts a decoded image to RGB as Pillow converts the mode it
// opened the file in: gray is repeated in the three channels (L and LA),
// alpha is dropped without compositing (RGBA and PA keep their colour
// values), 16-bit channels keep their high byte (Pillow's RGB;16B), a
// palette is looked up, YCbCr goes through libjpeg's upsampling and
// colour conversion (jpeg.go), and a JPEG that stores RGB through its
// upsampling alone. 16-bit grayscale (with or without a tRNS
// chunk: decodePNG) opens in Pillow as mode I, whose conversion to RGB clips
// every value above 255 to 255; that is done here too, so the pixels are the
// ones transformers would see. Gamma and ICC profiles are not applied, as
// Pillow's convert does not apply them.
func toRGB(m image.Image) (*RGB, error) {
	switch m := m.(type) {
	case *image.YCbCr:
		return ycbcrToRGB(m)
	case *jpeg.YCCK:
		return ycckToRGB(m)
	case *jpeg.CMYK:
		return cmykPlanesToRGB(m)
	case *jpeg.RGB:
		return rgbPlanesToRGB(m)
	case *image.RGBA: // a PNG without alpha: opaque, so not premultiplied
		return inPlace(m.Pix, m.Stride, 4, m.Rect, func(p []uint8) (uint8, uint8, uint8) { return p[0], p[1], p[2] }), nil
	case *image.NRGBA:
		return inPlace(m.Pix, m.Stride, 4, m.Rect, func(p []uint8) (uint8, uint8, uint8) { return p[0], p[1], p[2] }), nil
	case *image.RGBA64: // big-endian samples: p[0] is R's high byte
		return inPlace(m.Pix, m.Stride, 8, m.Rect, func(p []uint8) (uint8, uint8, uint8) { return p[0], p[2], p[4] }), nil
	case *image.NRGBA64:
		return inPlace(m.Pix, m.Stride, 8, m.Rect, func(p []uint8) (uint8, uint8, uint8) { return p[0], p[2], p[4] }), nil
	}
	b := m.Bounds()
	out := &RGB{Width: b.Dx(), Height: b.Dy(), Pix: make([]uint8, 3*b.Dx()*b.Dy())}
	set := func(x, y int, r, g, bl uint8) {
		i := 3 * ((y-b.Min.Y)*out.Width + (x - b.Min.X))
		out.Pix[i], out.Pix[i+1], out.Pix[i+2] = r, g, bl
	}
	switch m := m.(type) {
	case *image.Gray:
		each(b, func(x, y int) { v := m.GrayAt(x, y).Y; set(x, y, v, v, v) })
	case *image.Gray16:
		each(b, func(x, y int) { v := uint8(min(m.Gray16At(x, y).Y, 255)); set(x, y, v, v, v) })
	case *image.Paletted:
		pal := make([]color.NRGBA, len(m.Palette))
		for i, c := range m.Palette {
			pal[i] = color.NRGBAModel.Convert(c).(color.NRGBA)
		}
		var bad error
		each(b, func(x, y int) {
			i := int(m.ColorIndexAt(x, y))
			if i >= len(pal) {
				bad = fmt.Errorf("pixel (%d, %d) uses colour %d of a %d-colour palette", x, y, i, len(pal))
				return
			}
			set(x, y, pal[i].R, pal[i].G, pal[i].B)
		})
		if bad != nil {
			return nil, bad
		}
	default:
		return nil, fmt.Errorf("%T images are not supported", m)
	}
	return out, nil
}

// inPlace converts a decoded image of bpp ≥ 4 bytes a pixel (its rows
// stride bytes apart from pix[0], its size r's) to RGB in its own buffer:
// rgb reads a pixel's bytes, and its three results are written to the front
// of pix, pixel after pixel. Pixel k's bytes start at bpp·k or later and
// its RGB ends at 3k+2, so no write reaches a byte still to be read. A
// 32 Mi-pixel PNG's RGBA (128 MiB) so becomes its RGB without another
// 96 MiB; the RGB keeps the decoder's buffer (Pix's capacity is the rest of
// it). The decoded image is Decode's own, used for nothing else.
func inPlace(pix []uint8, stride, bpp int, r image.Rectangle, rgb func(p []uint8) (uint8, uint8, uint8)) *RGB {
	w, h := r.Dx(), r.Dy()
	for y := 0; y < h; y++ {
		row := y * stride
		for x := 0; x < w; x++ {
			i := 3 * (y*w + x)
			pix[i], pix[i+1], pix[i+2] = rgb(pix[row+x*bpp:])
		}
	}
	return &RGB{Width: w, Height: h, Pix: pix[:3*w*h]}
}

func each(b image.Rectangle, f func(x, y int)) {
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			f(x, y)
		}
	}
}

// cmykToRGB is Pillow's cmyk2rgb: each channel is (255 − c)·(255 − k)/255,
// the product divided by 255 with Pillow's rounding (MULDIV255).
func cmykToRGB(c color.CMYK) (uint8, uint8, uint8) {
	nk := int(255 - c.K)
	ch := func(v uint8) uint8 {
		t := int(v)*nk + 128
		return uint8(nk - ((t>>8)+t)>>8)
	}
	return ch(c.C), ch(c.M), ch(c.Y)
}
