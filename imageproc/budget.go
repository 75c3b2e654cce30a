package imageproc

import (
	"bytes"
	"sync"
)

// A Budget bounds the pixels that Decodes running at once may hold: each
// Decode may allocate up to 8 bytes a pixel (16-bit RGBA; a progressive
// JPEG, which keeps its coefficients through its scans, up to 16, and
// counts twice) for an image of up to maxPixels, and a file of a few
// hundred KB can be such an image, so without a bound W workers decoding
// hostile files hold W × 256 MiB. A Budget of a few maxPixels admits
// hundreds of photographs at once and only a few images of the largest
// size.
type Budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
	size int
}

// NewBudget is a budget of twice the largest image Decode accepts (at most
// 512 MiB of decoded pixels in flight: one progressive JPEG of the largest
// size takes it all).
func NewBudget() *Budget {
	b := &Budget{free: 2 * maxPixels, size: 2 * maxPixels}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Acquire waits until the pixels the header of data states fit in the
// budget, takes them, and returns the function that gives them back (call
// it once the decoded image is no longer needed). A file whose header is
// not read (not PNG, JPEG or GIF, damaged, too large) takes nothing: Decode
// refuses it before it allocates.
func (b *Budget) Acquire(data []byte) (release func()) {
	n := min(headerPixels(data), b.size)
	if n <= 0 {
		return func() {}
	}
	b.mu.Lock()
	for b.free < n {
		b.cond.Wait()
	}
	b.free -= n
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.free += n
		b.mu.Unlock()
		b.cond.Broadcast()
	}
}

// headerPixels is width × height as the file's header states them (twice
// that for a progressive JPEG: up to 16 bytes a pixel where others take
// 8, measured on 4096×4096 files: 12.0 for YCbCr, 16.0 for CMYK), or 0
// where Decode would refuse the file before decoding it.
func headerPixels(data []byte) int {
	_, cfg, err := header(data)
	if err != nil {
		return 0
	}
	if progressiveJPEG(data) {
		return 2 * cfg.Width * cfg.Height
	}
	return cfg.Width * cfg.Height
}

// progressiveJPEG says whether data is a JPEG whose frame is progressive
// (SOF2, SOF6, SOF10, SOF14).
func progressiveJPEG(data []byte) bool {
	if !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
		return false
	}
	prog := false
	jpegSegments(data, func(marker byte, _ []byte) bool {
		if marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc { // a frame header
			prog = marker&3 == 2
			return false
		}
		return true
	})
	return prog
}
