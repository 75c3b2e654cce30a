//go:build linux || darwin

package diskspace

import "syscall"

func free(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Bsize <= 0 {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
