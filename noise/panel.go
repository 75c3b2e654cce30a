package noise

import "unsafe"

// PanelRows is the number of rows FillPanel's vector kernel draws at once:
// the width of the CPU backend's GEMM panels.
const PanelRows = 32

// FillPanel writes the noise of rows rows of a weight, kc elements of each,
// in a GEMM panel's layout: dst[k·width + r] is element lo + r·stride + k
// of z, for r < rows and k < kc, and the columns rows ≤ r < width are zero.
// A panel is read by depth, 32 rows side by side, while the stream runs
// along each row; drawing the panel's layout directly saves the transpose
// that filling the rows with FillRange would need. The values are
// FillRange's, bit for bit (Sphere's divided by norm likewise).
//
// The vector paths (AVX-512 and AVX2) draw 32 rows of normals at once; they
// need width and rows 32, and lo, stride and kc multiples of 4 (rows that
// start on a block), as a float32 weight of the model's shapes has them.
// Anything else takes the general path, which fills 8 rows at a time.
func (s Stream) FillPanel(dst []float32, lo, stride, rows, kc, width int, dist Dist, norm float64) {
	if rows < 0 || rows > width || kc < 0 || len(dst) < kc*width {
		panic("noise: FillPanel: bad shape")
	}
	dst = dst[:kc*width]
	if !s.fillPanelVector(dst, lo, stride, rows, kc, width, dist) {
		s.fillPanelRows(dst, lo, stride, rows, kc, width, dist)
	}
	if dist == Sphere {
		for i, v := range dst {
			dst[i] = float32(float64(v) / norm)
		}
	}
}

// fillPanelRows is FillPanel's general path: 8 rows at a time, each drawn
// along the stream, then written to the panel 8 adjacent values per depth
// (a value at a time, each write to another cache line, took as long as
// drawing the normals).
func (s Stream) fillPanelRows(dst []float32, lo, stride, rows, kc, width int, dist Dist) {
	var buf [8][256]float32
	for k0 := 0; k0 < kc; k0 += len(buf[0]) {
		n := min(len(buf[0]), kc-k0)
		for r0 := 0; r0 < width; r0 += len(buf) {
			g := min(len(buf), width-r0)
			for i := range g {
				if r := r0 + i; r < rows {
					s.fillValues(buf[i][:n], lo+r*stride+k0, dist)
				} else {
					clear(buf[i][:n])
				}
			}
			if g < len(buf) {
				for k := range n {
					for i := range g {
						dst[(k0+k)*width+r0+i] = buf[i][k]
					}
				}
				continue
			}
			b0 := buf[0][:n]
			b1, b2, b3, b4 := buf[1][:len(b0)], buf[2][:len(b0)], buf[3][:len(b0)], buf[4][:len(b0)]
			b5, b6, b7 := buf[5][:len(b0)], buf[6][:len(b0)], buf[7][:len(b0)]
			for k := range b0 {
				d := (*[8]float32)(dst[(k0+k)*width+r0:])
				d[0], d[1], d[2], d[3] = b0[k], b1[k], b2[k], b3[k]
				d[4], d[5], d[6], d[7] = b4[k], b5[k], b6[k], b7[k]
			}
		}
	}
}

// fillPanelVector is FillPanel's vector path, before Sphere's division; it
// reports false, having written nothing, where it does not apply.
func (s Stream) fillPanelVector(dst []float32, lo, stride, rows, kc, width int, dist Dist) bool {
	if vecPath == nil || rows != PanelRows || width != PanelRows || kc == 0 || lo%4 != 0 || stride%4 != 0 || kc%4 != 0 || stride < 0 {
		return false
	}
	// Every block the panel reads must share the counter's high word: the
	// kernel adds row offsets and steps to its low word only.
	first, last := uint64(lo/4), uint64((lo+(rows-1)*stride+kc-1)/4)
	if first>>32 != last>>32 {
		return false
	}
	// The counter offset of each quadword lane's row: the kernel's groups
	// hold their rows in the lane order of its FillRange kernel.
	var lanes [2 * PanelRows]uint32
	g := len(vecPath.lanes)
	for q := range PanelRows {
		lanes[2*q] = uint32((q/g*g + vecPath.lanes[q%g]) * stride / 4)
	}
	a := s.newKernelArgs(first)
	return vecPath.panel(unsafe.SliceData(dst), &lanes, kc/4, &a, dist)
}
