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
	return planesToRGB(m, func(_ int, dst, luma, cb, cr []uint8) {
		for x, l := range luma {
			dst[3*x], dst[3*x+1], dst[3*x+2] = libjpegYCCToRGB(l, cb[x], cr[x])
		}
	})
}

// rgbPlanesToRGB is a JPEG that stores R, G and B as libjpeg outputs it:
// a subsampled G and B upsampled as a colour JPEG's chroma, and no
// conversion (jdcolor.c's rgb_rgb_convert copies).
func rgbPlanesToRGB(m *jpeg.RGB) (*RGB, error) {
	return planesToRGB(m.YCbCr, func(_ int, dst, r, g, b []uint8) {
		for x := range r {
			dst[3*x], dst[3*x+1], dst[3*x+2] = r[x], g[x], b[x]
		}
	})
}

// planesToRGB makes the RGB image of a JPEG's first three planes (the
// first at full size, the other two at the YCbCr's subsampling) a row at a
// time, as libjpeg does, so that a large image's memory is its planes and
// its RGB, not full-size planes besides: convert writes row y (dst, 3
// bytes a pixel) from the three planes' rows, the second and third
// upsampled.
func planesToRGB(m *image.YCbCr, convert func(y int, dst, p0, p1, p2 []uint8)) (*RGB, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if b.Min != (image.Point{}) {
		return nil, fmt.Errorf("JPEG image starts at %v, not (0, 0)", b.Min)
	}
	up, err := newUpsampler(m.SubsampleRatio, w, h, m.CStride)
	if err != nil {
		return nil, err
	}
	out := &RGB{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	row1, row2 := make([]uint8, w), make([]uint8, w)
	for y := 0; y < h; y++ {
		convert(y, out.Pix[3*y*w:3*(y+1)*w], m.Y[y*m.YStride:y*m.YStride+w], up.row(m.Cb, y, row1), up.row(m.Cr, y, row2))
	}
	return out, nil
}

// upsampler gives a chroma plane's rows at full resolution, as libjpeg-turbo's
// jinit_upsampler chooses for the plane's expansion (hx across, vx down):
// its "fancy" triangle filters at 2×1 (4:2:2), 2×2 (4:2:0) and 1×2 (4:4:0),
// except at 2×1 and 2×2 on a plane of at most 2 columns (an image of at
// most 4 pixels across), where it picks the plain upsamplers
// (h2v1_upsample, h2v2_upsample); and at 4×1 and 4×2 (4:1:1, 4:1:0) its
// int_upsample, which has no filter. The plain ones repeat each sample
// over the pixels it covers.
type upsampler struct {
	hx, vx  int // the image's pixels per chroma sample, across and down
	fancy   bool
	cw, ch  int // the chroma plane's size
	stride  int
	colSums []int // upsampleRowH2V2's scratch
}

// expansions are the subsampling ratios image/jpeg returns, as the pixels
// a chroma sample covers across and down.
var expansions = map[image.YCbCrSubsampleRatio][2]int{
	image.YCbCrSubsampleRatio444: {1, 1},
	image.YCbCrSubsampleRatio422: {2, 1},
	image.YCbCrSubsampleRatio420: {2, 2},
	image.YCbCrSubsampleRatio440: {1, 2},
	image.YCbCrSubsampleRatio411: {4, 1},
	image.YCbCrSubsampleRatio410: {4, 2},
}

func newUpsampler(ratio image.YCbCrSubsampleRatio, w, h, stride int) (*upsampler, error) {
	e, ok := expansions[ratio]
	if !ok {
		return nil, fmt.Errorf("JPEG chroma subsampling %v is not supported (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1 and 4:1:0 are)", ratio)
	}
	return newPlaneUpsampler(e[0], e[1], w, h, stride)
}

// newPlaneUpsampler is the upsampler of a plane whose sample covers hx × vx
// pixels of a w × h image, its rows stride apart.
func newPlaneUpsampler(hx, vx, w, h, stride int) (*upsampler, error) {
	if hx != 1 && hx != 2 && hx != 4 || vx != 1 && vx != 2 {
		return nil, fmt.Errorf("JPEG plane subsampled %d×%d is not supported", hx, vx)
	}
	u := &upsampler{hx: hx, vx: vx, cw: (w + hx - 1) / hx, ch: (h + vx - 1) / vx, stride: stride}
	switch {
	case u.hx == 2: // libjpeg-turbo's "downsampled_width > 2"
		u.fancy = u.cw > 2
	case u.hx == 1 && u.vx == 2: // h1v2_fancy_upsample, whatever the width
		u.fancy = true
	}
	if u.hx == 2 && u.vx == 2 {
		u.colSums = make([]int, u.cw)
	}
	return u, nil
}

// row returns output row y of the chroma plane c, upsampled into buf (a
// row of the image's width) unless c is at full resolution already.
func (u *upsampler) row(c []uint8, y int, buf []uint8) []uint8 {
	line := func(cy int) []uint8 { return c[cy*u.stride : cy*u.stride+u.cw] }
	// The chroma row nearest output row y, and the next nearest at 2 rows
	// a chroma row: the row above for the first of the two, below for the
	// second, and the edge row itself past the first and last (libjpeg's
	// context rows).
	near := y / u.vx
	far := near - 1
	if y%2 == 1 {
		far = near + 1
	}
	far = min(max(far, 0), u.ch-1)
	switch {
	case u.hx == 1 && u.vx == 1:
		return line(y)
	case !u.fancy:
		repeatRow(line(near), u.hx, buf)
	case u.vx == 1: // 4:2:2
		upsampleRowH2V1(line(near), buf)
	case u.hx == 1: // 4:4:0
		upsampleRowH1V2(line(near), line(far), y%2, buf)
	default: // 4:2:0
		upsampleRowH2V2(line(near), line(far), u.colSums, buf)
	}
	return buf
}

// repeatRow is libjpeg's plain h2v1_upsample and h2v2_upsample, and its
// int_upsample, for one output row: each chroma sample repeated over the
// n columns it covers, the output cropped to len(row).
func repeatRow(src []uint8, n int, row []uint8) {
	for ox := range row {
		row[ox] = src[ox/n]
	}
}

// upsampleRowH1V2 is libjpeg-turbo's h1v2_fancy_upsample for one output
// row: each output sample is 3/4 of the sample in near (the chroma row
// nearest the output row) and 1/4 of the one in far (the next nearest),
// rounding bias 1 for the first output row a chroma row covers (second 0)
// and 2 for the second.
func upsampleRowH1V2(near, far []uint8, second int, row []uint8) {
	bias := 1 + second
	for x := range row {
		row[x] = uint8((3*int(near[x]) + int(far[x]) + bias) >> 2)
	}
}

// upsampleRowH2V2 is libjpeg's h2v2_fancy_upsample for one output row:
// each output sample is 9/16 of its nearest input sample (in near, the
// chroma row nearest the output row), 3/16 of each of the two next nearest
// (in far, the next nearest row: the row above for an even output row,
// below for an odd one, and the edge row itself past the first and last,
// libjpeg's context rows) and 1/16 of the diagonal one, the row's ends
// weighting the edge sample 4/4, with libjpeg's alternating rounding
// biases (8 and 7). The output is cropped to len(row); colSums is scratch
// of len(near).
func upsampleRowH2V2(near, far []uint8, colSums []int, row []uint8) {
	for x := range colSums {
		colSums[x] = 3*int(near[x]) + int(far[x])
	}
	last := len(colSums) - 1
	for ox := range row {
		cx := ox / 2
		this := colSums[cx]
		switch {
		case ox%2 == 0 && cx == 0:
			row[ox] = uint8((this*4 + 8) >> 4)
		case ox%2 == 0:
			row[ox] = uint8((this*3 + colSums[cx-1] + 8) >> 4)
		case cx == last:
			row[ox] = uint8((this*4 + 7) >> 4)
		default:
			row[ox] = uint8((this*3 + colSums[cx+1] + 7) >> 4)
		}
	}
}

// upsampleRowH2V1 is libjpeg's h2v1_fancy_upsample for one row: each
// output sample is 3/4 of its nearest input sample and 1/4 of the next
// nearest, rounding biases 1 and 2, the ends copying the edge sample. The
// output is cropped to len(row).
func upsampleRowH2V1(src, row []uint8) {
	last := len(src) - 1
	for ox := range row {
		cx := ox / 2
		v := 3 * int(src[cx])
		switch {
		case ox%2 == 0 && cx == 0, ox%2 == 1 && cx == last:
			row[ox] = src[cx]
		case ox%2 == 0:
			row[ox] = uint8((v + int(src[cx-1]) + 1) >> 2)
		default:
			row[ox] = uint8((v + int(src[cx+1]) + 2) >> 2)
		}
	}
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
// 255 minus each, with K as stored (upsampled as chroma is, where it is
// subsampled); Pillow reads an Adobe JPEG's CMYK as inverted, so its C, M
// and Y are libjpeg's R, G and B and its K is 255 minus the stored one,
// and then converts CMYK to RGB (cmykToRGB).
func ycckToRGB(m *jpeg.YCCK) (*RGB, error) {
	black, err := blackRows(m)
	if err != nil {
		return nil, err
	}
	return planesToRGB(m.YCbCr, func(y int, dst, luma, cb, cr []uint8) {
		k := black(y)
		for x, l := range luma {
			r, g, b := libjpegYCCToRGB(l, cb[x], cr[x])
			dst[3*x], dst[3*x+1], dst[3*x+2] = cmykToRGB(color.CMYK{C: r, M: g, Y: b, K: 255 - k[x]})
		}
	})
}

// cmykPlanesToRGB converts a CMYK JPEG's planes to RGB as Pillow does:
// libjpeg upsamples each subsampled plane as it does chroma and outputs
// the samples as stored; Pillow reads an Adobe JPEG's CMYK as inverted
// (255 minus each) and converts CMYK to RGB (cmykToRGB).
func cmykPlanesToRGB(m *jpeg.CMYK) (*RGB, error) {
	black, err := blackRows(&m.YCCK)
	if err != nil {
		return nil, err
	}
	return planesToRGB(m.YCbCr, func(y int, dst, c, mg, yl []uint8) {
		k := black(y)
		for x := range c {
			dst[3*x], dst[3*x+1], dst[3*x+2] = cmykToRGB(color.CMYK{C: 255 - c[x], M: 255 - mg[x], Y: 255 - yl[x], K: 255 - k[x]})
		}
	})
}

// blackRows returns the black plane's rows at full size, upsampled as
// chroma is where the plane is subsampled; each row is valid until the
// next call.
func blackRows(m *jpeg.YCCK) (func(y int) []uint8, error) {
	b := m.Bounds()
	up, err := newPlaneUpsampler(m.KH, m.KV, b.Dx(), b.Dy(), m.KStride)
	if err != nil {
		return nil, err
	}
	row := make([]uint8, b.Dx())
	return func(y int) []uint8 { return up.row(m.K, y, row) }, nil
}
