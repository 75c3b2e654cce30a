package cuda

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestStagedUploads runs gpu.htod on a driver that records calls instead
// of copying: a small upload is staged in the pinned buffer and sent
// asynchronously with the caller's bytes, no staged region is written again
// while a copy from it may still be pending (until a download, a
// synchronous copy or a full buffer's cuCtxSynchronize), and large uploads
// or a gpu without pinned memory copy synchronously.
func TestStagedUploads(t *testing.T) {
	type region struct{ lo, hi uintptr }
	var (
		pending []region // staged regions the device may still read
		syncs   int
		async   int
		plain   int
	)
	pinned := make([]byte, stageBytes)
	base := uintptr(unsafe.Pointer(&pinned[0]))
	g := &gpu{stage: staging{mem: unsafe.Pointer(&pinned[0])}, drv: &driver{
		memcpyHtoD: func(dst uint64, src unsafe.Pointer, n uint64) int32 {
			plain++
			pending = nil // a pageable copy waits for the stream first
			return 0
		},
		memcpyDtoH: func(dst unsafe.Pointer, src uint64, n uint64) int32 {
			pending = nil
			return 0
		},
		ctxSynchronize: func() int32 {
			syncs++
			pending = nil
			return 0
		},
		memcpyHtoDAsync: func(dst uint64, src unsafe.Pointer, n uint64, stream uintptr) int32 {
			async++
			lo := uintptr(src)
			if lo < base || lo+uintptr(n) > base+stageBytes {
				t.Errorf("async copy from %#x, %d bytes: outside the pinned buffer", lo, n)
			}
			pending = append(pending, region{lo, lo + uintptr(n)})
			return 0
		},
	}}
	// Each upload's bytes are distinct, and the staged copy must hold them
	// when it is queued; the staging must not overwrite a pending region.
	upload := func(n int, fill byte) {
		t.Helper()
		src := bytes.Repeat([]byte{fill}, n)
		wasAsync := async
		if err := g.htod(0x1000, unsafe.Pointer(&src[0]), uint64(n)); err != nil {
			t.Fatal(err)
		}
		if async == wasAsync {
			return
		}
		r := pending[len(pending)-1]
		if staged := pinned[r.lo-base : r.hi-base]; !bytes.Equal(staged, src) {
			t.Errorf("upload %d of %d bytes: the staged bytes are not the caller's", fill, n)
		}
		for _, p := range pending[:len(pending)-1] {
			if p.lo < r.hi && r.lo < p.hi {
				t.Errorf("upload %d wrote [%#x, %#x) over a pending copy's [%#x, %#x)", fill, r.lo, r.hi, p.lo, p.hi)
			}
		}
	}
	// A step's worth of adapter matrices and masks: staged, no wait.
	for i := range 40 {
		upload(300<<10+i, byte(i))
	}
	if async != 40 || syncs != 0 || plain != 0 {
		t.Fatalf("40 small uploads: %d async, %d synchronisations, %d plain copies; want 40, 0, 0", async, syncs, plain)
	}
	// More than the buffer holds before a download: one synchronisation,
	// then the buffer again from its start.
	for i := range 100 {
		upload(1<<20, byte(100+i))
	}
	if syncs == 0 {
		t.Errorf("%d MiB staged with no wait for the stream", 40*300/1024+100)
	}
	// A download waits for the stream: the next upload may reuse the start.
	var out [4]byte
	if err := g.dtoh(unsafe.Pointer(&out[0]), 0x2000, 4); err != nil {
		t.Fatal(err)
	}
	upload(64, 250)
	if r := pending[len(pending)-1]; r.lo != base {
		t.Errorf("after a download the next upload is staged at offset %d, want 0", r.lo-base)
	}
	// Weights (more than a quarter of the buffer) go synchronously.
	upload(stageBytes/4+1, 251)
	if plain != 1 {
		t.Errorf("a %d-byte upload made %d plain copies, want 1", stageBytes/4+1, plain)
	}
	// Without pinned memory every upload is a plain copy.
	g.stage.mem = nil
	upload(64, 252)
	if plain != 2 {
		t.Errorf("without pinned memory: %d plain copies, want 2", plain)
	}
}
