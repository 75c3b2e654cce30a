//go:build !amd64

package cpu

import "unsafe"

// prefetchL2 does nothing here: the hardware's own prefetchers serve the
// streams (see prefetch_amd64.go).
func prefetchL2(p unsafe.Pointer, n int) {}
