//go:build unix

package safetensors

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the whole of f read-only. size is f's size and is > 0.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size != int64(int(size)) {
		return nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile releases a mapping made by mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }
