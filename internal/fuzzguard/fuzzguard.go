// Package fuzzguard helps fuzz targets catch what a panic does not show: an
// input that hangs a parser or makes it allocate gigabytes (a length field
// read from the input and trusted).
package fuzzguard

import (
	"fmt"
	"runtime/metrics"
	"time"
)

// Limits of Run: far above what any valid test input needs.
const (
	MaxBytes = 2 << 30          // bytes allocated in all while fn runs
	MaxTime  = 10 * time.Second // wall time of fn
)

// Run calls fn and panics (which fails the fuzz input) when fn runs longer
// than MaxTime or allocates more than MaxBytes in all while it runs. fn
// runs on the caller's goroutine: a panic in it reaches the fuzzer as it
// is, with its stack, and a t.Fatal in it stops the test. The limits are
// watched from another goroutine, whose panic while fn still runs ends
// the process (a hung fn cannot be stopped any other way).
func Run(fn func()) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}} // cumulative
	metrics.Read(s)
	base := s[0].Value.Uint64()
	allocated := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64() - base
	}
	done := make(chan struct{})
	defer close(done) // also when fn panics or calls t.Fatal
	go watch(done, allocated)
	fn()
	if n := allocated(); n > MaxBytes {
		panic(fmt.Sprintf("fuzzguard: the input made it allocate %d bytes", n))
	}
}

// watch panics when MaxTime passes or more than MaxBytes are allocated
// before done is closed.
func watch(done <-chan struct{}, allocated func() uint64) {
	deadline := time.After(MaxTime)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-deadline:
			panic(fmt.Sprintf("fuzzguard: the input made it run over %v", MaxTime))
		case <-tick.C:
			if n := allocated(); n > MaxBytes {
				panic(fmt.Sprintf("fuzzguard: the input made it allocate over %d bytes", n))
			}
		}
	}
}
