//go:build unix

package train

import (
	"os"
	"syscall"
)

// linkCount is the number of hard links to the file fi describes (1 where
// the system does not say).
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
