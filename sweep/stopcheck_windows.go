package sweep

import "os"

// stopGroup stops a process: Windows has no process groups to signal, and a
// parent can only kill (a console's Ctrl-C reaches the process itself).
func stopGroup(p *os.Process) error { return p.Kill() }
