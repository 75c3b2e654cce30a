package zo

import (
	"fmt"
	"math"
)

// ScheduleKind names a learning-rate schedule (optimizer.schedule).
type ScheduleKind int

const (
	ConstantRate ScheduleKind = iota // η at every step (the paper's, MeZO's): the zero value
	LinearDecay                      // η falling linearly to 0 at the last step
	CosineDecay                      // η falling as a half cosine to 0 at the last step
)

var scheduleNames = [...]string{ConstantRate: "constant", LinearDecay: "linear", CosineDecay: "cosine"}

// String is the schedule's name in configs.
func (k ScheduleKind) String() string {
	if k < 0 || int(k) >= len(scheduleNames) {
		return fmt.Sprintf("ScheduleKind(%d)", int(k))
	}
	return scheduleNames[k]
}

// ParseSchedule reads a schedule name: constant, linear or cosine.
func ParseSchedule(s string) (ScheduleKind, error) {
	for k, name := range scheduleNames {
		if s == name {
			return ScheduleKind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown schedule %q (want constant, linear or cosine)", s)
}

// Schedule scales the optimizer's learning rate step by step: step t (0-based)
// moves θ with η·Factor(t). The factors are those of HF transformers'
// get_constant_schedule_with_warmup, get_linear_schedule_with_warmup and
// get_cosine_schedule_with_warmup (one half cosine) over Steps training steps,
// read as its Trainer reads them, so that a run ported from a Trainer with
// lr_scheduler_type constant, constant_with_warmup, linear or cosine and the
// same warmup moves with the same rates (zo/testdata/schedules.json, recorded
// from transformers). ConstantRate with a warmup is constant_with_warmup:
// the Trainer's constant ignores its warmup steps, so port that one
// without. As there, warmup rises from 0: step 0 of a warmup has
// rate 0 (the step is evaluated and MEAZO's and Adam's moments are updated;
// θ does not move).
//
// The zero value is ConstantRate without warmup: η at every step, exactly.
type Schedule struct {
	Kind   ScheduleKind
	Warmup int // steps of linear warmup from 0 to η
	Steps  int // the run's length; LinearDecay and CosineDecay reach 0 at it
}

// Factor returns the multiplier of η at step (0-based).
func (s Schedule) Factor(step int) float64 {
	if step < s.Warmup {
		return float64(step) / float64(max(1, s.Warmup))
	}
	switch s.Kind {
	case LinearDecay:
		return max(0, float64(s.Steps-step)/float64(max(1, s.Steps-s.Warmup)))
	case CosineDecay:
		progress := float64(step-s.Warmup) / float64(max(1, s.Steps-s.Warmup))
		// transformers' cos(π·num_cycles·2·progress) with num_cycles ½.
		return max(0, 0.5*(1+math.Cos(math.Pi*progress)))
	}
	return 1
}

// check reports a schedule that cannot be followed.
func (s Schedule) check() error {
	switch {
	case s.Kind < ConstantRate || s.Kind > CosineDecay:
		return fmt.Errorf("unknown schedule %d", s.Kind)
	case s.Warmup < 0:
		return fmt.Errorf("warmup of %d steps: want at least 0", s.Warmup)
	case s.Kind != ConstantRate && s.Steps < 1:
		return fmt.Errorf("a %s schedule needs the run's number of steps, got %d", s.Kind, s.Steps)
	}
	return nil
}
