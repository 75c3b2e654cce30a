package imageproc

import (
	"fmt"
	"math"
	"slices"
)

// precisionBits is Pillow's fixed-point precision for 8-bit images
// (PRECISION_BITS = 32 - 8 - 2 in libImaging/Resample.c): a weight w is
// stored as round(w · 2^22), leaving 8 bits for the pixel and 2 for the
// overshoot of filters with negative lobes.
const precisionBits = 22

// bilinearSupport is the half-width of Pillow's triangle filter at scale 1.
const bilinearSupport = 1.0

// triangle is Pillow's bilinear_filter: 1 − |x| inside (−1, 1).
func triangle(x float64) float64 {
	x = math.Abs(x)
	if x < 1 {
		return 1 - x
	}
	return 0
}

// kernel is one output coordinate's filter: the first input index it reads
// and its fixed-point weights, one per input index from there on.
type kernel struct {
	first   int
	weights []int32
}

// coefficients computes, for an axis of inSize samples resized to outSize,
// every output sample's kernel as Pillow's precompute_coeffs and
// normalize_coeffs_8bpc do: the filter is widened by the reduction factor
// (so a reduction averages every input it covers: antialiasing), evaluated
// at the input samples' centres, normalised to sum 1 in float64, then each
// weight is rounded half away from zero to 22-bit fixed point.
func coefficients(inSize, outSize int) []kernel {
	scale := float64(inSize) / float64(outSize)
	filterScale := max(scale, 1)
	support := bilinearSupport * filterScale
	kernels := make([]kernel, outSize)
	for xx := range kernels {
		center := (float64(xx) + 0.5) * scale
		// Pillow truncates toward zero after adding 0.5 (C's (int) cast);
		// the clamps make a negative start 0.
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), inSize)
		w := make([]float64, xmax-xmin)
		var sum float64
		ss := 1 / filterScale // Pillow multiplies by the reciprocal (not the same rounding as dividing)
		for x := range w {
			w[x] = triangle((float64(x+xmin) - center + 0.5) * ss)
			sum += w[x]
		}
		fixed := make([]int32, len(w))
		for x, v := range w {
			if sum != 0 {
				v /= sum
			}
			if v < 0 {
				fixed[x] = int32(-0.5 + v*(1<<precisionBits))
			} else {
				fixed[x] = int32(0.5 + v*(1<<precisionBits))
			}
		}
		kernels[xx] = kernel{first: xmin, weights: fixed}
	}
	return kernels
}

// clip8 turns a fixed-point accumulator (which started at one half) into a
// uint8, as Pillow's clip8: the integer part, clamped to [0, 255].
func clip8(acc int32) uint8 {
	v := acc >> precisionBits
	switch {
	case v < 0:
		return 0
	case v > 255:
		return 255
	}
	return uint8(v)
}

// Resize resizes img to width × height with Pillow's BILINEAR filter
// (Image.resize(size, Image.BILINEAR) on an RGB image): a horizontal pass
// into an intermediate uint8 image, then a vertical pass, each sample the
// rounded fixed-point sum of its kernel. A pass along an axis whose size
// does not change is skipped, as Pillow skips it; an image already of the
// size is returned as a copy.
func Resize(img *RGB, width, height int) (*RGB, error) {
	if width <= 0 || height <= 0 || width > maxSide || height > maxSide {
		return nil, fmt.Errorf("resize to %d×%d: sides must be between 1 and %d", width, height, maxSide)
	}
	if err := img.check(); err != nil {
		return nil, fmt.Errorf("resize: %w", err)
	}
	out := img
	if width != img.Width {
		out = resizeHorizontal(out, width)
	}
	if height != img.Height {
		out = resizeVertical(out, height)
	}
	if out == img { // no pass: a copy, so that the result never shares img's pixels
		out = &RGB{Width: img.Width, Height: img.Height, Pix: slices.Clone(img.Pix)}
	}
	return out, nil
}

// resizeHorizontal is Pillow's ImagingResampleHorizontal_8bpc on 3 bands.
// (Pillow runs it only over the rows the vertical pass reads; every row is
// computed the same way, so computing all of them gives the same image.)
func resizeHorizontal(in *RGB, width int) *RGB {
	ks := coefficients(in.Width, width)
	out := &RGB{Width: width, Height: in.Height, Pix: make([]uint8, 3*width*in.Height)}
	for y := 0; y < in.Height; y++ {
		src := in.Pix[3*y*in.Width : 3*(y+1)*in.Width]
		dst := out.Pix[3*y*width : 3*(y+1)*width]
		for xx, k := range ks {
			var acc [3]int32
			for c := range acc {
				acc[c] = 1 << (precisionBits - 1)
			}
			for i, w := range k.weights {
				p := src[3*(k.first+i):]
				acc[0] += int32(p[0]) * w
				acc[1] += int32(p[1]) * w
				acc[2] += int32(p[2]) * w
			}
			dst[3*xx], dst[3*xx+1], dst[3*xx+2] = clip8(acc[0]), clip8(acc[1]), clip8(acc[2])
		}
	}
	return out
}

// resizeVertical is Pillow's ImagingResampleVertical_8bpc on 3 bands.
func resizeVertical(in *RGB, height int) *RGB {
	ks := coefficients(in.Height, height)
	row := 3 * in.Width
	out := &RGB{Width: in.Width, Height: height, Pix: make([]uint8, row*height)}
	for yy, k := range ks {
		dst := out.Pix[yy*row : (yy+1)*row]
		for x := range dst {
			acc := int32(1 << (precisionBits - 1))
			for i, w := range k.weights {
				acc += int32(in.Pix[(k.first+i)*row+x]) * w
			}
			dst[x] = clip8(acc)
		}
	}
	return out
}
