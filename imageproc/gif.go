package imageproc

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
)

// decodeGIF reads a GIF's first frame as Pillow 9.4 opens a GIF (mode P,
// before any other frame is read): an image of the logical screen's size
// whose pixels outside the frame are colour 0, or the frame's transparent
// index when it has one; the frame's own colour table, or else the
// file's; the transparent index keeping its colour (convert("RGB") ignores
// transparency), where image/gif makes it transparent black; entries past
// the table gray i at entry i, Pillow's default palette. The other frames
// of an animation are not decoded: a dataset's image is its first frame.
func decodeGIF(b []byte) (image.Image, error) {
	screen, err := gif.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	m, err := gif.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	frame, ok := m.(*image.Paletted)
	if !ok {
		return nil, errors.New("gif: the first frame is not a palette image")
	}
	table, transparent, err := gifFirstTable(b)
	if err != nil {
		return nil, err
	}
	pal := make(color.Palette, 256)
	for i := range pal {
		if 3*i+2 < len(table) {
			pal[i] = color.NRGBA{table[3*i], table[3*i+1], table[3*i+2], 0xff}
		} else {
			pal[i] = color.NRGBA{uint8(i), uint8(i), uint8(i), 0xff}
		}
	}
	out := image.NewPaletted(image.Rect(0, 0, screen.Width, screen.Height), pal)
	if transparent >= 0 {
		for i := range out.Pix {
			out.Pix[i] = uint8(transparent)
		}
	}
	r := frame.Rect.Intersect(out.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		copy(out.Pix[out.PixOffset(r.Min.X, y):out.PixOffset(r.Max.X, y)], frame.Pix[frame.PixOffset(r.Min.X, y):])
	}
	return out, nil
}

// gifFirstTable walks a GIF's blocks to its first image: the colour table
// that image uses (its local table, or else the global one) as RGB
// triples, and the transparent index its graphic control extension gives
// (−1: none). image/gif has read the file already, so damage here is rare.
func gifFirstTable(b []byte) (table []byte, transparent int, err error) {
	errShort := errors.New("gif: the file ends before its first image")
	if len(b) < 13 {
		return nil, -1, errShort
	}
	i := 13
	tableOf := func(flags byte) ([]byte, error) {
		n := 3 << (flags&7 + 1)
		if i+n > len(b) {
			return nil, errShort
		}
		i += n
		return b[i-n : i], nil
	}
	if b[10]&0x80 != 0 {
		if table, err = tableOf(b[10]); err != nil {
			return nil, -1, err
		}
	}
	transparent = -1
	for i < len(b) {
		switch b[i] {
		case 0x21: // an extension: a label, then sub-blocks up to an empty one
			if i+2 > len(b) {
				return nil, -1, errShort
			}
			label := b[i+1]
			i += 2
			for first := true; ; first = false {
				if i >= len(b) {
					return nil, -1, errShort
				}
				n := int(b[i])
				i++
				if n == 0 {
					break
				}
				if i+n > len(b) {
					return nil, -1, errShort
				}
				if label == 0xf9 && first && n >= 4 { // graphic control: flags, delay (2), index
					transparent = -1
					if b[i]&1 != 0 {
						transparent = int(b[i+3])
					}
				}
				i += n
			}
		case 0x2c: // the image descriptor: position, size, flags
			if i+10 > len(b) {
				return nil, -1, errShort
			}
			flags := b[i+9]
			i += 10
			if flags&0x80 != 0 {
				if table, err = tableOf(flags); err != nil {
					return nil, -1, err
				}
			}
			return table, transparent, nil
		default:
			return nil, -1, errors.New("gif: a block of unknown type before the first image")
		}
	}
	return nil, -1, errShort
}

// gifMinBytes bounds a GIF's LZW data from below: a code is at least 3
// bits and stands for at most 4,096 pixels (the longest string the
// 4,096-entry table can hold).
func gifMinBytes(w, h int) int { return w * h / 4096 * 3 / 8 }
