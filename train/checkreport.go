package train

// CheckReport is what Check measured and what it projects for the whole
// run, for a program that plans runs (meazo-sweep check; meazo-train
// --check prints it as JSON on stdout). Seconds are this machine's.
type CheckReport struct {
	// StartSeconds is the run's start up to its first validation: the
	// model, the data, the engine (a resumed run pays it again, each
	// time a Slurm job is requeued).
	StartSeconds float64 `json:"start_seconds"`
	// ValidationSeconds is one validation of the whole validation split,
	// from the sample Check scored: its loss and, with
	// eval.validation_metrics, its metric, ValidationMetricSeconds of it
	// (absent when off, and where the loss's forwards count the metric:
	// SST-2's accuracy, Pets').
	ValidationSeconds       float64 `json:"validation_seconds"`
	ValidationMetricSeconds float64 `json:"validation_metric_seconds,omitempty"`
	// StepSeconds is the last timed step's (0 with train.steps 0).
	StepSeconds float64 `json:"step_seconds"`
	Steps       int     `json:"steps"` // train.steps
	// RunSeconds is the whole run's projection, training, validations, the
	// test evaluation and its loads; a lower bound where RunAtLeast (a
	// part not timed, the checkpoints, or one that may come: a second test
	// pass, a new best's checkpoint; the test sample's time includes its
	// generated answers).
	RunSeconds float64 `json:"run_seconds"`
	RunAtLeast bool    `json:"run_at_least"`
	// PeakRSSBytes and PeakDeviceBytes are the check's peaks (0: not known
	// or no GPU); the test evaluation may need more.
	PeakRSSBytes    int64 `json:"peak_rss_bytes"`
	PeakDeviceBytes int64 `json:"peak_device_bytes,omitempty"`
	// CheckpointBytes is a full-parameter run's checkpoint, about (0: an
	// adapter's, which is small).
	CheckpointBytes int64 `json:"checkpoint_bytes,omitempty"`
}

// newCheckReport is the report of a check whose start took startSecs and
// whose projection is p.
func (r *run) newCheckReport(startSecs float64, p projection) *CheckReport {
	_, total, atLeast := p.parts()
	rep := &CheckReport{StartSeconds: startSecs, ValidationSeconds: r.valSecs + r.valMetricSecs, ValidationMetricSeconds: r.valMetricSecs, StepSeconds: p.stepSecs, Steps: r.cfg.Train.Steps,
		RunSeconds: total, RunAtLeast: atLeast, PeakRSSBytes: peakRSS(), CheckpointBytes: r.checkpointBytes()}
	rep.PeakDeviceBytes, _ = r.peakDevice()
	return rep
}
