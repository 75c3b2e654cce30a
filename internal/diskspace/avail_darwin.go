package diskspace

import "syscall"

// avail is the bytes st lets an unprivileged process write: macOS counts
// blocks in f_bsize units (its fundamental block size; f_iosize is the
// preferred I/O size).
func avail(st *syscall.Statfs_t) (uint64, bool) {
	if st.Bsize <= 0 {
		return 0, false
	}
	return bytesOf(uint64(st.Bavail), uint64(st.Bsize)), true
}
