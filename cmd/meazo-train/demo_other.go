//go:build !linux

package main

import (
	"syscall"

	"github.com/meazo-go/meazo/internal/stopsig"
)

// demoRunAttr puts a demo run in its own process group (on Windows, in
// the console's: stopsig.ChildAttr says why).
func demoRunAttr() *syscall.SysProcAttr { return stopsig.ChildAttr() }
