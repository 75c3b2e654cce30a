// Package rundir owns the run-directory format (docs/RUNDIR.md): the typed
// summary.json, the lines of metrics.jsonl, timing.jsonl and changes.jsonl,
// and the run status. meazo-train writes through these types; meazo-sweep and
// meazo-plot read through them, so that writer and readers agree on every
// field and its type.
package rundir

// File names inside a run directory.
const (
	SummaryFile = "summary.json"
	MetricsFile = "metrics.jsonl"
	TimingFile  = "timing.jsonl"
	ChangesFile = "changes.jsonl" // one JSON ConfigChange per line
)

// Status values of summary.json's "status" (empty in older runs).
const (
	StatusDone        = "done"        // all steps done
	StatusDiverged    = "diverged"    // stopped by a NaN/Inf loss or gradient: a result
	StatusInterrupted = "interrupted" // stopped by a signal after a checkpoint: resumes
)

// Summary is summary.json. The field order is the file's key order.
type Summary struct {
	Model           string                        `json:"model"`
	Task            string                        `json:"task"`
	Adapter         string                        `json:"adapter"`
	Grouped         bool                          `json:"grouped"`
	Optimizer       string                        `json:"optimizer"`
	LR              float64                       `json:"lr"`
	Seed            uint64                        `json:"seed"`
	Steps           int                           `json:"steps"`
	StepsDone       int                           `json:"steps_done"`
	Diverged        bool                          `json:"diverged"`
	DivergedAt      *int                          `json:"diverged_at"`
	Message         string                        `json:"message"`
	BestValLoss     *float64                      `json:"best_val_loss"` // null before the first validation
	BestStep        int                           `json:"best_step"`
	LastValLoss     *float64                      `json:"last_val_loss"`
	Test            map[string]map[string]float64 `json:"test"`
	TrainableParams int                           `json:"trainable_params"`
	StateBytes      int64                         `json:"optimizer_state_bytes"`
	PeakRSSBytes    int64                         `json:"peak_rss_bytes"`
	SecondsPerStep  float64                       `json:"seconds_per_step"`
	Changes         []ConfigChange                `json:"changes,omitempty"` // settings changed on resume (changes.jsonl)
	Backend         string                        `json:"backend"`           // the backend that ran the last session of the run, and on what
	// Status is StatusDone, StatusDiverged or StatusInterrupted; Signal names
	// what interrupted the run.
	Status string `json:"status"`
	Signal string `json:"signal,omitempty"`
}

// Finished says whether the run ended as planned: all steps done, or stopped
// by divergence (which is a result, not a failure).
func (s *Summary) Finished() bool {
	return s.Diverged || (s.Status != StatusInterrupted && s.Steps > 0 && s.StepsDone >= s.Steps)
}

// Interrupted says whether a signal stopped the run (it resumes).
func (s *Summary) Interrupted() bool { return s.Status == StatusInterrupted }

// ConfigChange is one setting changed with --resume DIR --set key=value: a
// line of changes.jsonl, and an entry of summary.json's "changes".
type ConfigChange struct {
	Step int    `json:"step"` // the change applies from step Step+1 on
	Key  string `json:"key"`
	Old  any    `json:"old"`
	New  any    `json:"new"`
	Time string `json:"time"`
}

// Metric line kinds ("kind" in metrics.jsonl).
const (
	KindTrain = "train"
	KindVal   = "val"
)

// TrainLine is a training step's line of metrics.jsonl. The field order is
// the line's key order (alphabetical, as the lines have always been written).
type TrainLine struct {
	D          [][]float64 `json:"d"`      // every unit's projected gradients
	Groups     []int       `json:"groups"` // every unit's group
	Kind       string      `json:"kind"`   // KindTrain
	Loss       float64     `json:"loss"`
	Losses     []float64   `json:"losses"`
	LR         float64     `json:"lr"`
	Step       int         `json:"step"`
	UpdateNorm float64     `json:"update_norm"`
	V          []float64   `json:"v"` // null for optimizers other than MEAZO
}

// ValLine is a validation's line of metrics.jsonl.
type ValLine struct {
	Kind    string  `json:"kind"` // KindVal
	Step    int     `json:"step"`
	ValLoss float64 `json:"val_loss"`
}

// TimingLine is a step's line of timing.jsonl.
type TimingLine struct {
	LayerEvals int     `json:"layer_evals"`
	Seconds    float64 `json:"seconds"`
	Step       int     `json:"step"`
}
