package cuda

import (
	"testing"
)

// TestPoisonedBackendReleases: after a kernel fault (a sticky driver error,
// which poisons the backend), the model's cleanup still runs: Free,
// FreeKVCache, FreeWeight and Close must not panic. train.Run defers
// closeBackend (model.Free, then Close) outside its tensor.Recover, so a
// panic there crashes meazo-train with a stack trace instead of the
// device error it means to report.
func TestPoisonedBackendReleases(t *testing.T) {
	bin, err := buildEmu()
	if err != nil {
		t.Skip(err)
	}
	e, _ := startEmu(t, bin, nil)
	b, err := newBackend(e, "kernel emulator", 48<<10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := b.Pack(make([]float32, 16), 4, 4, false)
	x := b.Alloc(8)
	c := b.NewKVCache(1, 1, 8, 4, 1)
	func() { // a kernel fault, as the next synchronising call reports it
		defer func() { recover() }()
		b.fail(&driverError{call: "cuMemcpyDtoH", code: 700, name: "CUDA_ERROR_ILLEGAL_ADDRESS"})
	}()
	for _, f := range []struct {
		name string
		fn   func()
	}{
		{"Free", func() { b.Free(x) }},
		{"FreeKVCache", func() { b.FreeKVCache(c) }},
		{"FreeWeight", func() { b.FreeWeight(w) }},
		{"Close", func() { b.Close() }},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s on a poisoned backend panicked: %v", f.name, r)
				}
			}()
			f.fn()
		}()
	}
	if !b.closed {
		e.close()
	}
}

// TestStickyErrors: the driver errors that leave the context unusable, as
// cuda.h documents them, and neighbours that do not.
func TestStickyErrors(t *testing.T) {
	for _, tc := range []struct {
		code   int32
		sticky bool
	}{
		{2, false},   // CUDA_ERROR_OUT_OF_MEMORY
		{700, true},  // ILLEGAL_ADDRESS
		{701, false}, // LAUNCH_OUT_OF_RESOURCES: the launch is refused, the context stays
		{702, true},  // LAUNCH_TIMEOUT
		{704, false}, // PEER_ACCESS_ALREADY_ENABLED
		{710, true},  // ASSERT
		{712, false}, // HOST_MEMORY_ALREADY_REGISTERED
		{716, true},  // MISALIGNED_ADDRESS
		{719, true},  // LAUNCH_FAILED
		{720, false}, // COOPERATIVE_LAUNCH_TOO_LARGE
	} {
		if got := (&driverError{code: tc.code}).sticky(); got != tc.sticky {
			t.Errorf("code %d: sticky %v, want %v", tc.code, got, tc.sticky)
		}
	}
}
