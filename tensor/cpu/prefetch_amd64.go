package cpu

import "unsafe"

// prefetchL2 asks the memory system for the n bytes at p (one request per
// cache line, into L2) and returns at once: a stream the next loop reads
// from memory arrives while the caller computes something else (full-
// parameter ZO's weight slices, fetched while their noise is drawn).
//
//go:noescape
func prefetchL2(p unsafe.Pointer, n int)
