package imageproc

import (
	"bytes"
	"compress/lzw"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"io"
)

// decodeGIF reads a GIF's first frame as Pillow 9.4 opens a GIF (mode P, or
// L without a colour table, before any other frame is read): an image of
// the logical screen's size, grown to hold the frame where the frame goes
// past it, whose pixels outside the frame are colour 0, or the transparent
// index when a graphic control extension gives one; the frame's own colour
// table, or else the file's, or else none; the transparent index keeping
// its colour (convert("RGB") ignores transparency); entries past the table
// (and every entry without one) gray i at entry i, Pillow's default
// palette and its L mode. The frame's LZW data is decoded here (with
// compress/lzw, as image/gif does), not by image/gif, which refuses all of
// that but the first: a frame past the screen, a file without a colour
// table, pixels past the table, data past the frame's last pixel (which
// Pillow ignores). The other frames of an animation are not decoded: a
// dataset's image is its first frame.
func decodeGIF(b []byte) (image.Image, error) {
	f, err := gifFirstFrame(b)
	if err != nil {
		return nil, err
	}
	pal := make(color.Palette, 256)
	for i := range pal {
		if 3*i+2 < len(f.table) {
			pal[i] = color.NRGBA{f.table[3*i], f.table[3*i+1], f.table[3*i+2], 0xff}
		} else {
			pal[i] = color.NRGBA{uint8(i), uint8(i), uint8(i), 0xff}
		}
	}
	out := image.NewPaletted(f.screen, pal)
	if f.transparent >= 0 {
		for i := range out.Pix {
			out.Pix[i] = uint8(f.transparent)
		}
	}
	if f.rect.Empty() { // Pillow: "tile cannot extend outside image"
		return nil, fmt.Errorf("gif: the first image is %d×%d", f.rect.Dx(), f.rect.Dy())
	}
	if f.litWidth < 2 || f.litWidth > 8 { // Pillow reads 1 and 9 to 12 too (docs/MODELS.md)
		return nil, fmt.Errorf("gif: the first image's LZW code size is %d; 2 to 8 are read", f.litWidth)
	}
	lz := lzw.NewReader(&gifBlocks{b: b, i: f.data}, lzw.LSB, f.litWidth)
	defer lz.Close()
	for n, y := range gifRows(f.rect.Dy(), f.interlaced) {
		row := out.Pix[out.PixOffset(f.rect.Min.X, f.rect.Min.Y+y):][:f.rect.Dx()]
		if _, err := io.ReadFull(lz, row); err != nil {
			return nil, fmt.Errorf("gif: the first image's data ends or is damaged in its row %d of %d: %v", n+1, f.rect.Dy(), err)
		}
	}
	return out, nil
}

// gifRows is the order in which a frame's rows are stored: top to bottom,
// or interlaced in four passes (every 8th row from 0, every 8th from 4,
// every 4th from 2, every 2nd from 1).
func gifRows(h int, interlaced bool) []int {
	rows := make([]int, 0, h)
	if !interlaced {
		for y := range h {
			rows = append(rows, y)
		}
		return rows
	}
	for _, pass := range [][2]int{{0, 8}, {4, 8}, {2, 4}, {1, 2}} {
		for y := pass[0]; y < h; y += pass[1] {
			rows = append(rows, y)
		}
	}
	return rows
}

// gifFrame is what a GIF's blocks say of its first image, read as Pillow's
// GifImagePlugin reads them.
type gifFrame struct {
	screen      image.Rectangle // the logical screen, grown to hold the frame
	rect        image.Rectangle // the frame on it
	table       []byte          // its colour table as RGB triples (its own, else the file's; nil: none)
	transparent int             // the transparent index, or −1
	interlaced  bool
	litWidth    int // the LZW code size
	data        int // where its first data sub-block starts
}

// gifFirstFrame walks a GIF's blocks to its first image descriptor as
// Pillow does: an extension's sub-blocks are skipped (a graphic control
// extension's transparent index kept: a later one without the flag does
// not clear it), and a byte that starts no block is skipped.
func gifFirstFrame(b []byte) (*gifFrame, error) {
	errShort := errors.New("gif: the file ends before its first image")
	if len(b) < 13 {
		return nil, errShort
	}
	f := &gifFrame{transparent: -1}
	i := 13
	tableOf := func(flags byte) ([]byte, error) {
		n := 3 << (flags&7 + 1)
		if i+n > len(b) {
			return nil, errShort
		}
		i += n
		return b[i-n : i], nil
	}
	var err error
	if b[10]&0x80 != 0 {
		if f.table, err = tableOf(b[10]); err != nil {
			return nil, err
		}
	}
	for i < len(b) {
		switch b[i] {
		case ';':
			return nil, errors.New("gif: the file has no image (its trailer comes first)")
		case '!': // an extension: a label, then sub-blocks up to an empty one
			if i+1 >= len(b) {
				return nil, errShort
			}
			label, first, next, ok := b[i+1], []byte(nil), i+2, false
			for n := 0; ; n++ {
				if next >= len(b) || next+1+int(b[next]) > len(b) {
					return nil, errShort
				}
				if b[next] == 0 {
					next++
					break
				}
				if n == 0 {
					first, ok = b[next+1:next+1+int(b[next])], true
				}
				next += 1 + int(b[next])
			}
			if label == 0xf9 { // graphic control: flags, delay (2), transparent index
				if !ok || len(first) < 4 {
					return nil, fmt.Errorf("gif: a graphic control extension of %d bytes, not 4", len(first))
				}
				if first[0]&1 != 0 {
					f.transparent = int(first[3])
				}
			}
			i = next
		case ',': // the image descriptor: position, size, flags
			if i+10 > len(b) {
				return nil, errShort
			}
			d := b[i+1 : i+10]
			x, y := int(d[0])|int(d[1])<<8, int(d[2])|int(d[3])<<8
			f.rect = image.Rect(x, y, x+(int(d[4])|int(d[5])<<8), y+(int(d[6])|int(d[7])<<8))
			w, h := int(b[6])|int(b[7])<<8, int(b[8])|int(b[9])<<8
			f.screen = image.Rect(0, 0, max(w, f.rect.Max.X), max(h, f.rect.Max.Y))
			f.interlaced = d[8]&0x40 != 0
			i += 10
			if d[8]&0x80 != 0 {
				if f.table, err = tableOf(d[8]); err != nil {
					return nil, err
				}
			}
			if i >= len(b) {
				return nil, errShort
			}
			f.litWidth, f.data = int(b[i]), i+1
			return f, nil
		default:
			i++
		}
	}
	return nil, errShort
}

// gifConfig is a GIF's size as Pillow opens it: the logical screen's
// (image/gif reads the header), grown to hold the first frame where that
// goes past it. A file whose blocks end before the first frame gives the
// screen's, and decodeGIF the error.
func gifConfig(b []byte) (image.Config, error) {
	cfg, err := gif.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return cfg, err
	}
	if f, err := gifFirstFrame(b); err == nil {
		cfg.Width, cfg.Height = f.screen.Dx(), f.screen.Dy()
	}
	return cfg, nil
}

// gifBlocks reads the data sub-blocks from b[i:] as one stream, up to the
// empty block that ends them.
type gifBlocks struct {
	b          []byte
	i, left    int // the next byte, and how many are left in its sub-block
	terminated bool
}

func (r *gifBlocks) Read(p []byte) (int, error) {
	for r.left == 0 {
		if r.terminated {
			return 0, io.EOF
		}
		if r.i >= len(r.b) {
			return 0, io.ErrUnexpectedEOF
		}
		r.left, r.terminated = int(r.b[r.i]), r.b[r.i] == 0
		r.i++
	}
	n := copy(p, r.b[r.i:min(len(r.b), r.i+r.left)])
	if n == 0 && len(p) > 0 {
		return 0, io.ErrUnexpectedEOF
	}
	r.i, r.left = r.i+n, r.left-n
	return n, nil
}

// gifMinBytes bounds a GIF's LZW data from below: a code is at least 3
// bits and stands for at most 4,096 pixels (the longest string the
// 4,096-entry table can hold). It counts the image's pixels, not the
// frame's: a tiny frame on a large screen is refused (though Pillow opens
// it), so that a few bytes cannot have Decode allocate the screen.
func gifMinBytes(w, h int) int { return w * h / 4096 * 3 / 8 }
