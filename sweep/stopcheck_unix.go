//go:build unix

package sweep

import (
	"os"
	"syscall"
)

// stopGroup asks a process started with stopsig.ChildAttr (a process group
// of its own) to stop, and everything it started too: SIGTERM to the group.
// A trainer that is a wrapper script would otherwise die alone, leaving its
// meazo-train running, and holding the pipes meazo-sweep reads.
func stopGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
