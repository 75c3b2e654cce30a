// Package rundir owns the run-directory format (docs/RUNDIR.md): the typed
// summary.json, the lines of metrics.jsonl, timing.jsonl and changes.jsonl,
// and the run status. meazo-train writes through these types; meazo-sweep and
// meazo-plot read through them, so that writer and readers agree on every
// field and its type.
package rundir

import (
	"os"
	"path/filepath"
)

// Names of the files and directories at the root of a run directory
// (docs/RUNDIR.md's table).
const (
	ConfigFile  = "config.yaml"   // the resolved configuration, written at start
	MetricsFile = "metrics.jsonl" // one TrainLine or ValLine per line
	TimingFile  = "timing.jsonl"  // one TimingLine per step, apart so that MetricsFile is bit-identical on resume
	ChangesFile = "changes.jsonl" // one JSON ConfigChange per line: settings changed on resume
	SummaryFile = "summary.json"  // a Summary, written at the end, on divergence and on interruption
	// LockFile is the file whose flock says which process owns the run. The
	// kernel drops the lock when the process ends, however it ends, so a
	// crashed run never leaves a stale lock; the file itself stays and holds
	// the last owner's pid, host and start time, for messages.
	LockFile = "run.lock"
	// CheckpointDir holds the state a run resumes from. It is written as
	// CheckpointTmpDir and swapped in by rename, the previous one moved to
	// CheckpointOldDir meanwhile, so an interruption at any moment leaves
	// one complete checkpoint.
	CheckpointDir    = "checkpoint"
	CheckpointTmpDir = CheckpointDir + ".tmp"
	CheckpointOldDir = CheckpointDir + ".old"
	BestDir          = "best" // what trains, at the lowest validation loss so far: an adapter (PEFT format), or a full-parameter run's model (HF format)
	LastDir          = "last" // the same at the end of the run
	// DemoMarker marks a directory made by meazo-train --demo (its root and
	// each of its run directories, before the run starts there), so that a
	// rerun of the demo removes only what the demo made.
	DemoMarker = ".meazo-demo"
	// PlotMarker marks a directory meazo-plot made (or found empty): it
	// replaces its own figures there, and nowhere else. The demo marks its
	// plots/ with it too.
	PlotMarker = ".meazo-plot"
)

// TestEvaluations are the names of a run's test evaluations, in the order
// it runs them: the adapter (or weights) of the lowest validation loss, the
// last one, and the base model (eval.base).
var TestEvaluations = []string{"best", "last", "base"}

// PredictionsFile is the name of the file of a test evaluation's answers
// (eval one of TestEvaluations): one JSON record per test example, in the
// data's order (the records of meazo-eval task --predictions), written
// whole when that evaluation ends (eval.predictions).
func PredictionsFile(eval string) string { return "predictions_" + eval + ".jsonl" }

// PredictionsFiles are the PredictionsFile of every TestEvaluations.
func PredictionsFiles() []string {
	var names []string
	for _, e := range TestEvaluations {
		names = append(names, PredictionsFile(e))
	}
	return names
}

// Names of the files inside CheckpointDir, besides the adapter's PEFT files,
// a copy of ConfigFile and a BestDir.
const (
	StateFile     = "state.json"    // step, sampler position, the logs' sizes and SHA-256
	OptimizerFile = "optimizer.bin" // the ZO engine's exact state
	// ManifestFile lists every other file of the checkpoint with its size
	// and checksums (CRC-32C a 64 MiB chunk; SHA-256 in version 1); resume
	// verifies all of them before reading any.
	ManifestFile = "manifest.json"
	// PartialPredictionsFile holds the records of the test evaluation a
	// stop cut short (its PredictionsFile so far), for resume to go on with.
	PartialPredictionsFile = "predictions.jsonl"
)

// AdapterFiles are the PEFT files of an adapter directory: BestDir, LastDir
// and the checkpoint's adapter.
var AdapterFiles = []string{"adapter_config.json", "adapter_model.safetensors"}

// Entries returns the names a run writes at the root of its directory:
// what a run directory may hold besides files of other tools (meazo-sweep's).
// The files come first, then DirEntries.
func Entries() []string {
	files := append([]string{ConfigFile, MetricsFile, TimingFile, ChangesFile, SummaryFile, LockFile}, PredictionsFiles()...)
	return append(files, DirEntries()...)
}

// DirEntries returns the Entries that are directories; the others are files.
func DirEntries() []string {
	return []string{CheckpointDir, CheckpointTmpDir, CheckpointOldDir, BestDir, LastDir}
}

// Status values of summary.json's "status" (empty in older runs).
const (
	StatusDone        = "done"        // all steps done
	StatusDiverged    = "diverged"    // stopped by a NaN/Inf loss or gradient: a result
	StatusInterrupted = "interrupted" // stopped by a signal after a checkpoint: resumes
)

// What a finished run keeps of its weights (output.keep_weights; summary.json's
// "weights_kept", absent for KeepAll).
const (
	KeepAll  = "all"  // checkpoint/, best/ and last/: it can be trained further
	KeepBest = "best" // best/ alone
	KeepNone = "none" // no weights: the logs, summary.json and the test answers
)

// Summary is summary.json. The field order is the file's key order.
type Summary struct {
	Model       string   `json:"model"`
	Task        string   `json:"task"`
	Adapter     string   `json:"adapter"`
	Grouped     bool     `json:"grouped"`
	Optimizer   string   `json:"optimizer"`
	LR          float64  `json:"lr"`
	Seed        uint64   `json:"seed"`
	Steps       int      `json:"steps"`
	StepsDone   int      `json:"steps_done"`
	Diverged    bool     `json:"diverged"`
	DivergedAt  *int     `json:"diverged_at"`
	Message     string   `json:"message"`
	BestValLoss *float64 `json:"best_val_loss"` // null before the first validation
	BestStep    int      `json:"best_step"`
	// BestValMetrics and LastValMetrics are the task's metric on the
	// validation split (eval.validation_metrics) at the best step and at
	// the last validation, as ValLine's ValMetrics; absent when off.
	BestValMetrics map[string]float64 `json:"best_val_metrics,omitempty"`
	LastValLoss    *float64           `json:"last_val_loss"`
	LastValMetrics map[string]float64 `json:"last_val_metrics,omitempty"`
	// ValMetricExamples is how many validation examples the metric is over
	// (the length rule and ROUGE's cap may leave some of the validation
	// loss's out), as ValLine's; absent when off.
	ValMetricExamples int                           `json:"val_metric_examples,omitempty"`
	Test              map[string]map[string]float64 `json:"test"`
	TrainableParams   int                           `json:"trainable_params"`
	StateBytes        int64                         `json:"optimizer_state_bytes"`
	PeakRSSBytes      int64                         `json:"peak_rss_bytes"`
	PeakDeviceBytes   int64                         `json:"peak_device_bytes,omitempty"` // GPU memory the backend held at most (weights, buffers, its cache); absent on the CPU
	SecondsPerStep    float64                       `json:"seconds_per_step"`
	Changes           []ConfigChange                `json:"changes,omitempty"`      // settings changed on resume (changes.jsonl)
	Backend           string                        `json:"backend"`                // the backend that ran the last session of the run, and on what
	Program           string                        `json:"program,omitempty"`      // the build of meazo-go that ran it (-version's)
	WeightsKept       string                        `json:"weights_kept,omitempty"` // KeepBest or KeepNone: what the finished run kept of its weights (absent: KeepAll)
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
	Step   int    `json:"step"` // the change applies from step Step+1 on
	Key    string `json:"key"`
	Old    any    `json:"old"`
	New    any    `json:"new"`
	Time   string `json:"time"`
	Reason string `json:"reason,omitempty"` // a change the run made itself (train.patience's early stop); absent for a --set on resume
}

// The keys of the changes a resume records that are not settings (config.yaml
// holds neither): another arithmetic (backend, CPU or GPU, noise contract)
// or another build of meazo-go computed the steps after them.
const (
	ArithmeticChange = "arithmetic"
	ProgramChange    = "program"
)

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
	Sigma      []float64   `json:"sigma,omitempty"` // FZOO: every unit's σ_t (the std of its d); absent for the other optimizers
	Step       int         `json:"step"`
	UpdateNorm float64     `json:"update_norm"`
	V          []float64   `json:"v"` // null for optimizers other than MEAZO
}

// ValLine is a validation's line of metrics.jsonl.
type ValLine struct {
	Kind    string  `json:"kind"` // KindVal
	Step    int     `json:"step"`
	ValLoss float64 `json:"val_loss"`
	// ValMetrics is the task's metric on the validation split with the
	// same parameters (eval.validation_metrics: {"accuracy"},
	// {"exact_match","f1"}, ROUGE's; the test evaluation's keys and
	// scales); absent when off.
	ValMetrics map[string]float64 `json:"val_metrics,omitempty"`
	// ValMetricExamples is how many validation examples ValMetrics is
	// over: those the test evaluation's length rule and ROUGE's cap let be
	// scored; absent with ValMetrics.
	ValMetricExamples int `json:"val_metric_examples,omitempty"`
}

// TimingLine is a step's line of timing.jsonl.
type TimingLine struct {
	LayerEvals int     `json:"layer_evals"`
	Seconds    float64 `json:"seconds"`
	Step       int     `json:"step"`
}

// OfRun says whose dir is where dir is a run directory's best/, last/ or
// checkpoint/ (or that checkpoint's best/), a path a user may give where a
// run directory is wanted: the run directory ("runs/a") and what dir is in
// it ("best/", "checkpoint/best/"); "", "" otherwise. A run directory is
// known by its summary.json, metrics.jsonl or run.lock (a checkpoint holds
// a config.yaml too).
func OfRun(dir string) (run, what string) {
	dir = filepath.Clean(dir)
	for d, what := dir, ""; ; {
		base := filepath.Base(d)
		if base != BestDir && base != LastDir && base != CheckpointDir || what != "" && base != CheckpointDir {
			return "", ""
		}
		what = base + "/" + what
		d = filepath.Dir(d)
		for _, f := range []string{SummaryFile, MetricsFile, LockFile} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return d, what
			}
		}
		if base != BestDir {
			return "", ""
		}
	}
}
