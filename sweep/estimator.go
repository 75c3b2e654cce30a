package sweep

import (
	"fmt"
	"path/filepath"

	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/train"
)

// Estimator is how a run estimated its gradients: Q directions per step, of
// perturbation scale ε. Eps lists every ε the run used, in order: a resume
// may change optimizer.eps (summary.json's changes say from which step), q
// never.
type Estimator struct {
	Q   int
	Eps []float64
}

// ReadEstimator reads a run's q and ε as the run used them: its config.yaml
// (rundir.ConfigFile, the resolved configuration meazo-train writes at the
// start and rewrites on a resume that changes a setting), read by
// train.Load as a resume reads it, and the ε values changed on resume
// (s, the run's summary.json).
func ReadEstimator(dir string, s Summary) (Estimator, error) {
	cfg, err := train.Load(filepath.Join(dir, rundir.ConfigFile), nil)
	if err != nil {
		return Estimator{}, err
	}
	e := Estimator{Q: cfg.Optimizer.Q}
	for _, c := range s.Changes {
		if c.Key != "optimizer.eps" {
			continue
		}
		old, ok := c.Old.(float64)
		if !ok {
			return Estimator{}, fmt.Errorf("%s: summary.json: the change of optimizer.eps at step %d has the old value %v, not a number", dir, c.Step, c.Old)
		}
		e.Eps = append(e.Eps, old)
	}
	e.Eps = append(e.Eps, cfg.Optimizer.Eps)
	return e, nil
}
