package train

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The inputs a run's numbers depend on are fingerprinted when it starts and
// recorded in its checkpoints (state.json "inputs"): the model directory's
// weights, config and tokenizer, and the training and validation data. A
// resume whose inputs differ (a model re-downloaded at another revision into
// the same directory, a data file regenerated) is refused: its steps would
// go on with another model or data than the steps before them, and the
// results would mix the two. The test data are not fingerprinted: task.test
// may change on resume.

// inputKeys are the fingerprinted inputs, in the order they are checked.
var inputKeys = []string{"model.path", "task.train", "task.validation"}

// inputFiles lists the files of each input.
func inputFiles(cfg *Config) (map[string][]string, error) {
	model, err := modelFiles(cfg.Model.Path)
	if err != nil {
		return nil, err
	}
	files := map[string][]string{"model.path": model, "task.train": {cfg.Task.Train}}
	if cfg.Task.Validation != "" {
		files["task.validation"] = []string{cfg.Task.Validation}
	}
	return files, nil
}

// modelFiles are what the model and its tokenizer are read from: the
// weights (every *.safetensors at the top of the directory, and a sharded
// model's index), config.json and the tokenizer's files. Other files of an
// HF download (README, original/, generation_config.json) are not.
func modelFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model.path: %w", err)
	}
	read := []string{"config.json", "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}
	var out []string
	for _, e := range ents {
		if n := e.Name(); slices.Contains(read, n) || strings.HasSuffix(n, ".safetensors") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil // os.ReadDir sorts by name
}

// fingerprint is the SHA-256 over the files' base names and contents, in
// order: "sha256:<hex>".
func fingerprint(paths []string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", filepath.Base(p))
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
		}
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// fingerprintInputs hashes every input in the background (a model is
// gigabytes: seconds, while the model loads): the function it returns
// waits for the result.
func fingerprintInputs(cfg *Config) func() (map[string]string, error) {
	type result struct {
		prints map[string]string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		files, err := inputFiles(cfg)
		if err != nil {
			done <- result{nil, err}
			return
		}
		prints := map[string]string{}
		for _, k := range inputKeys {
			if len(files[k]) == 0 {
				continue
			}
			if prints[k], err = fingerprint(files[k]); err != nil {
				done <- result{nil, fmt.Errorf("%s: %w", k, err)}
				return
			}
		}
		done <- result{prints, nil}
	}()
	var r *result
	return func() (map[string]string, error) {
		if r == nil {
			got := <-done
			r = &got
		}
		return r.prints, r.err
	}
}

// errInputsChanged says a resumed run's model or data are not the ones its
// checkpoint was computed from.
var errInputsChanged = errors.New("inputs changed")

// checkInputs compares the inputs' fingerprints now with those the
// checkpoint recorded (none in a checkpoint from before they were: not
// checked).
func checkInputs(was, now map[string]string, cfg *Config) error {
	for _, k := range inputKeys {
		if was[k] == "" || was[k] == now[k] {
			continue
		}
		what := map[string]string{"model.path": "the model's weights, config or tokenizer in " + cfg.Model.Path,
			"task.train": "the training data " + cfg.Task.Train, "task.validation": "the validation data " + cfg.Task.Validation}[k]
		return fmt.Errorf("%w: %s differ from those the run's steps so far were computed with (%s %s, now %s): "+
			"resumed, it would mix two; restore them, or start a new run", errInputsChanged, what, k, short(was[k]), short(now[k]))
	}
	return nil
}

// short is a fingerprint's first 12 hex digits, for messages.
func short(p string) string {
	if h, ok := strings.CutPrefix(p, "sha256:"); ok && len(h) > 12 {
		return "sha256:" + h[:12] + "…"
	}
	return p
}
