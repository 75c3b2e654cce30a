package imageproc

import (
	"encoding/binary"
	"math"
	"testing"
)

// The transpositions are checked against Pillow's exif_transpose by
// TestDecodeMatchesPillow and TestJPEGAgainstLibjpeg (testdata/orient*:
// every orientation, both byte orders, SHORT and LONG); these are the tag
// reader's refusals of what Pillow would not read as an orientation, and of
// damaged bytes.

// withValues is tiff with two LONG values appended (a RATIONAL's numerator
// and denominator, at offset 26).
func withValues(tiff []byte, order binary.AppendByteOrder, a, b uint32) []byte {
	return order.AppendUint32(order.AppendUint32(tiff, a), b)
}

// twoEntries is an IFD0 of two Orientation entries (SHORT), a then b.
func twoEntries(order binary.AppendByteOrder, a, b uint16) []byte {
	t := []byte("II*\x00\x08\x00\x00\x00")
	t = order.AppendUint16(t, 2)
	for _, v := range []uint16{a, b} {
		t = order.AppendUint16(t, 0x0112)
		t = order.AppendUint16(t, 3)
		t = order.AppendUint32(t, 1)
		t = order.AppendUint16(order.AppendUint16(t, v), 0)
	}
	return order.AppendUint32(t, 0)
}

// tiffIFD0 is a TIFF structure in byte order order whose IFD0 holds one
// entry: tag, of type kind and count, its value field value.
func tiffIFD0(order binary.AppendByteOrder, tag, kind uint16, count, value uint32) []byte {
	b := []byte("II*\x00\x08\x00\x00\x00")
	if order == binary.AppendByteOrder(binary.BigEndian) {
		b = []byte("MM\x00*\x00\x00\x00\x08")
	}
	b = order.AppendUint16(b, 1)
	b = order.AppendUint16(b, tag)
	b = order.AppendUint16(b, kind)
	b = order.AppendUint32(b, count)
	if kind == 3 {
		b = order.AppendUint16(b, uint16(value))
		b = order.AppendUint16(b, 0)
	} else {
		b = order.AppendUint32(b, value)
	}
	return order.AppendUint32(b, 0)
}

func TestTIFFOrientation(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	withIFD := func(b []byte, offset uint32) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b[4:], offset)
		return b
	}
	manyEntries := tiffIFD0(le, 0x0112, 3, 1, 6)
	binary.LittleEndian.PutUint16(manyEntries[8:], 0xffff)
	for _, tc := range []struct {
		name string
		tiff []byte
		want int
	}{
		{"SHORT, little-endian", tiffIFD0(le, 0x0112, 3, 1, 6), 6},
		{"SHORT, big-endian", tiffIFD0(be, 0x0112, 3, 1, 8), 8},
		{"LONG", tiffIFD0(le, 0x0112, 4, 1, 5), 5},
		{"another tag", tiffIFD0(le, 0x0110, 3, 1, 6), 0},
		// As Pillow 9.4 reads them (checked with Image.getexif and
		// ImageOps.exif_transpose): the first of several values, signed
		// and fractional types of a whole value, the last entry of two;
		// BYTE reads as bytes there, and transposes nothing.
		{"two values", tiffIFD0(le, 0x0112, 3, 2, 6), 6},
		{"SSHORT", tiffIFD0(le, 0x0112, 8, 1, 6), 6},
		{"SSHORT, negative", tiffIFD0(le, 0x0112, 8, 1, 0xfffe), 0},
		{"SLONG", tiffIFD0(le, 0x0112, 9, 1, 7), 7},
		{"SBYTE", tiffIFD0(le, 0x0112, 6, 1, 6), 6},
		{"BYTE", tiffIFD0(le, 0x0112, 1, 1, 6), 0},
		{"FLOAT", tiffIFD0(le, 0x0112, 11, 1, math.Float32bits(6)), 6},
		{"FLOAT, not whole", tiffIFD0(le, 0x0112, 11, 1, math.Float32bits(6.5)), 0},
		{"RATIONAL at an offset", withValues(tiffIFD0(le, 0x0112, 5, 1, 26), le, 12, 2), 6},
		{"RATIONAL of zero", withValues(tiffIFD0(le, 0x0112, 5, 1, 26), le, 6, 0), 0},
		{"RATIONAL past the end", tiffIFD0(le, 0x0112, 5, 1, 1000), 0},
		{"the last of two entries", twoEntries(le, 3, 6), 6},
		{"a later entry that transposes nothing", twoEntries(le, 6, 1), 1},
		{"ASCII", tiffIFD0(le, 0x0112, 2, 1, 6), 0},
		{"huge LONG", tiffIFD0(le, 0x0112, 4, 1, 1<<31), 0},
		{"not TIFF", append([]byte("XX*\x00"), tiffIFD0(le, 0x0112, 3, 1, 6)[4:]...), 0},
		{"IFD past the end", withIFD(tiffIFD0(le, 0x0112, 3, 1, 6), 1000), 0},
		{"IFD inside the header", withIFD(tiffIFD0(le, 0x0112, 3, 1, 6), 2), 0},
		{"IFD at 4 GiB", withIFD(tiffIFD0(le, 0x0112, 3, 1, 6), 0xffffffff), 0},
		{"65535 entries in a file of one", manyEntries, 6},
		{"cut in the entry", tiffIFD0(le, 0x0112, 3, 1, 6)[:15], 0},
		{"empty", nil, 0},
	} {
		if got := tiffOrientation(tc.tiff); got != tc.want {
			t.Errorf("%s: orientation %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestOrientationOfDamagedFiles: the tag reader reads every prefix of the
// oriented files, and of those whose segment or chunk lengths are
// overwritten with large values, without a panic; a whole file gives its tag.
func TestOrientationOfDamagedFiles(t *testing.T) {
	for name, want := range map[string]int{"orient6be_13x7.jpg": 6, "orient5long_13x7.jpg": 5, "orient3_13x7.png": 3, "orient9_13x7.png": 0, "scene_97x61.jpg": 0} {
		data := readImage(t, name)
		if got := orientation(data); got != want {
			t.Errorf("%s: orientation %d, want %d", name, got, want)
		}
		for n := range data {
			orientation(data[:n])
			damaged := append([]byte(nil), data...)
			damaged[n] = 0xff
			orientation(damaged)
		}
	}
}
