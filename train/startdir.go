package train

import (
	"os"
	"path/filepath"
	"strings"
)

// Where a run was started from: config.yaml keeps the run's paths as they
// were given, relative ones relative to the directory meazo-train ran in,
// which the run directory's path less its output.dir tells.

// StartDir is the directory the run in runDir (whose config.yaml is cfg)
// was most likely started from: its absolute path less its output.dir,
// where that is relative and ends it; "" when that cannot be told. The
// run's relative paths (config.yaml keeps them as given) are relative to
// it.
func StartDir(runDir string, cfg *Config) string {
	out := filepath.Clean(cfg.Output.Dir)
	abs, err := filepath.Abs(runDir)
	if err != nil || filepath.IsAbs(out) || out == "." || !strings.HasSuffix(abs, string(filepath.Separator)+out) {
		return ""
	}
	return strings.TrimSuffix(abs, string(filepath.Separator)+out)
}

// startedFrom is the directory a run was started from, when a resume from
// another one misses the run's relative paths (config.yaml records them as
// given): the run directory's absolute path less its output.dir, where that
// is relative and ends it, and every relative path of the run is there
// from it. "" when that cannot be told, or is the working directory (under
// any name).
func startedFrom(runDir string, cfg *Config) string {
	from := StartDir(runDir, cfg)
	if from == "" {
		return ""
	}
	if wd, err := os.Getwd(); err != nil || wd == from || sameDir(wd, from) {
		return "" // (the same directory under another name, through a link: the resume is there already)
	}
	relative := 0
	for _, p := range []string{cfg.Model.Path, cfg.Task.Train, cfg.Task.Validation, testFile(cfg), cfg.Adapter.Init} {
		if p == "" || filepath.IsAbs(p) {
			continue
		}
		if _, err := os.Stat(filepath.Join(from, p)); err != nil {
			return ""
		}
		relative++
	}
	if relative == 0 {
		return ""
	}
	return from
}

// sameDir says whether a and b are the same directory (os.SameFile: a link
// to it, another mount of it); false when either cannot be read.
func sameDir(a, b string) bool {
	x, err := os.Stat(a)
	if err != nil {
		return false
	}
	y, err := os.Stat(b)
	return err == nil && os.SameFile(x, y)
}
