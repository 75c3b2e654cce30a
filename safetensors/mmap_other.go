//go:build !unix

package safetensors

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the whole of f: this platform gets no memory mapping.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size != int64(int(size)) {
		return nil, fmt.Errorf("file of %d bytes is too large to read", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// unmapFile releases a buffer made by mapFile (nothing to do).
func unmapFile(b []byte) error { return nil }
