// Package outpath checks where a command is about to write, before it
// writes: an output that is one of the command's own inputs, or lies inside
// one, would replace what it reads; one inside a model directory would
// replace or mix with the model's files; one inside a run directory would
// be replaced or deleted when that run resumes, and could replace its
// files.
package outpath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Check returns an error naming flag (how the user gave out: "--out",
// "output.dir") when out is, or is inside, one of inputs, a model directory
// or a run directory. Paths are compared after links are resolved, so
// that a link to an input is the input.
func Check(flag, out string, inputs ...string) error {
	return check(flag, out, false, inputs)
}

// CheckFile is Check for an output file, which is written by a rename
// over its path: a directory there is refused, and so is a device, a pipe
// or a socket, and a link (/dev/stdout is one, to whatever the process's
// stdout is, a file too): the rename would not write into any of them but
// replace it with a regular file, as root even /dev/stdout itself.
func CheckFile(flag, out string, inputs ...string) error {
	if st, err := os.Lstat(out); err == nil {
		switch {
		case st.IsDir():
			return fmt.Errorf("%s %s is a directory; name a file", flag, out)
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Stat(out); err == nil && target.IsDir() {
				return fmt.Errorf("%s %s is a directory; name a file", flag, out)
			}
			return fmt.Errorf("%s %s is a symbolic link, which the atomic write would replace, not write through; name the file itself", flag, out)
		case st.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket) != 0:
			return fmt.Errorf("%s %s is not a regular file (a device, pipe or socket, which the atomic write would replace, not write into); name a file", flag, out)
		}
		// Anything else (Windows' ModeIrregular: a compressed or placeholder
		// file) is data the rename may replace, as a regular file.
	}
	return Check(flag, out, inputs...)
}

// CheckRun is Check for the directory of a run, which may already hold
// that run (it is resumed, or its start is taken over) but must not lie
// inside another.
func CheckRun(flag, out string, inputs ...string) error {
	return check(flag, out, true, inputs)
}

func check(flag, out string, ownRun bool, inputs []string) error {
	o := resolve(out)
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		if i := resolve(in); within(o, i) {
			what := "is the input"
			if o != i {
				what = "is inside the input"
			}
			return fmt.Errorf("%s %s %s %s: writing there would replace what is read; choose another place", flag, out, what, in)
		}
	}
	for dir := o; ; dir = filepath.Dir(dir) {
		kind := kindOf(dir)
		if ownRun && dir == o && kind == runDir {
			kind = ""
		}
		if kind != "" {
			if dir == o {
				return fmt.Errorf("%s %s is a %s already: writing there could replace its files, or they yours; choose another place", flag, out, kind)
			}
			return fmt.Errorf("%s %s is inside the %s %s: writing there could replace its files, or they yours; choose another place", flag, out, kind, dir)
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

const runDir, modelDir = "run directory", "model directory"

// kindOf names what dir is, if it is a model or a run directory: a run's
// run.lock (what meazo-train writes first), or a finished run's
// summary.json beside its config.yaml; a model's config.json beside
// safetensors weights.
func kindOf(dir string) string {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case has("run.lock") || has("summary.json") && has("config.yaml"):
		return runDir
	case has("config.json"):
		if weights, _ := filepath.Glob(filepath.Join(dir, "*.safetensors")); len(weights) > 0 || has("model.safetensors.index.json") {
			return modelDir
		}
	}
	return ""
}

// within says whether path o is p or inside it.
func within(o, p string) bool {
	rel, err := filepath.Rel(p, o)
	return err == nil && (rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

// resolve makes p absolute with its links resolved, as far as it exists
// (the rest, yet to be made, appended as it is).
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(dir) == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
