package imageproc

import "sync"

// A Budget bounds the pixels that Decodes running at once may hold: each
// Decode may allocate up to 8 bytes a pixel (16-bit RGBA) for an image of up
// to maxPixels, and a file of a few hundred KB can be such an image, so
// without a bound W workers decoding hostile files hold W × 256 MiB. A
// Budget of a few maxPixels admits hundreds of photographs at once and
// only a few images of the largest size.
type Budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
	size int
}

// NewBudget is a budget of twice the largest image Decode accepts (at most
// 512 MiB of decoded pixels in flight).
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

// headerPixels is width × height as the file's header states them, or 0
// where Decode would refuse the file before decoding it.
func headerPixels(data []byte) int {
	_, cfg, err := header(data)
	if err != nil {
		return 0
	}
	return cfg.Width * cfg.Height
}
