package sysmem

import (
	"bufio"
	"runtime"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const meminfo = "MemTotal:       24576000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\nBad: x kB\n"
	for _, c := range []struct {
		name string
		want uint64
		ok   bool
	}{
		{"MemTotal:", 24576000 << 10, true},
		{"MemAvailable:", 20000000 << 10, true},
		{"MemFree", 0, false}, // the colon is part of the name
		{"Bad:", 0, false},
		{"Missing:", 0, false},
	} {
		got, ok := parse(bufio.NewScanner(strings.NewReader(meminfo)), c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/meminfo is Linux's")
	}
	total := Total()
	avail, ok := Available()
	if total < 1<<20 || !ok || avail == 0 || avail > total {
		t.Errorf("total %d, available %d (%v)", total, avail, ok)
	}
}
