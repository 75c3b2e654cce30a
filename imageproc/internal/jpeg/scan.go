// Copyright 2012 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package jpeg

import (
	"fmt"
	"image"
)

// makeImg allocates and initializes the destination image.
func (d *decoder) makeImg(mxx, myy int) {
	if d.nComp == 1 {
		m := image.NewGray(image.Rect(0, 0, 8*mxx, 8*myy))
		d.img1 = m.SubImage(image.Rect(0, 0, d.width, d.height)).(*image.Gray)
		return
	}

	h0 := d.comp[0].h
	v0 := d.comp[0].v
	hRatio := h0 / d.comp[1].h
	vRatio := v0 / d.comp[1].v
	var subsampleRatio image.YCbCrSubsampleRatio
	switch hRatio<<4 | vRatio {
	case 0x11:
		subsampleRatio = image.YCbCrSubsampleRatio444
	case 0x12:
		subsampleRatio = image.YCbCrSubsampleRatio440
	case 0x21:
		subsampleRatio = image.YCbCrSubsampleRatio422
	case 0x22:
		subsampleRatio = image.YCbCrSubsampleRatio420
	case 0x41:
		subsampleRatio = image.YCbCrSubsampleRatio411
	case 0x42:
		subsampleRatio = image.YCbCrSubsampleRatio410
	default:
		panic("unreachable")
	}
	m := image.NewYCbCr(image.Rect(0, 0, 8*h0*mxx, 8*v0*myy), subsampleRatio)
	d.img3 = m.SubImage(image.Rect(0, 0, d.width, d.height)).(*image.YCbCr)

	if d.nComp == 4 {
		h3, v3 := d.comp[3].h, d.comp[3].v
		d.blackPix = make([]byte, 8*h3*mxx*8*v3*myy)
		d.blackStride = 8 * h3 * mxx
	}
}

// Specified in section B.2.3.
func (d *decoder) processSOS(n int) error {
	if d.nComp == 0 {
		return FormatError("missing SOF marker")
	}
	if n < 6 || 4+2*d.nComp < n || n%2 != 0 {
		return FormatError("SOS has wrong length")
	}
	if err := d.readFull(d.tmp[:n]); err != nil {
		return err
	}
	nComp := int(d.tmp[0])
	if n != 4+2*nComp {
		return FormatError("SOS length inconsistent with number of components")
	}
	var scan [maxComponents]scanComponent
	totalHV := 0
	for i := 0; i < nComp; i++ {
		cs := d.tmp[1+2*i] // Component selector.
		compIndex := -1
		for j, comp := range d.comp[:d.nComp] {
			if cs == comp.c {
				compIndex = j
			}
		}
		if compIndex < 0 {
			return FormatError("unknown component selector")
		}
		scan[i].compIndex = uint8(compIndex)
		// Section B.2.3 states that "the value of Cs_j shall be different from
		// the values of Cs_1 through Cs_(j-1)". Since we have previously
		// verified that a frame's component identifiers (C_i values in section
		// B.2.2) are unique, it suffices to check that the implicit indexes
		// into d.comp are unique.
		for j := 0; j < i; j++ {
			if scan[i].compIndex == scan[j].compIndex {
				return FormatError("repeated component selector")
			}
		}
		totalHV += d.comp[compIndex].h * d.comp[compIndex].v

		// The baseline t <= 1 restriction is specified in table B.3.
		scan[i].td = d.tmp[2+2*i] >> 4
		if t := scan[i].td; t > maxTh || (d.baseline && t > 1) {
			return FormatError("bad Td value")
		}
		scan[i].ta = d.tmp[2+2*i] & 0x0f
		if t := scan[i].ta; t > maxTh || (d.baseline && t > 1) {
			return FormatError("bad Ta value")
		}
	}
	// Section B.2.3 states that if there is more than one component then the
	// total H*V values in a scan must be <= 10.
	if d.nComp > 1 && totalHV > 10 {
		return FormatError("total sampling factors too large")
	}

	// zigStart and zigEnd are the spectral selection bounds.
	// ah and al are the successive approximation high and low values.
	// The spec calls these values Ss, Se, Ah and Al.
	//
	// For progressive JPEGs, these are the two more-or-less independent
	// aspects of progression. Spectral selection progression is when not
	// all of a block's 64 DCT coefficients are transmitted in one pass.
	// For example, three passes could transmit coefficient 0 (the DC
	// component), coefficients 1-5, and coefficients 6-63, in zig-zag
	// order. Successive approximation is when not all of the bits of a
	// band of coefficients are transmitted in one pass. For example,
	// three passes could transmit the 6 most significant bits, followed
	// by the second-least significant bit, followed by the least
	// significant bit.
	//
	// For sequential JPEGs, these parameters are hard-coded to 0/63/0/0, as
	// per table B.3.
	zigStart, zigEnd, ah, al := int32(0), int32(blockSize-1), uint32(0), uint32(0)
	if d.progressive {
		zigStart = int32(d.tmp[1+2*nComp])
		zigEnd = int32(d.tmp[2+2*nComp])
		ah = uint32(d.tmp[3+2*nComp] >> 4)
		al = uint32(d.tmp[3+2*nComp] & 0x0f)
		if (zigStart == 0 && zigEnd != 0) || zigStart > zigEnd || blockSize <= zigEnd {
			return FormatError("bad spectral selection bounds")
		}
		if zigStart != 0 && nComp != 1 {
			return FormatError("progressive AC coefficients for more than one component")
		}
		if ah != 0 && ah != al+1 {
			return FormatError("bad successive approximation values")
		}
	}

	// mxx and myy are the number of MCUs (Minimum Coded Units) in the image.
	h0, v0 := d.comp[0].h, d.comp[0].v // The h and v values from the Y components.
	mxx := (d.width + 8*h0 - 1) / (8 * h0)
	myy := (d.height + 8*v0 - 1) / (8 * v0)
	if d.img1 == nil && d.img3 == nil {
		d.makeImg(mxx, myy)
	}
	if err := d.chargeScan(scan[:nComp], mxx*myy); err != nil {
		return err
	}
	if d.progressive {
		for i := 0; i < nComp; i++ {
			compIndex := scan[i].compIndex
			if d.progCoeffs[compIndex] == nil {
				d.progCoeffs[compIndex] = make([]savedBlock, mxx*myy*d.comp[compIndex].h*d.comp[compIndex].v)
			}
		}
	}

	s := &scanState{comps: scan[:nComp], zigStart: zigStart, zigEnd: zigEnd, ah: ah, al: al,
		stride: mxx, expectedRST: rst0Marker}
	d.bits = bits{}
	// An EOB run does not cross a scan's end (G.1.2.2); libjpeg starts each
	// scan with none.
	d.eobRun = 0
	if nComp == 1 {
		return d.decodeNonInterleaved(s)
	}
	return d.decodeInterleaved(s, mxx, myy)
}

// maxScanPasses bounds the work of a JPEG's scans: the blocks they decode,
// together, may be at most maxScanPasses times the frame's blocks (or
// minScanBudget blocks, for a small image). Each scan visits every block of
// its components, and an EOB run codes a whole scan of empty blocks in a few
// bytes, so a progressive JPEG of a few hundred KB can hold tens of
// thousands of scans of a large image and take minutes to decode, as it
// would in libjpeg (libjpeg-turbo's report "Two Issues with the JPEG
// Standard", LJT-01-003, whose remedy is this: a limit on the scans).
// libjpeg's progressive files cover each component 4 to 6 times, a
// sequential file once.
const (
	maxScanPasses = 64
	minScanBudget = 1 << 20
)

// chargeScan counts a scan of the components scan, in a frame of mcus MCUs,
// against the frame's budget of blocks (maxScanPasses), and refuses the
// scan that exceeds it.
func (d *decoder) chargeScan(scan []scanComponent, mcus int) error {
	frame := 0
	for _, c := range d.comp[:d.nComp] {
		frame += mcus * c.h * c.v
	}
	for _, sc := range scan {
		c := d.comp[sc.compIndex]
		d.scanBlocks += mcus * c.h * c.v
	}
	d.scans++
	if d.scanBlocks > max(maxScanPasses*frame, minScanBudget) {
		return FormatError(fmt.Sprintf("scan %d: the scans decode more than %d times the image's blocks (too many scans: a file that takes minutes to decode)", d.scans, maxScanPasses))
	}
	return nil
}

// scanComponent is one component of a scan: its index in d.comp and its
// Huffman tables.
type scanComponent struct {
	compIndex uint8
	td        uint8 // DC table selector.
	ta        uint8 // AC table selector.
}

// scanState is what decoding a scan's blocks needs from its header, and
// what carries from block to block.
type scanState struct {
	comps []scanComponent
	// zigStart and zigEnd are the spectral selection bounds, ah and al the
	// successive approximation's (processSOS).
	zigStart, zigEnd int32
	ah, al           uint32
	// stride is the frame's MCUs across: a component's blocks in
	// d.progCoeffs are stride·h to a row.
	stride      int
	dc          [maxComponents]int32 // The DC predictors, reset at each restart.
	expectedRST uint8
}

// decodeInterleaved decodes a scan of several components. Its MCU is h×v
// blocks of each component, in the order
//
//	0 1 4 5
//	2 3 6 7
//
// for 4:2:0 luma in a 32×16 image; every block of every MCU is coded, those
// past the image's edge included.
func (d *decoder) decodeInterleaved(s *scanState, mxx, myy int) error {
	for my := 0; my < myy; my++ {
		for mx := 0; mx < mxx; mx++ {
			for _, sc := range s.comps {
				hi, vi := d.comp[sc.compIndex].h, d.comp[sc.compIndex].v
				for j := 0; j < hi*vi; j++ {
					if err := d.decodeBlock(s, sc, hi*mx+j%hi, vi*my+j/hi); err != nil {
						return err
					}
				}
			}
			if err := d.endMCU(s, my*mxx+mx+1, mxx*myy); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeNonInterleaved decodes a scan of one component (a gray image's, a
// progressive AC scan, or any scan of one component). Section 4.8.2 makes
// its MCU one block, section A.2.2 orders them left to right and top to
// bottom, and only the blocks that cover the component's samples are coded:
// a 24×16 4:2:0 image has 8 luma blocks in its two interleaved MCUs but 6 in
// a luma-only scan,
//
//	0 1 2
//	3 4 5
//
// A restart interval counts these one-block MCUs. (image/jpeg counted the
// frame's h×v-block MCUs here, so the restart markers of a progressive
// JPEG's luma scans, or of a subsampled JPEG written one component a scan,
// were looked for in the wrong places and the file refused.)
func (d *decoder) decodeNonInterleaved(s *scanState) error {
	sc := s.comps[0]
	hi, vi := d.comp[sc.compIndex].h, d.comp[sc.compIndex].v
	h0, v0 := d.comp[0].h, d.comp[0].v // the largest sampling factors (processSOF)
	// The component's size in samples is the image's scaled by its
	// sampling factors, rounded up (section A.1.1); its blocks cover it.
	bw := ((d.width*hi+h0-1)/h0 + 7) / 8
	bh := ((d.height*vi+v0-1)/v0 + 7) / 8
	for by := 0; by < bh; by++ {
		for bx := 0; bx < bw; bx++ {
			if err := d.decodeBlock(s, sc, bx, by); err != nil {
				return err
			}
			if err := d.endMCU(s, by*bw+bx+1, bw*bh); err != nil {
				return err
			}
		}
	}
	return nil
}

// endMCU reads the restart marker that follows the MCU numbered mcu
// (counting from 1) of a scan of total MCUs, if the restart interval puts
// one there, and resets the entropy decoder's state as a restart does.
func (d *decoder) endMCU(s *scanState, mcu, total int) error {
	if d.ri == 0 || mcu%d.ri != 0 || mcu >= total {
		return nil
	}
	// For well-formed input, the RST[0-7] restart marker follows
	// immediately. For corrupt input, call findRST to try to
	// resynchronize.
	if err := d.readFull(d.tmp[:2]); err != nil {
		return err
	} else if d.tmp[0] != 0xff || d.tmp[1] != s.expectedRST {
		if err := d.findRST(s.expectedRST); err != nil {
			return err
		}
	}
	s.expectedRST++
	if s.expectedRST == rst7Marker+1 {
		s.expectedRST = rst0Marker
	}
	// Reset the Huffman decoder.
	d.bits = bits{}
	// Reset the DC components, as per section F.2.1.3.1.
	s.dc = [maxComponents]int32{}
	// Reset the progressive decoder state, as per section G.1.2.2.
	d.eobRun = 0
	return nil
}

// decodeBlock decodes the block (bx, by), in units of 8×8 blocks, of a
// scan's component: a sequential scan's block is reconstructed into the
// image, a progressive scan's coefficients are added to d.progCoeffs (and
// reconstructed by reconstructProgressiveImage once every scan is read).
func (d *decoder) decodeBlock(s *scanState, sc scanComponent, bx, by int) error {
	compIndex := sc.compIndex
	// b is the decoded coefficients, in natural (not zig-zag) order.
	var b block
	at := by*s.stride*d.comp[compIndex].h + bx
	if d.progressive {
		// Load the previous partially decoded coefficients.
		b = d.progCoeffs[compIndex][at].load()
	}
	if s.ah != 0 {
		if err := d.refine(&b, &d.huff[acTable][sc.ta], s.zigStart, s.zigEnd, 1<<s.al); err != nil {
			return err
		}
	} else if err := d.decodeFirst(s, sc, &b); err != nil {
		return err
	}
	if d.progressive {
		// Save the coefficients. (image/jpeg does not return until the
		// whole image is decoded, so an early stage of a progressive image
		// is not worth reconstructing.)
		d.progCoeffs[compIndex][at].save(&b)
		return nil
	}
	return d.reconstructBlock(&b, bx, by, int(compIndex))
}

// decodeFirst decodes a block's coefficients from zigStart to zigEnd (all
// 64 in a sequential scan), or their high bits in a progressive scan's
// first pass over them: sections F.2.2 and G.1.2.
func (d *decoder) decodeFirst(s *scanState, sc scanComponent, b *block) error {
	zig := s.zigStart
	if zig == 0 {
		zig++
		// Decode the DC coefficient, as specified in section F.2.2.1.
		value, err := d.decodeHuffman(&d.huff[dcTable][sc.td])
		if err != nil {
			return err
		}
		if value > 16 {
			return UnsupportedError("excessive DC component")
		}
		dcDelta, err := d.receiveExtend(value)
		if err != nil {
			return err
		}
		s.dc[sc.compIndex] += dcDelta
		b[0] = s.dc[sc.compIndex] << s.al
	}

	if zig <= s.zigEnd && d.eobRun > 0 {
		d.eobRun--
		return nil
	}
	// Decode the AC coefficients, as specified in section F.2.2.2.
	huff := &d.huff[acTable][sc.ta]
	for ; zig <= s.zigEnd; zig++ {
		value, err := d.decodeHuffman(huff)
		if err != nil {
			return err
		}
		val0 := value >> 4
		val1 := value & 0x0f
		if val1 != 0 {
			zig += int32(val0)
			if zig > s.zigEnd {
				break
			}
			ac, err := d.receiveExtend(val1)
			if err != nil {
				return err
			}
			b[unzig[zig]] = ac << s.al
			continue
		}
		if val0 != 0x0f {
			d.eobRun = uint16(1 << val0)
			if val0 != 0 {
				bits, err := d.decodeBits(int32(val0))
				if err != nil {
					return err
				}
				d.eobRun |= uint16(bits)
			}
			d.eobRun--
			break
		}
		zig += 0x0f
	}
	return nil
}

// savedBlock is a block's coefficients kept from one progressive scan to
// the next, in 16 bits as libjpeg keeps them (JCOEF): an 8-bit JPEG's
// coefficients fit, and a large image's take half the memory of block's
// (a 32 Mi-pixel 4:4:4 progressive JPEG's 1.5 Mi blocks a component, 192
// MiB in int32). A value past 16 bits, which only a damaged file has, wraps
// as libjpeg's short does when stored.
type savedBlock [blockSize]int16

func (s *savedBlock) load() block {
	var b block
	for i, v := range s {
		b[i] = int32(v)
	}
	return b
}

func (s *savedBlock) save(b *block) {
	for i, v := range b {
		s[i] = int16(v)
	}
}

// refine decodes a successive approximation refinement block, as specified in
// section G.1.2.
func (d *decoder) refine(b *block, h *huffman, zigStart, zigEnd, delta int32) error {
	// Refining a DC component is trivial.
	if zigStart == 0 {
		if zigEnd != 0 {
			panic("unreachable")
		}
		bit, err := d.decodeBit()
		if err != nil {
			return err
		}
		if bit {
			b[0] |= delta
		}
		return nil
	}

	// Refining AC components is more complicated; see sections G.1.2.2 and G.1.2.3.
	zig := zigStart
	if d.eobRun == 0 {
	loop:
		for ; zig <= zigEnd; zig++ {
			z := int32(0)
			value, err := d.decodeHuffman(h)
			if err != nil {
				return err
			}
			val0 := value >> 4
			val1 := value & 0x0f

			switch val1 {
			case 0:
				if val0 != 0x0f {
					d.eobRun = uint16(1 << val0)
					if val0 != 0 {
						bits, err := d.decodeBits(int32(val0))
						if err != nil {
							return err
						}
						d.eobRun |= uint16(bits)
					}
					break loop
				}
			case 1:
				z = delta
				bit, err := d.decodeBit()
				if err != nil {
					return err
				}
				if !bit {
					z = -z
				}
			default:
				return FormatError("unexpected Huffman code")
			}

			zig, err = d.refineNonZeroes(b, zig, zigEnd, int32(val0), delta)
			if err != nil {
				return err
			}
			if zig > zigEnd {
				return FormatError("too many coefficients")
			}
			if z != 0 {
				b[unzig[zig]] = z
			}
		}
	}
	if d.eobRun > 0 {
		d.eobRun--
		if _, err := d.refineNonZeroes(b, zig, zigEnd, -1, delta); err != nil {
			return err
		}
	}
	return nil
}

// refineNonZeroes refines non-zero entries of b in zig-zag order. If nz >= 0,
// the first nz zero entries are skipped over.
func (d *decoder) refineNonZeroes(b *block, zig, zigEnd, nz, delta int32) (int32, error) {
	for ; zig <= zigEnd; zig++ {
		u := unzig[zig]
		if b[u] == 0 {
			if nz == 0 {
				break
			}
			nz--
			continue
		}
		bit, err := d.decodeBit()
		if err != nil {
			return 0, err
		}
		if !bit {
			continue
		}
		if b[u] >= 0 {
			b[u] += delta
		} else {
			b[u] -= delta
		}
	}
	return zig, nil
}

func (d *decoder) reconstructProgressiveImage() error {
	// The h0, mxx, by and bx variables have the same meaning as in the
	// processSOS method.
	h0 := d.comp[0].h
	mxx := (d.width + 8*h0 - 1) / (8 * h0)
	for i := 0; i < d.nComp; i++ {
		if d.progCoeffs[i] == nil {
			continue
		}
		v := 8 * d.comp[0].v / d.comp[i].v
		h := 8 * d.comp[0].h / d.comp[i].h
		stride := mxx * d.comp[i].h
		for by := 0; by*v < d.height; by++ {
			for bx := 0; bx*h < d.width; bx++ {
				b := d.progCoeffs[i][by*stride+bx].load()
				if err := d.reconstructBlock(&b, bx, by, i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reconstructBlock dequantizes, performs libjpeg's inverse DCT and stores
// the block to the image.
func (d *decoder) reconstructBlock(b *block, bx, by, compIndex int) error {
	qt := &d.quant[d.comp[compIndex].tq]
	dst, stride := []byte(nil), 0
	if d.nComp == 1 {
		dst, stride = d.img1.Pix[8*(by*d.img1.Stride+bx):], d.img1.Stride
	} else {
		switch compIndex {
		case 0:
			dst, stride = d.img3.Y[8*(by*d.img3.YStride+bx):], d.img3.YStride
		case 1:
			dst, stride = d.img3.Cb[8*(by*d.img3.CStride+bx):], d.img3.CStride
		case 2:
			dst, stride = d.img3.Cr[8*(by*d.img3.CStride+bx):], d.img3.CStride
		case 3:
			dst, stride = d.blackPix[8*(by*d.blackStride+bx):], d.blackStride
		default:
			return UnsupportedError("too many components")
		}
	}
	islow(b, qt, dst, stride)
	return nil
}

// findRST advances past the next RST restart marker that matches expectedRST.
// Other than I/O errors, it is also an error if we encounter an {0xFF, M}
// two-byte marker sequence where M is not 0x00, 0xFF or the expectedRST.
//
// This is similar to libjpeg's jdmarker.c's next_marker function.
// https://github.com/libjpeg-turbo/libjpeg-turbo/blob/2dfe6c0fe9e18671105e94f7cbf044d4a1d157e6/jdmarker.c#L892-L935
//
// Precondition: d.tmp[:2] holds the next two bytes of JPEG-encoded input
// (input in the d.readFull sense).
func (d *decoder) findRST(expectedRST uint8) error {
	for {
		// i is the index such that, at the bottom of the loop, we read 2-i
		// bytes into d.tmp[i:2], maintaining the invariant that d.tmp[:2]
		// holds the next two bytes of JPEG-encoded input. It is either 0 or 1,
		// so that each iteration advances by 1 or 2 bytes (or returns).
		i := 0

		if d.tmp[0] == 0xff {
			if d.tmp[1] == expectedRST {
				return nil
			} else if d.tmp[1] == 0xff {
				i = 1
			} else if d.tmp[1] != 0x00 {
				// libjpeg's jdmarker.c's jpeg_resync_to_restart does something
				// fancy here, treating RST markers within two (modulo 8) of
				// expectedRST differently from RST markers that are 'more
				// distant'. Until we see evidence that recovering from such
				// cases is frequent enough to be worth the complexity, we take
				// a simpler approach for now. Any marker that's not 0x00, 0xff
				// or expectedRST is a fatal FormatError.
				return FormatError("bad RST marker")
			}

		} else if d.tmp[1] == 0xff {
			d.tmp[0] = 0xff
			i = 1
		}

		if err := d.readFull(d.tmp[i:2]); err != nil {
			return err
		}
	}
}
