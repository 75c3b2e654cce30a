package cpu

import "unsafe"

// toPanel writes rows [cols][kc], ld apart (row col of a panel, along K),
// into dst in a panel's layout [kc][nr], zero in the columns past cols:
// what comes a column at a time, read by rows of the panel. The random
// words that round a bfloat16 update are drawn a column at a time (each a
// run of the stream); a key cache's panel takes its keys a token at a
// time. The values are moved, never computed on, so float32 goes as its
// bits (toPanelBits: an 8×8 transpose in registers where the CPU has
// AVX-512, panel_simd_amd64.go).
func toPanel[T float32 | uint32](dst, rows []T, cols, kc, ld int) {
	toPanelBits(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)),
		unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(rows))), len(rows)), cols, kc, ld)
}

// toPanelBits is toPanel on 32-bit words.
var toPanelBits = toPanelScalar

// toPanelScalar moves eight rows at a time, so that every write fills part
// of one cache line and the reads run along eight rows; from column c0 on,
// and from depth k0 on for the columns before c0 (what a vector version
// left).
func toPanelScalar(dst, rows []uint32, cols, kc, ld int) { toPanelFrom(dst, rows, cols, kc, ld, 0, 0) }

func toPanelFrom(dst, rows []uint32, cols, kc, ld, c0, k0 int) {
	if k0 < kc {
		for c := 0; c < c0; c += 8 {
			for kk := k0; kk < kc; kk++ {
				d := dst[kk*nr+c : kk*nr+c+8]
				for i := range d {
					d[i] = rows[(c+i)*ld+kk]
				}
			}
		}
	}
	for ; c0 < nr; c0 += 8 {
		if c0+8 > cols {
			for kk := range kc {
				for c := c0; c < c0+8; c++ {
					var v uint32
					if c < cols {
						v = rows[c*ld+kk]
					}
					dst[kk*nr+c] = v
				}
			}
			continue
		}
		r0, r1, r2, r3 := rows[c0*ld:c0*ld+kc], rows[(c0+1)*ld:(c0+1)*ld+kc], rows[(c0+2)*ld:(c0+2)*ld+kc], rows[(c0+3)*ld:(c0+3)*ld+kc]
		r4, r5, r6, r7 := rows[(c0+4)*ld:(c0+4)*ld+kc], rows[(c0+5)*ld:(c0+5)*ld+kc], rows[(c0+6)*ld:(c0+6)*ld+kc], rows[(c0+7)*ld:(c0+7)*ld+kc]
		for kk := range kc {
			d := dst[kk*nr+c0 : kk*nr+c0+8]
			d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = r0[kk], r1[kk], r2[kk], r3[kk], r4[kk], r5[kk], r6[kk], r7[kk]
		}
	}
}
