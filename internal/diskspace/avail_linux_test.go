package diskspace

import (
	"math"
	"syscall"
	"testing"
)

// TestAvailUnits: the free blocks are counted in f_frsize units, not in
// f_bsize ones where a file system reports a larger preferred I/O size
// (a FUSE file system may), and in f_bsize ones where f_frsize is 0.
func TestAvailUnits(t *testing.T) {
	for _, c := range []struct {
		st   syscall.Statfs_t
		want uint64
		ok   bool
	}{
		{syscall.Statfs_t{Bavail: 10, Bsize: 4096, Frsize: 4096}, 40960, true},
		{syscall.Statfs_t{Bavail: 10, Bsize: 1 << 20, Frsize: 4096}, 40960, true}, // Bavail × Bsize would say 10 MiB
		{syscall.Statfs_t{Bavail: 10, Bsize: 4096}, 40960, true},
		{syscall.Statfs_t{Bavail: 10}, 0, false},
		{syscall.Statfs_t{Bavail: 1 << 62, Bsize: 4096, Frsize: 4096}, math.MaxUint64, true}, // not wrapped around to 0
	} {
		if got, ok := avail(&c.st); got != c.want || ok != c.ok {
			t.Errorf("Bavail %d, Bsize %d, Frsize %d: %d, %v; want %d, %v", c.st.Bavail, c.st.Bsize, c.st.Frsize, got, ok, c.want, c.ok)
		}
	}
}
