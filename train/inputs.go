package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/safetensors"
)

// The files a run's numbers depend on are fingerprinted when it starts and
// recorded in its checkpoints (state.json "inputs"): the model's weights,
// config.json and tokenizer files (a ViT's preprocessor_config.json), and the
// training and validation data. A resume whose files differ (a model
// re-downloaded at another revision into the same directory, a data file
// regenerated) is refused: its steps would go on with another model or data
// than the steps before them, and the results would mix the two. The test data are not fingerprinted: task.test
// may change on resume.

// inputFile is one fingerprinted file.
type inputFile struct {
	Input string `json:"input"` // the config key that names it: model.path, task.train, task.validation
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	// The modification time: a resume hashes again only a file whose size
	// or time changed (a copy to a node's local disk; a re-download).
	ModTime int64 `json:"mtime_ns"`
	// SHA-256 of the content; of a JSON file, of its values re-encoded, so
	// that spacing and key order do not count.
	SHA256 string `json:"sha256"`
}

// inputPaths lists each input's files, in order.
func inputPaths(cfg *Config) ([][2]string, error) {
	weights, err := safetensors.CheckpointFiles(cfg.Model.Path)
	if err != nil {
		return nil, fmt.Errorf("model.path: %w", err)
	}
	var out [][2]string
	for _, w := range weights {
		out = append(out, [2]string{"model.path", w})
	}
	for _, name := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "vocab.json", "merges.txt", "special_tokens_map.json", "preprocessor_config.json"} {
		if p := filepath.Join(cfg.Model.Path, name); exists(p) {
			out = append(out, [2]string{"model.path", p})
		}
	}
	out = append(out, [2]string{"task.train", cfg.Task.Train})
	if cfg.Task.Validation != "" {
		out = append(out, [2]string{"task.validation", cfg.Task.Validation})
	}
	return out, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// fingerprintFile stats and hashes one file.
func fingerprintFile(input, path string) (inputFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return inputFile{}, fmt.Errorf("%s: %w", input, err)
	}
	f := inputFile{Input: input, Path: path, Size: st.Size(), ModTime: st.ModTime().UnixNano()}
	h := sha256.New()
	if strings.HasSuffix(path, ".json") {
		b, err := inputfile.ReadFile(path)
		if err != nil {
			return inputFile{}, fmt.Errorf("%s: %w", input, err)
		}
		var v any
		if json.Unmarshal(b, &v) == nil {
			if canon, err := json.Marshal(v); err == nil { // map keys sorted
				b = canon
			}
		}
		h.Write(b)
	} else {
		r, err := inputfile.Open(path)
		if err != nil {
			return inputFile{}, fmt.Errorf("%s: %w", input, err)
		}
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return inputFile{}, fmt.Errorf("%s: read %s: %w", input, path, err)
		}
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// fingerprintInputs hashes every input file of a new run in the background
// (a model is gigabytes: seconds, while the model loads); the function it
// returns waits for the result.
func fingerprintInputs(cfg *Config) func() ([]inputFile, error) {
	type result struct {
		files []inputFile
		err   error
	}
	done := make(chan result, 1)
	go func() {
		paths, err := inputPaths(cfg)
		var files []inputFile
		for _, p := range paths {
			if err != nil {
				break
			}
			var f inputFile
			f, err = fingerprintFile(p[0], p[1])
			files = append(files, f)
		}
		done <- result{files, err}
	}()
	var r *result
	return func() ([]inputFile, error) {
		if r == nil {
			got := <-done
			r = &got
		}
		return r.files, r.err
	}
}

// errInputsChanged says a resumed run's model or data are not the ones its
// checkpoint was computed from.
var errInputsChanged = errors.New("inputs changed")

// relocatableKeys name where the model and the data are, not what they are:
// a resume may point them elsewhere (the files moved, or were copied to a
// node's disk, or a relative path is resumed from another directory) with
// --set, and checkInputs then requires the files there to be the recorded
// ones, file for file (a model's by their names in its directory).
var relocatableKeys = []string{"model.path", "task.train", "task.validation"}

// checkInputs checks the input files of a resumed run against those its
// checkpoint recorded, hashing again only those whose size or time changed,
// and returns the records to keep. moved maps an input that --set pointed
// elsewhere (a relocatable key) to the path the checkpoint's config gave
// it: its files are matched to the records by their place in it and always
// hashed again. A checkpoint from before the records were kept has none:
// its inputs are recorded from now on, unchecked.
func checkInputs(was []inputFile, cfg *Config, moved map[string]string) ([]inputFile, error) {
	paths, err := inputPaths(cfg)
	if err != nil {
		return nil, err
	}
	if len(was) == 0 {
		return fingerprintAll(paths)
	}
	what := func(input string) string {
		return map[string]string{"model.path": "the model in " + cfg.Model.Path, "task.train": "the training data",
			"task.validation": "the validation data"}[input]
	}
	matches := func(f inputFile, input, path string) bool {
		if f.Input != input {
			return false
		}
		old, ok := moved[input]
		if !ok {
			return f.Path == path
		}
		return inputPlace(input, old, f.Path) == inputPlace(input, cfg.Model.Path, path)
	}
	var now []inputFile
	used := make([]bool, len(was))
	for _, p := range paths {
		i := slices.IndexFunc(was, func(f inputFile) bool { return matches(f, p[0], p[1]) })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s has %s, which the run's steps so far were not computed with: resumed, it would mix two; "+
				"restore the files, or start a new run", errInputsChanged, what(p[0]), p[1])
		}
		used[i] = true
		_, relocated := moved[p[0]]
		f, err := recheckInput(was[i], p[0], p[1], relocated, what(p[0]))
		if err != nil {
			return nil, err
		}
		now = append(now, f)
	}
	for i, f := range was {
		if !used[i] {
			missing := f.Path
			if old, ok := moved[f.Input]; ok && f.Input == "model.path" {
				missing = filepath.Join(cfg.Model.Path, inputPlace(f.Input, old, f.Path)) + " (recorded as " + f.Path + ")"
			}
			return nil, fmt.Errorf("%w: %s no longer has %s, which the run's steps so far were computed with: restore it, or start a new run",
				errInputsChanged, what(f.Input), missing)
		}
	}
	return now, nil
}

// fingerprintAll records the input files paths lists ([input, path] each).
func fingerprintAll(paths [][2]string) ([]inputFile, error) {
	var now []inputFile
	for _, p := range paths {
		f, err := fingerprintFile(p[0], p[1])
		if err != nil {
			return nil, err
		}
		now = append(now, f)
	}
	return now, nil
}

// inputPlace is where a file lies in its input: a model's file by its name
// in the model's directory (base), a data file is the input itself ("").
func inputPlace(input, base, path string) string {
	if input != "model.path" {
		return ""
	}
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return path
	}
	return rel
}

// recheckInput checks the file at path (of input, which what names for
// messages) against its record f: hashed again when it was relocated or
// its size or time changed, it must have the recorded content. It returns
// the record to keep (f, or the same content at its new place or time).
func recheckInput(f inputFile, input, path string, relocated bool, what string) (inputFile, error) {
	if st, err := os.Stat(path); !relocated && err == nil && st.Size() == f.Size && st.ModTime().UnixNano() == f.ModTime {
		return f, nil
	}
	g, err := fingerprintFile(input, path)
	if err != nil {
		return inputFile{}, err
	}
	if g.SHA256 != f.SHA256 {
		was := ""
		if g.Path != f.Path {
			was = ", recorded as " + f.Path
		}
		return inputFile{}, fmt.Errorf("%w: %s differs from the file the run's steps so far were computed with (%s%s, SHA-256 %s…, now %s…): "+
			"resumed, it would mix two; restore it, or start a new run", errInputsChanged, g.Path, what, was, f.SHA256[:12], g.SHA256[:12])
	}
	return g, nil // the same content, moved or touched
}
