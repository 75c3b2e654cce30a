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
