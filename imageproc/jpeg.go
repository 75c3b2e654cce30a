package imageproc

import (
	"fmt"
	"image"
	"image/color"

	"github.com/meazo-go/meazo/imageproc/internal/jpeg"
)

// ycbcrToRGB converts a JPEG's planes (internal/jpeg's, made by libjpeg's
// inverse DCT) to RGB as libjpeg (which Pillow uses) outputs it: the chroma
// planes are upsampled with libjpeg's "fancy" triangle filters
// (jdsample.c), not repeated as image/jpeg's YCbCr.At repeats them, then
// converted with libjpeg's fixed-point tables (jdcolor.c).
func ycbcrToRGB(m *image.YCbCr) (*RGB, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if b.Min != (image.Point{}) {
		return nil, fmt.Errorf("YCbCr image starts at %v, not (0, 0)", b.Min)
	}
	var cb, cr []uint8
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		cb, cr = plane(m.Cb, m.CStride, w, h), plane(m.Cr, m.CStride, w, h)
	case image.YCbCrSubsampleRatio420:
		cw, ch := (w+1)/2, (h+1)/2
		cb = upsampleH2V2(plane(m.Cb, m.CStride, cw, ch), cw, ch, w, h)
		cr = upsampleH2V2(plane(m.Cr, m.CStride, cw, ch), cw, ch, w, h)
	case image.YCbCrSubsampleRatio422:
		cw := (w + 1) / 2
		cb = upsampleH2V1(plane(m.Cb, m.CStride, cw, h), cw, h, w)
		cr = upsampleH2V1(plane(m.Cr, m.CStride, cw, h), cw, h, w)
	default:
		return nil, fmt.Errorf("JPEG chroma subsampling %v is not supported (4:4:4, 4:2:2 and 4:2:0 are)", m.SubsampleRatio)
	}
	out := &RGB{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			r, g, bl := libjpegYCCToRGB(m.Y[y*m.YStride+x], cb[i], cr[i])
			out.Pix[3*i], out.Pix[3*i+1], out.Pix[3*i+2] = r, g, bl
		}
	}
	return out, nil
}

// plane copies a w×h plane out of a strided buffer.
func plane(src []uint8, stride, w, h int) []uint8 {
	out := make([]uint8, w*h)
	for y := 0; y < h; y++ {
		copy(out[y*w:(y+1)*w], src[y*stride:y*stride+w])
	}
	return out
}

// upsampleH2V2 is libjpeg's h2v2_fancy_upsample on a cw×ch chroma plane:
// each output sample is 9/16 of its nearest input sample, 3/16 of each of
// the two next nearest and 1/16 of the diagonal one, with the rows above
// the first and below the last taken as copies of them (libjpeg's context
// rows), the columns' ends weighting the edge sample 4/4, and libjpeg's
// alternating rounding biases (8 and 7). The result is cropped to w×h.
func upsampleH2V2(in []uint8, cw, ch, w, h int) []uint8 {
	out := make([]uint8, w*h)
	colSums := make([]int, cw)
	for oy := 0; oy < h; oy++ {
		near := oy / 2
		far := near - 1 // an even output row lies nearer the row above
		if oy%2 == 1 {
			far = near + 1
		}
		far = min(max(far, 0), ch-1)
		for x := range colSums {
			colSums[x] = 3*int(in[near*cw+x]) + int(in[far*cw+x])
		}
		row := out[oy*w : (oy+1)*w]
		for ox := range row {
			cx := ox / 2
			this := colSums[cx]
			switch {
			case ox%2 == 0 && cx == 0:
				row[ox] = uint8((this*4 + 8) >> 4)
			case ox%2 == 0:
				row[ox] = uint8((this*3 + colSums[cx-1] + 8) >> 4)
			case cx == cw-1:
				row[ox] = uint8((this*4 + 7) >> 4)
			default:
				row[ox] = uint8((this*3 + colSums[cx+1] + 7) >> 4)
			}
		}
	}
	return out
}

// upsampleH2V1 is libjpeg's h2v1_fancy_upsample on a cw×h chroma plane:
// each output sample is 3/4 of its nearest input sample and 1/4 of the next
// nearest, rounding biases 1 and 2, the ends copying the edge sample.
func upsampleH2V1(in []uint8, cw, h, w int) []uint8 {
	out := make([]uint8, w*h)
	for y := 0; y < h; y++ {
		src, row := in[y*cw:(y+1)*cw], out[y*w:(y+1)*w]
		for ox := range row {
			cx := ox / 2
			v := 3 * int(src[cx])
			switch {
			case ox%2 == 0 && cx == 0, ox%2 == 1 && cx == cw-1:
				row[ox] = src[cx]
			case ox%2 == 0:
				row[ox] = uint8((v + int(src[cx-1]) + 1) >> 2)
			default:
				row[ox] = uint8((v + int(src[cx+1]) + 2) >> 2)
			}
		}
	}
	return out
}

// libjpeg's YCbCr→RGB constants: FIX(x) = round(x·2^16) (jdcolor.c).
const (
	fixCrR = 91881  // FIX(1.40200)
	fixCbB = 116130 // FIX(1.77200)
	fixCrG = 46802  // FIX(0.71414)
	fixCbG = 22554  // FIX(0.34414)
	half16 = 1 << 15
)

// libjpegYCCToRGB is jdcolor.c's ycc_rgb_convert for one pixel: the red and
// blue offsets rounded on their own, green's two terms summed before one
// rounding shift (arithmetic, so toward −∞), each result clamped to [0, 255].
func libjpegYCCToRGB(y, cb, cr uint8) (uint8, uint8, uint8) {
	cbd, crd := int(cb)-128, int(cr)-128
	r := int(y) + (fixCrR*crd+half16)>>16
	g := int(y) + (-fixCbG*cbd+half16-fixCrG*crd)>>16
	b := int(y) + (fixCbB*cbd+half16)>>16
	return clamp8(r), clamp8(g), clamp8(b)
}

func clamp8(v int) uint8 { return uint8(min(max(v, 0), 255)) }

// ycckToRGB converts a YCbCrK JPEG's planes to RGB as Pillow does: libjpeg
// converts Y, Cb and Cr as it does a colour JPEG's (ycbcrToRGB) and outputs
// 255 minus each, with K as stored; Pillow reads an Adobe JPEG's CMYK as
// inverted, so its C, M and Y are libjpeg's R, G and B and its K is 255
// minus the stored one, and then converts CMYK to RGB (cmykToRGB). A black
// plane at a lower resolution than Y is repeated, not upsampled as libjpeg
// would (no such file has been seen).
func ycckToRGB(m *jpeg.YCCK) (*RGB, error) {
	rgb, err := ycbcrToRGB(m.YCbCr)
	if err != nil {
		return nil, err
	}
	for y := 0; y < rgb.Height; y++ {
		for x := 0; x < rgb.Width; x++ {
			i := 3 * (y*rgb.Width + x)
			k := 255 - m.K[y/m.KV*m.KStride+x/m.KH]
			rgb.Pix[i], rgb.Pix[i+1], rgb.Pix[i+2] = cmykToRGB(color.CMYK{C: rgb.Pix[i], M: rgb.Pix[i+1], Y: rgb.Pix[i+2], K: k})
		}
	}
	return rgb, nil
}
