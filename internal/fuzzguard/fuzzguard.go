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
// than MaxTime or allocates more than MaxBytes in all while it runs. A panic
// in fn itself reaches the fuzzer as it is.
func Run(fn func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		fn()
	}()
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}} // cumulative
	metrics.Read(s)
	base := s[0].Value.Uint64()
	allocated := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() - base }
	deadline := time.After(MaxTime)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r != nil {
				panic(r)
			}
			if n := allocated(); n > MaxBytes {
				panic(fmt.Sprintf("fuzzguard: the input made it allocate %d bytes", n))
			}
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
