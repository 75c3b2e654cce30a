package safetensors

import (
	"os"
	"syscall"
)

// releasePages tells the kernel the mapped bytes [lo, hi) of b (b is the
// whole, page-aligned mapping) will not be needed soon, so their pages leave
// the process's resident set. The file is unchanged; a later read faults
// them in again. Only whole pages inside the range are released.
func releasePages(b []byte, lo, hi int64) {
	page := int64(os.Getpagesize())
	lo = (lo + page - 1) / page * page
	hi = hi / page * page
	if hi > lo {
		syscall.Madvise(b[lo:hi], syscall.MADV_DONTNEED)
	}
}
