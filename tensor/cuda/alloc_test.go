package cuda

import (
	"testing"
	"unsafe"
)

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{0, 256}, {4, 256}, {256, 256}, {257, 512}, {2048, 2048},
		{2049, 2304}, {4096, 4096}, {4097, 4608},
		{1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17},
		{7 << 20, 7 << 20}, {7<<20 + 1, 7<<20 + 1<<19},
	} {
		got := sizeClass(c.in)
		if got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.in, got, c.want)
		}
		if got < c.in || c.in > 2048 && float64(got) > 1.125*float64(c.in) {
			t.Errorf("sizeClass(%d) = %d: smaller, or more than 12.5 %% larger", c.in, got)
		}
	}
}

// countingDevice is a device whose memory is only bookkeeping: it counts
// what is allocated from it, so the allocator's caching can be checked.
type countingDevice struct {
	next, held, peak uint64
	mallocs          int
	sizes            map[uint64]uint64
}

func (d *countingDevice) bind() error { return nil }
func (d *countingDevice) malloc(bytes uint64) (uint64, error) {
	d.next += bytes
	d.sizes[d.next] = bytes
	d.held += bytes
	d.peak = max(d.peak, d.held)
	d.mallocs++
	return d.next, nil
}
func (d *countingDevice) free(p uint64)                             { d.held -= d.sizes[p]; delete(d.sizes, p) }
func (d *countingDevice) memInfo() (uint64, uint64)                 { return 0, 0 }
func (d *countingDevice) htod(uint64, unsafe.Pointer, uint64) error { return nil }
func (d *countingDevice) dtoh(unsafe.Pointer, uint64, uint64) error { return nil }
func (d *countingDevice) dtod(uint64, uint64, uint64) error         { return nil }
func (d *countingDevice) memsetD32(uint64, uint32, uint64) error    { return nil }
func (d *countingDevice) launch(string, [3]uint32, uint32, uint32, []uint64) error {
	return nil
}
func (d *countingDevice) sgemm(int32, int32, int, int, int, uint64, int, uint64, int, uint64, int, float32, float32) error {
	return nil
}
func (d *countingDevice) gemmBF16(int32, int32, int, int, int, uint64, int, uint64, int, uint64, int, float32, float32) error {
	return nil
}
func (d *countingDevice) sgemmBatched(int32, int32, int, int, int, uint64, int, uint64, int, uint64, int, int, bool) error {
	return nil
}
func (d *countingDevice) close() {}

// TestCacheBounded runs the allocation pattern of training on batches whose
// length changes every step: the device must hold at most the weights and
// twice the largest working set (before size classes and the trim it grew
// with every new length until the GPU was full), and steps whose sizes were
// seen before must not allocate.
func TestCacheBounded(t *testing.T) {
	d := &countingDevice{sizes: map[uint64]uint64{}}
	b, err := newBackend(d, "counting", 1<<16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := b.Pack(make([]float32, 1000), 10, 100, false)
	const hidden, vocab = 2048, 32000
	step := func(tokens int) uint64 {
		var bufs []any
		var live uint64
		for _, n := range []int{tokens * hidden, tokens * hidden, tokens * 4 * hidden, tokens * vocab / 8} {
			bufs = append(bufs, b.Alloc(n))
			live += sizeClass(uint64(4 * n))
		}
		for _, x := range bufs {
			b.Free(x.(buf))
		}
		return live
	}
	var peakWork uint64
	for s := range 300 {
		peakWork = max(peakWork, step(1000+37*(s%97)+s%5))
	}
	if limit := 4000 + 2*max(peakWork, minCache); d.held > limit || d.peak > limit+peakWork {
		t.Errorf("device holds %d bytes (peak %d); want at most the weights and twice the working set, %d", d.held, d.peak, limit)
	}
	before := d.mallocs
	for s := range 97 {
		step(1000 + 37*s)
	}
	t.Logf("%d device allocations over 300 steps of changing length, %d in 97 steps of lengths seen before; device holds %d MiB, working set %d MiB",
		before, d.mallocs-before, d.held>>20, peakWork>>20)
	if held, peak := b.DeviceMemory(); held != d.held || peak != d.peak {
		t.Errorf("DeviceMemory() = %d, %d; the device holds %d, peak %d", held, peak, d.held, d.peak)
	}
	if bufs, weights, _ := b.Live(); bufs != 0 || weights != 1 {
		t.Errorf("live: %d buffers, %d weights; want 0 and 1", bufs, weights)
	}
	b.FreeWeight(w)
	if _, weights, _ := b.Live(); weights != 0 {
		t.Errorf("FreeWeight left %d weights", weights)
	}
	if held, _ := b.DeviceMemory(); held != d.held {
		t.Errorf("after FreeWeight DeviceMemory() holds %d; the device %d", held, d.held)
	}
	b.Close()
	if held, peak := b.DeviceMemory(); held != 0 || d.held != 0 || peak != d.peak {
		t.Errorf("after Close: DeviceMemory() = %d, %d; the device holds %d, peak %d", held, peak, d.held, d.peak)
	}
}

// TestExactAllocs: with the backend's cache off for the memory checker
// (exactAllocs, checkers_test.go), every device allocation a kernel reads
// through is of the exact size asked for: buffers, and the scratch arrays
// of indices, masks and pointers, also when a shorter array follows a
// longer one (a kernel reading past the shorter would be inside the
// longer's allocation); a freed buffer goes back to the device, and Close
// returns everything.
func TestExactAllocs(t *testing.T) {
	d := &countingDevice{sizes: map[uint64]uint64{}}
	b, err := newBackend(d, "counting", 1<<16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.exactAllocs = true
	x := b.Alloc(3).(buf)
	if got := d.sizes[x.ptr]; got != 12 {
		t.Errorf("a buffer of 3 floats: an allocation of %d bytes, want 12", got)
	}
	b.Free(x)
	if _, ok := d.sizes[x.ptr]; ok {
		t.Error("a freed buffer's allocation was kept (cached)")
	}
	for _, n := range []int{5, 2, 2, 700, 1} {
		p := b.uploadInts(&b.ids, make([]int, n))
		if got := d.sizes[p]; got != uint64(4*n) {
			t.Errorf("uploadInts of %d ints: an allocation of %d bytes, want %d", n, got, 4*n)
		}
	}
	b.Close()
	if d.held != 0 {
		t.Errorf("after Close the device holds %d bytes", d.held)
	}
}
