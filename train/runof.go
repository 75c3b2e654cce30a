package train

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/rundir"
)

// RunOf returns the configuration of the meazo-train run that saved dir, and
// the run's directory, when dir is a run's best/, last/ or checkpoint/ (an
// adapter, or a full-parameter run's model; the checkpoint's is that of its
// step, to score a run still training) whose run directory holds
// config.yaml; nil otherwise. meazo-eval task reads it to score a saved result as its run did:
// the instruction, labels, chat format and date string decide the text the
// model sees, and a run's adapter scored without them is scored on prompts it
// never trained on, with no error to say so.
func RunOf(dir string) (*Config, string, error) {
	if dir == "" {
		return nil, "", nil
	}
	dir = filepath.Clean(dir)
	if base := filepath.Base(dir); base != rundir.BestDir && base != rundir.LastDir && base != rundir.CheckpointDir {
		return nil, "", nil
	}
	run := filepath.Dir(dir)
	path := filepath.Join(run, rundir.ConfigFile)
	b, err := inputfile.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	c := Defaults()
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, "", fmt.Errorf("%s (the configuration of the run that saved %s): %w", path, dir, err)
	}
	return &c, run, nil
}
