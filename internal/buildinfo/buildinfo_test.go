package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: the stamped module version where there is one; otherwise
// the commit from the build settings, marked dirty as they say; otherwise
// "(devel)".
func TestVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "a6350ce1f2b3c4d5e6f708192a3b4c5d6e7f8091"}}
	dirty := append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, c := range []struct {
		name     string
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"stamped", "v0.0.0-20261130182012-a6350ce1f2b3+dirty", dirty, "v0.0.0-20261130182012-a6350ce1f2b3+dirty"},
		{"tagged", "v1.2.0", nil, "v1.2.0"},
		{"go run in a checkout", "(devel)", rev, "(devel) a6350ce1f2b3"},
		{"dirty", "", dirty, "(devel) a6350ce1f2b3+dirty"},
		{"short revision", "(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "(devel) abc"},
		{"nothing", "(devel)", nil, "(devel)"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/meazo-go/meazo", Version: c.main}, Settings: c.settings}
		if got := version(bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestString names the program, a version and the toolchain on one line.
func TestString(t *testing.T) {
	s := String("meazo-train")
	if !strings.HasPrefix(s, "meazo-train "+Version()+" (go") || strings.Contains(s, "\n") || !strings.HasSuffix(s, ")") {
		t.Errorf("String: %q", s)
	}
}
