// Package buildinfo says which build of meazo-go is running, for -version
// and for what a run records of the program that made it (summary.json, a
// checkpoint's state): a run resumed by another build may compute other
// bits where a kernel changed in between, and the record lets it say so.
//
// The version is the one the go command stamps into a binary from version
// control (go build and go install in a checkout; Go 1.24 and later): a tag
// or a pseudo-version with the commit, "+dirty" when the work tree had
// uncommitted changes. go run and go test do not stamp one: "(devel)", then
// the commit where the build settings still name it.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is this binary's version: the module version the go command
// stamped into it, or the commit it was built from, or "(devel)".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return version(bi)
}

// String is the line -version prints: the program's name, its version, the
// Go toolchain (runtime.Version names the experiments a build turned on,
// "go1.26.8-X:simd": simd's kernels round otherwise than the portable
// code) and the platform.
func String(program string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", program, Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func version(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev := setting(bi, "vcs.revision")
	if rev == "" {
		return "(devel)"
	}
	rev = rev[:min(len(rev), 12)]
	if setting(bi, "vcs.modified") == "true" {
		rev += "+dirty"
	}
	return "(devel) " + rev
}

func setting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return strings.TrimSpace(s.Value)
		}
	}
	return ""
}
