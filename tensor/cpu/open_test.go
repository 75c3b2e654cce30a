package cpu

import (
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor"
)

// TestOpenOptions checks that the CPU backend opened by name takes its
// settings from tensor.Options: the threads and stacking, and the process's
// GEMM path and tile, refusing a path this build or CPU does not have.
func TestOpenOptions(t *testing.T) {
	defer SetGEMMPath("")
	paths := GEMMPaths()
	last := paths[len(paths)-1] // "portable", always there
	b, err := open(tensor.Options{Threads: 3, StackProjections: true, GEMMPath: last, GEMMTile: mr})
	if err != nil {
		t.Fatal(err)
	}
	c := b.(*Backend)
	if c.Threads() != 3 || !c.StackProjections() || GEMMPath() != last || !strings.HasPrefix(GEMMTile(), "4×32") {
		t.Errorf("threads %d, stacked %v, path %s, tile %s; want 3, true, %s, 4×32", c.Threads(), c.StackProjections(), GEMMPath(), GEMMTile(), last)
	}
	if _, err := open(tensor.Options{}); err != nil || GEMMPath() != last {
		t.Errorf("open without a path: %v, and the path is %s; want it kept at %s", err, GEMMPath(), last)
	}
	if _, err := open(tensor.Options{GEMMPath: "sse"}); err == nil || !strings.Contains(err.Error(), `"sse"`) {
		t.Errorf("open with GEMM path sse: %v", err)
	}
	if _, err := open(tensor.Options{GEMMTile: 5}); err == nil {
		t.Errorf("open with a tile of 5 rows succeeded")
	}
}
