//go:build linux || darwin

package diskspace

import "syscall"

func free(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return avail(&st)
}
