package train

import "github.com/meazo-go/meazo/internal/outpath"

// checkOutputDir refuses a run directory that is, or lies inside, one of
// the run's inputs (the model, the data files, the adapter it starts
// from), a model directory, or another run's directory: the run would
// write over what it reads, mix its files with a model's, or be replaced
// when the other run resumes. dir may hold this run already.
func checkOutputDir(dir string, cfg *Config) error {
	return outpath.CheckRun("output.dir", dir, cfg.Model.Path, cfg.Task.Train, cfg.Task.Validation, cfg.Task.Test, cfg.Adapter.Init)
}
