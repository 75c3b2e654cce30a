package zo_test

import (
	"fmt"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/zo"
)

// ExampleEngine minimises f(x) = ½ Σ h_i (x_i − 1)² in 8 dimensions with
// MEAZO, using only function values: each step evaluates f at θ0 ± εz and
// moves θ along z by the projected gradient, scaled by MEAZO's one
// second-moment scalar.
func ExampleEngine() {
	h := []float64{1, 1, 2, 2, 4, 4, 8, 8}
	f := func(params [][]float32) float64 {
		var s float64
		for i, x := range params[0] {
			d := float64(x) - 1
			s += 0.5 * h[i] * d * d
		}
		return s
	}
	theta := [][]float32{make([]float32, len(h))} // one parameter group, starting at 0
	eng, err := zo.New(theta, zo.NewMEAZO(0.02), zo.Config{Eps: 1e-3, Q: 1, Dist: noise.Normal, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("f before: %.2f\n", f(theta))
	for range 500 {
		if _, err := eng.Step(zo.Func(f)); err != nil {
			panic(err)
		}
	}
	fmt.Printf("f after %d steps: %.2f\n", eng.StepCount(), f(theta))
	// Output:
	// f before: 15.00
	// f after 500 steps: 0.03
}

// ExampleSchedule: the factor of the learning rate at each step of a
// 10-step run with 2 warmup steps, as transformers' Trainer has it: step 0
// of a warmup moves by nothing, step 2 by the whole rate, and the decaying
// schedules reach 0 at the run's end. Set it as Config.Schedule (meazo-train:
// optimizer.schedule and optimizer.warmup_steps over train.steps).
func ExampleSchedule() {
	for _, kind := range []zo.ScheduleKind{zo.ConstantRate, zo.LinearDecay, zo.CosineDecay} {
		s := zo.Schedule{Kind: kind, Warmup: 2, Steps: 10}
		fmt.Printf("%-8s", kind)
		for step := range 10 {
			fmt.Printf(" %.3f", s.Factor(step))
		}
		fmt.Println()
	}
	// Output:
	// constant 0.000 0.500 1.000 1.000 1.000 1.000 1.000 1.000 1.000 1.000
	// linear   0.000 0.500 1.000 0.875 0.750 0.625 0.500 0.375 0.250 0.125
	// cosine   0.000 0.500 1.000 0.962 0.854 0.691 0.500 0.309 0.146 0.038
}
