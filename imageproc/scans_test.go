package imageproc

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// progressiveGray is a progressive gray JPEG of side×side pixels (side a
// multiple of 64) whose every block is empty: its DC scan codes each
// block's difference in one bit, and each of its acScans AC scans codes
// all the blocks as one EOB run (EOB14: 16,384 blocks) in two bytes. The
// file is the frame's blocks / 8 bytes and 12 more a scan, whatever the
// scans' work.
func progressiveGray(side, acScans int) []byte {
	var b bytes.Buffer
	segment := func(marker byte, body ...byte) {
		b.Write([]byte{0xff, marker, byte((len(body) + 2) >> 8), byte(len(body) + 2)})
		b.Write(body)
	}
	b.Write([]byte{0xff, 0xd8})
	segment(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)...) // quantisation table 0: all ones
	segment(0xc2, 8, byte(side>>8), byte(side), byte(side>>8), byte(side), 1, 1, 0x11, 0)
	oneCode := func(class byte, symbol byte) []byte { // one code of length 1: "0"
		return append(append([]byte{class, 1}, make([]byte, 15)...), symbol)
	}
	segment(0xc4, oneCode(0x00, 0x00)...) // DC: difference category 0
	segment(0xc4, oneCode(0x10, 0xe0)...) // AC: EOB14
	segment(0xda, 1, 1, 0x00, 0, 0, 0x00) // DC first scan
	blocks := (side / 8) * (side / 8)
	b.Write(make([]byte, blocks/8))
	for range acScans {
		segment(0xda, 1, 1, 0x00, 1, 63, 0x00) // AC 1–63, first scan
		for run := 0; run < blocks; run += 1 << 14 {
			b.Write([]byte{0x00, 0x01}) // EOB14 ("0"), 14 bits of 0: 16,384 blocks; then a pad bit
		}
	}
	b.Write([]byte{0xff, 0xd9})
	return b.Bytes()
}

// TestDecodeRefusesTooManyScans: a progressive JPEG whose scans together
// decode more than maxScanPasses times its blocks is refused at the scan
// that passes the limit (an EOB run codes a scan of a large image in a few
// bytes: 20,000 scans of a 4096×4096 image, 726 KB, took more than 4
// minutes to decode); a file with a few scans more than libjpeg writes
// decodes.
func TestDecodeRefusesTooManyScans(t *testing.T) {
	const side = 1024 // 16,384 blocks: 64 passes is the minimum budget
	fine, err := Decode(progressiveGray(side, 40))
	if err != nil || fine.Width != side || fine.Pix[0] != 128 {
		t.Fatalf("41 scans: %v", err)
	}
	start := time.Now()
	data := progressiveGray(side, 2000)
	_, err = Decode(data)
	if err == nil || !strings.Contains(err.Error(), "scan 65: the scans decode more than 64 times the image's blocks") {
		t.Fatalf("2,001 scans of a %d×%d image in %d bytes: error %v, want the 65th refused", side, side, len(data), err)
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
}
