// Package sysmem reads how much memory the machine has, so that a request
// that cannot fit (a batch size or a generation length typed wrong) is
// refused with the figures instead of killing the process: Go cannot
// recover from an allocation larger than the machine, it exits with
// "fatal error: runtime: out of memory".
//
// Only Linux's /proc/meminfo is read; elsewhere the functions report that
// they do not know, and callers check nothing.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Total returns the machine's memory in bytes (MemTotal), or 0 where it
// cannot be read. It is read once: generation checks it every batch.
func Total() uint64 { return total() }

var total = sync.OnceValue(func() uint64 {
	b, _ := field("MemTotal:")
	return b
})

// Available returns the memory the kernel estimates a new allocation can
// take without swapping (MemAvailable), and whether it could be read.
func Available() (uint64, bool) { return field("MemAvailable:") }

// field returns the /proc/meminfo line named name (with its colon), in
// bytes.
func field(name string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parse(bufio.NewScanner(f), name)
}

// parse finds name in meminfo's lines ("MemTotal:   24576000 kB").
func parse(sc *bufio.Scanner, name string) (uint64, bool) {
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != name {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil || kb > 1<<53 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
