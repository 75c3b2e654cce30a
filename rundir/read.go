package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/meazo-go/meazo/internal/inputfile"
)

// ReadSummary reads dir/summary.json and checks the fields every reader
// needs: a named optimizer and a positive learning rate. Errors name the file.
func ReadSummary(dir string) (Summary, error) {
	path := filepath.Join(dir, SummaryFile)
	data, err := inputfile.ReadFile(path)
	if err != nil {
		return Summary{}, fmt.Errorf("read %s: %w", path, err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return Summary{}, fmt.Errorf("parse %s: %w", path, err)
	}
	switch {
	case s.Optimizer == "":
		return Summary{}, fmt.Errorf("%s: field \"optimizer\" missing or empty", path)
	case !(s.LR > 0) || math.IsInf(s.LR, 0):
		return Summary{}, fmt.Errorf("%s: field \"lr\" is %v, want a positive learning rate", path, s.LR)
	case s.WeightsKept != "" && s.WeightsKept != KeepBest && s.WeightsKept != KeepNone:
		return Summary{}, fmt.Errorf("%s: field \"weights_kept\" is %q, want %q or %q (or no field: %s)", path, s.WeightsKept, KeepBest, KeepNone, KeepAll)
	}
	return s, nil
}

// TrainPoint is one training line of metrics.jsonl, as readers take it.
type TrainPoint struct {
	Step   int
	Loss   float64   // NaN when null
	V      []float64 // nil when null (optimizers other than MEAZO); a null entry is NaN
	Sigma  []float64 // FZOO's σ_t per unit; nil when absent (the other optimizers); a null entry is NaN
	Groups []int
	LR     float64 // the rate the step moved with ("lr"); NaN when absent or null
}

// ValPoint is one validation line of metrics.jsonl.
type ValPoint struct {
	Step    int
	ValLoss float64            // NaN when null
	Metrics map[string]float64 // "val_metrics" (eval.validation_metrics); nil when absent
}

// metricLine is any line of metrics.jsonl as read: TrainLine and ValLine's
// fields that readers use, each optional but "step".
type metricLine struct {
	Kind    string     `json:"kind"`
	Step    *int       `json:"step"`
	Loss    *float64   `json:"loss"`
	V       []*float64 `json:"v"`
	Sigma   []*float64 `json:"sigma"`
	Groups  []int      `json:"groups"`
	LR      *float64   `json:"lr"`
	ValLoss *float64   `json:"val_loss"`
	// ValMetrics: a metric's value is finite, but a null one is read as NaN.
	ValMetrics map[string]*float64 `json:"val_metrics"`
}

// orNaNs is a list of optional numbers with NaN for each null; nil for nil.
func orNaNs(vs []*float64) []float64 {
	if vs == nil {
		return nil
	}
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = orNaN(v)
	}
	return out
}

// ReadMetrics reads dir/metrics.jsonl, each kind sorted by step. A step
// logged twice keeps its last line (meazo-train writes none: a resume cuts
// the log back to its checkpoint before it runs the later steps again).
// A final line without its newline is a write cut short by a kill, or one
// still being written: it is dropped with a warning; any other bad line is
// an error naming the file and line. Lines of other kinds are skipped.
func ReadMetrics(dir string, warn func(string)) ([]TrainPoint, []ValPoint, error) {
	path := filepath.Join(dir, MetricsFile)
	data, err := inputfile.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("read %s: no such file", path)
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	train := map[int]TrainPoint{}
	val := map[int]ValPoint{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m metricLine
		err := json.Unmarshal(line, &m)
		if err == nil && m.Step == nil {
			err = errors.New(`field "step" missing`)
		}
		if err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(bytes.TrimSpace(data), line) {
				warn(fmt.Sprintf("%s line %d: ignoring a cut-off last line", path, n))
				break
			}
			return nil, nil, fmt.Errorf("%s line %d: %v", path, n, err)
		}
		switch m.Kind {
		case KindTrain:
			p := TrainPoint{Step: *m.Step, Loss: orNaN(m.Loss), Groups: m.Groups, LR: orNaN(m.LR)}
			p.V, p.Sigma = orNaNs(m.V), orNaNs(m.Sigma)
			train[p.Step] = p
		case KindVal:
			val[*m.Step] = ValPoint{Step: *m.Step, ValLoss: orNaN(m.ValLoss), Metrics: orNaNMap(m.ValMetrics)}
		default: // other kinds may be added to the contract; readers ignore them
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	tp := make([]TrainPoint, 0, len(train))
	for _, p := range train {
		tp = append(tp, p)
	}
	sort.Slice(tp, func(i, j int) bool { return tp[i].Step < tp[j].Step })
	vp := make([]ValPoint, 0, len(val))
	for _, p := range val {
		vp = append(vp, p)
	}
	sort.Slice(vp, func(i, j int) bool { return vp[i].Step < vp[j].Step })
	return tp, vp, nil
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// orNaNMap is a map of optional numbers with NaN for each null; nil for nil.
func orNaNMap(m map[string]*float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = orNaN(v)
	}
	return out
}
