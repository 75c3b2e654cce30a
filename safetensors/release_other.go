//go:build !linux

package safetensors

// releasePages does nothing outside Linux (the pages stay until Close).
func releasePages(b []byte, lo, hi int64) {}
