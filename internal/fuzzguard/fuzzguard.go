// Package fuzzguard helps fuzz targets catch what a panic does not show: an
// input that hangs a parser or makes it allocate gigabytes (a length field
// read from the input and trusted).
package fuzzguard

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Limits of Run: far above what any valid test input needs.
const (
	MaxBytes = 2 << 30          // bytes allocated in all while fn runs
	MaxTime  = 10 * time.Second // wall time of fn
)

// Run calls fn and panics (which fails the fuzz input) when fn runs longer
// than MaxTime or allocates more than MaxBytes in all while it runs. fn runs
// on a goroutine of its own, watched from the caller's: a panic in fn is
// panicked again on the caller's goroutine with the stack where it
// happened in its message, and a t.Fatal in fn (which ends fn's goroutine)
// ends the caller's too, so that the test stops there as it would without
// Run. (Run on the caller's goroutine, fn stalled go test -fuzz's workers.)
func Run(fn func()) {
	done := make(chan outcome, 1)
	go func() {
		returned := false
		defer func() {
			switch r := recover(); {
			case r != nil:
				done <- outcome{panicked: fmt.Sprintf("%v\n\n[fuzzguard: the panic happened here]\n%s", r, debug.Stack())}
			case !returned: // runtime.Goexit: t.Fatal or t.SkipNow in fn
				done <- outcome{exited: true}
			default:
				done <- outcome{}
			}
		}()
		fn()
		returned = true
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
		case o := <-done:
			switch {
			case o.panicked != "":
				panic(o.panicked)
			case o.exited:
				runtime.Goexit()
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

// outcome is how fn ended: it returned, panicked (the panic's value and
// stack), or its goroutine exited (runtime.Goexit).
type outcome struct {
	panicked string
	exited   bool
}
