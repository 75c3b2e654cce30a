package imageproc

import (
	"bytes"
	"encoding/binary"
	"math"
)

// An image's EXIF Orientation tag says how to turn its stored pixels to
// show it upright (a phone's camera stores them as the sensor read them).
// Pillow's Image.open ignores it, but the HF loaders that hand images to
// ViTImageProcessor apply it: datasets' Image feature (since 2.19) and
// transformers' load_image call ImageOps.exif_transpose. Decode does the
// same: orientation reads the tag where Pillow 9.4's getexif finds it (a
// JPEG's first APP1 "Exif" segment, a PNG's eXIf chunk) and orient applies
// Pillow's transposition before the image is resized, as exif_transpose
// does. A tag in XMP or in a PNG text chunk ("Raw profile type exif"),
// which Pillow also reads, is not; an EXIF block Pillow would refuse to
// parse (exif_transpose then raises) counts as no tag.

// exifOrientation is the EXIF (TIFF) tag number of Orientation.
const exifOrientation = 0x0112

// orientation is the EXIF Orientation of a PNG or JPEG file's bytes, 1 to
// 8, or 0 where it has none (or one exif_transpose ignores).
func orientation(data []byte) int {
	var tiff []byte
	switch {
	case bytes.HasPrefix(data, formats[0].magic):
		tiff = pngExif(data)
	case bytes.HasPrefix(data, formats[1].magic):
		tiff = jpegExif(data)
	}
	if o := tiffOrientation(tiff); o >= 1 && o <= 8 {
		return o
	}
	return 0
}

// jpegExif is the TIFF structure in a JPEG's first APP1 segment that
// starts "Exif\0\0", among the segments before the first scan (where
// Pillow reads them), or nil.
func jpegExif(data []byte) []byte {
	var exif []byte
	jpegSegments(data, func(marker byte, seg []byte) bool {
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			exif = seg[6:]
			return false
		}
		return true
	})
	return exif
}

// jpegSegments calls visit with each marker segment of a JPEG file before
// its first scan (the marker and the segment's contents) until visit
// returns false or the segments end (the first scan, or bytes that are not
// a segment).
func jpegSegments(data []byte, visit func(marker byte, seg []byte) bool) {
	for i := 2; i+4 <= len(data); {
		if data[i] != 0xff {
			return
		}
		marker := data[i+1]
		switch {
		case marker == 0xff: // fill byte before a marker
			i++
			continue
		case marker == 0xda || marker == 0xd9: // SOS, EOI
			return
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd7: // no length
			i += 2
			continue
		}
		end := i + 2 + int(binary.BigEndian.Uint16(data[i+2:]))
		if end > len(data) || end < i+4 || !visit(marker, data[i+4:end]) {
			return
		}
		i = end
	}
}

// pngExif is the contents of a PNG's eXIf chunk, or nil. Pillow reads the
// chunks after the image data too (when the image loads, as the loaders
// load it before reading the tag), so the whole file is searched.
func pngExif(data []byte) []byte {
	exif, _ := pngChunk(data, "eXIf")
	return exif
}

// tiffOrientation is the orientation a TIFF structure's first image file
// directory (EXIF's IFD0) gives as Pillow 9.4 reads it (getexif, then
// exif_transpose's table of 2-8), or 0: the last Orientation entry counts
// (a later one replaces an earlier one), its first value (Pillow warns and
// keeps the first of several), of any numeric type whose value is a whole
// number (SHORT, LONG, their signed kinds, SBYTE, RATIONAL, FLOAT, DOUBLE;
// BYTE reads as bytes and ASCII as text, which transpose nothing).
func tiffOrientation(tiff []byte) int {
	if len(tiff) < 8 {
		return 0
	}
	var order binary.ByteOrder
	switch string(tiff[:4]) {
	case "II*\x00":
		order = binary.LittleEndian
	case "MM\x00*":
		order = binary.BigEndian
	default:
		return 0
	}
	ifd := int(order.Uint32(tiff[4:]))
	if ifd < 8 || ifd > len(tiff)-2 {
		return 0
	}
	o := 0
	for k := range int(order.Uint16(tiff[ifd:])) {
		e := ifd + 2 + 12*k
		if e+12 > len(tiff) {
			break
		}
		if order.Uint16(tiff[e:]) == exifOrientation {
			o = tiffEntryValue(tiff, order, e)
		}
	}
	if o < 1 || o > 8 {
		return 0
	}
	return o
}

// tiffEntryValue is the first value of the directory entry at e when it is
// a whole number of a numeric type (at most 9: no orientation is larger),
// else 0.
func tiffEntryValue(tiff []byte, order binary.ByteOrder, e int) int {
	typ, n := order.Uint16(tiff[e+2:]), order.Uint32(tiff[e+4:])
	size := map[uint16]int{3: 2, 4: 4, 5: 8, 6: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8}[typ]
	if size == 0 || n == 0 {
		return 0
	}
	v := tiff[e+8 : e+12] // the values, where they fit in the entry
	if int64(size)*int64(n) > 4 {
		off := int(order.Uint32(tiff[e+8:]))
		if off < 0 || off > len(tiff)-size {
			return 0
		}
		v = tiff[off : off+size]
	}
	var x float64
	switch typ {
	case 3:
		x = float64(order.Uint16(v))
	case 4:
		x = float64(order.Uint32(v))
	case 6:
		x = float64(int8(v[0]))
	case 8:
		x = float64(int16(order.Uint16(v)))
	case 9:
		x = float64(int32(order.Uint32(v)))
	case 5, 10:
		num, den := order.Uint32(v), order.Uint32(v[4:])
		if typ == 10 {
			x = float64(int32(num)) / float64(int32(den))
		} else {
			x = float64(num) / float64(den)
		}
	case 11:
		x = float64(math.Float32frombits(order.Uint32(v)))
	case 12:
		x = math.Float64frombits(order.Uint64(v))
	}
	if x != math.Trunc(x) || x < 0 || x > 9 {
		return 0
	}
	return int(x)
}

// orient transposes img as Pillow's exif_transpose does for orientation o
// (2: FLIP_LEFT_RIGHT, 3: ROTATE_180, 4: FLIP_TOP_BOTTOM, 5: TRANSPOSE,
// 6: ROTATE_270, 7: TRANSVERSE, 8: ROTATE_90), into a new image; 0 and 1
// return img itself.
func orient(img *RGB, o int) *RGB {
	if o <= 1 {
		return img
	}
	w, h := img.Width, img.Height
	out := &RGB{Width: w, Height: h, Pix: make([]uint8, len(img.Pix))}
	if o >= 5 { // the axes swap
		out.Width, out.Height = h, w
	}
	// src gives the input pixel that output pixel (x, y) shows.
	src := map[int]func(x, y int) (int, int){
		2: func(x, y int) (int, int) { return w - 1 - x, y },
		3: func(x, y int) (int, int) { return w - 1 - x, h - 1 - y },
		4: func(x, y int) (int, int) { return x, h - 1 - y },
		5: func(x, y int) (int, int) { return y, x },
		6: func(x, y int) (int, int) { return y, h - 1 - x },
		7: func(x, y int) (int, int) { return w - 1 - y, h - 1 - x },
		8: func(x, y int) (int, int) { return w - 1 - y, x },
	}[o]
	for y := range out.Height {
		for x := range out.Width {
			sx, sy := src(x, y)
			copy(out.Pix[3*(y*out.Width+x):][:3], img.Pix[3*(sy*w+sx):][:3])
		}
	}
	return out
}
