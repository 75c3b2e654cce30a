package diskspace

import "syscall"

// avail is the bytes st lets an unprivileged process write. Linux's statfs
// counts blocks in f_frsize units, as statvfs(3) and df read them; f_bsize
// is the preferred I/O size, which some file systems (FUSE ones may report
// both) set above f_frsize. An f_frsize of 0 (kernels before 2.6) means
// f_bsize, as glibc's statvfs takes it.
func avail(st *syscall.Statfs_t) (uint64, bool) {
	unit := int64(st.Frsize)
	if unit <= 0 {
		unit = int64(st.Bsize)
	}
	if unit <= 0 {
		return 0, false
	}
	return bytesOf(uint64(st.Bavail), uint64(unit)), true
}
