package zo

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// TestScheduleMatchesTransformers: the rate of every step of HF
// transformers' constant, constant-with-warmup, linear and cosine schedules,
// recorded from its Trainer's objects (scripts/make_schedule_fixture.py), is
// η·Factor(step): bit for bit but for the cosine, where Go's math.Cos and the
// C library's cos may round a last bit apart (η·ulp(1) at most: near the
// schedule's end 1 + cos is far smaller than the ulp of cos).
func TestScheduleMatchesTransformers(t *testing.T) {
	b, err := os.ReadFile("testdata/schedules.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		LR    float64 `json:"lr"`
		Cases []struct {
			HFType        string `json:"hf_type"`
			Warmup, Steps int
			Rates         []float64 `json:"rates"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) == 0 {
		t.Fatal("no cases in testdata/schedules.json")
	}
	for _, c := range fx.Cases {
		kind, err := ParseSchedule(strings.TrimSuffix(c.HFType, "_with_warmup"))
		if err != nil {
			t.Fatal(err)
		}
		s := Schedule{Kind: kind, Warmup: c.Warmup, Steps: c.Steps}
		if err := s.check(); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		for step, want := range c.Rates {
			got := fx.LR * s.Factor(step)
			ok := got == want
			if kind == CosineDecay {
				ok = math.Abs(got-want) <= fx.LR*0x1p-52
			}
			if !ok {
				t.Errorf("%s warmup %d of %d steps: step %d rate %v, transformers %v", c.HFType, c.Warmup, c.Steps, step, got, want)
			}
		}
	}
}

// TestScheduleScalesRate: a scheduled run moves θ exactly as a run whose
// learning rate is set to η·Factor(t) by hand before each step t (ZO-SGD
// with momentum and weight decay, ZO-Adam), in every mode; a constant
// schedule leaves a run's bits as they were; the last step of a linear
// schedule (factor 0) does not move θ.
func TestScheduleScalesRate(t *testing.T) {
	const steps, lr = 6, 1e-2
	sched := Schedule{Kind: LinearDecay, Warmup: 2, Steps: steps}
	f := quadratic([]float64{1, 2, 3, 4, 5, 6, 7})
	run := func(opt Optimizer, setLR func(float64), s Schedule, mode Mode) ([][][]float32, error) {
		p := [][]float32{{1, -2, 3, 0.5}, {-1, 2, 0.25}}
		e, err := New(p, opt, Config{Eps: 1e-3, Q: 2, Seed: 9, Mode: mode, Schedule: s})
		if err != nil {
			return nil, err
		}
		var trace [][][]float32
		for step := range steps {
			if setLR != nil {
				setLR(lr * sched.Factor(step))
			}
			if _, err := e.Step(f); err != nil {
				return nil, err
			}
			trace = append(trace, [][]float32{append([]float32(nil), p[0]...), append([]float32(nil), p[1]...)})
		}
		return trace, nil
	}
	for _, mode := range []Mode{Joint, Grouped, Cyclic} {
		sgd := func() *SGD { o := NewSGD(lr); o.Momentum, o.WeightDecay = 0.9, 0.01; return o }
		byHand := sgd()
		adamByHand := NewAdam(lr)
		for _, c := range []struct {
			name       string
			sched, ref Optimizer
			setLR      func(float64)
		}{
			{"zo-sgd", sgd(), byHand, func(v float64) { byHand.LR = v }},
			{"zo-adam", NewAdam(lr), adamByHand, func(v float64) { adamByHand.LR = v }},
		} {
			got, err := run(c.sched, nil, sched, mode)
			if err != nil {
				t.Fatal(err)
			}
			want, err := run(c.ref, c.setLR, Schedule{}, mode)
			if err != nil {
				t.Fatal(err)
			}
			for step := range got {
				for g := range got[step] {
					if i := firstDiff(got[step][g], want[step][g]); i >= 0 {
						t.Errorf("%s %v: step %d group %d element %d: %v, by hand %v", c.name, mode, step, g, i, got[step][g][i], want[step][g][i])
					}
				}
			}
			// Step 0 of the warmup has rate 0: θ stays where it started
			// (zo-sgd's weight decay is scaled by the rate too).
			if got[0][0][1] != -2 || got[0][1][2] != 0.25 {
				t.Errorf("%s %v: step 0 of the warmup moved θ: %v", c.name, mode, got[0])
			}
		}
	}
	// A constant schedule, set or left zero: the same bits.
	a, err := run(NewMEAZO(lr), nil, Schedule{}, Joint)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run(NewMEAZO(lr), nil, Schedule{Kind: ConstantRate, Steps: steps}, Joint)
	if err != nil {
		t.Fatal(err)
	}
	for step := range a {
		for g := range a[step] {
			if i := firstDiff(a[step][g], b[step][g]); i >= 0 {
				t.Errorf("constant schedule: step %d group %d element %d differs", step, g, i)
			}
		}
	}
}

// TestScheduleOnStore: an engine over a Store hands the scheduled rate to
// the store's update (full-parameter ZO moves its weights where they are).
func TestScheduleOnStore(t *testing.T) {
	st := &rateStore{}
	sched := Schedule{Kind: CosineDecay, Warmup: 1, Steps: 4}
	e, err := NewStore(st, NewMEAZO(1e-3), Config{Eps: 1e-3, Q: 1, Seed: 1, Schedule: sched})
	if err != nil {
		t.Fatal(err)
	}
	plain := NewMEAZO(1e-3)
	ref, err := NewStore(&rateStore{}, plain, Config{Eps: 1e-3, Q: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	obj := objectiveFunc(func(_ [][]float32, vs []Variant) ([]float64, error) { return []float64{1.5, 1}, nil })
	for step := range 5 {
		if _, err := e.Step(obj); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Step(obj); err != nil {
			t.Fatal(err)
		}
		want := ref.θ.(*storeParams).s.(*rateStore).rates[step] * sched.Factor(step)
		if got := st.rates[step]; got != want {
			t.Errorf("step %d: the store's rate %v, want %v", step, got, want)
		}
	}
	if st.rates[0] != 0 || st.rates[4] != 0 {
		t.Errorf("warmup's first step and the cosine's end: rates %v, want 0", st.rates)
	}
}

// rateStore is a Store of one group that records each update's rate.
type rateStore struct{ rates []float64 }

func (s *rateStore) Dims() []int { return []int{3} }
func (s *rateStore) Update(g int, u StoreUpdate) (float64, error) {
	s.rates = append(s.rates, u.Rule.LR)
	return 0, nil
}

func TestScheduleErrors(t *testing.T) {
	p := [][]float32{{1, 2}}
	for _, c := range []struct {
		s    Schedule
		want string
	}{
		{Schedule{Kind: LinearDecay}, "a linear schedule needs the run's number of steps, got 0"},
		{Schedule{Warmup: -1}, "warmup of -1 steps"},
		{Schedule{Kind: 7, Steps: 3}, "unknown schedule 7"},
	} {
		if _, err := New(p, NewSGD(1), Config{Eps: 1e-3, Q: 1, Schedule: c.s}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	if _, err := ParseSchedule("cosine_with_restarts"); err == nil || !strings.Contains(err.Error(), "want constant, linear or cosine") {
		t.Errorf("ParseSchedule: %v", err)
	}
	for _, k := range []ScheduleKind{ConstantRate, LinearDecay, CosineDecay} {
		if got, err := ParseSchedule(k.String()); err != nil || got != k {
			t.Errorf("ParseSchedule(%q) = %v, %v", k, got, err)
		}
	}
}
