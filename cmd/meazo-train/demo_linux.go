package main

import "syscall"

// demoRunAttr puts a demo run in its own process group, and has the kernel
// send it SIGTERM if meazo-train --demo dies first.
func demoRunAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
