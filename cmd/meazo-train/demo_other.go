//go:build !linux

package main

import "syscall"

// demoRunAttr puts a demo run in its own process group.
func demoRunAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
