package train

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// warnSphere warns when sphere noise at eps moves the parameters of the
// largest group (of dims) less than normal noise at ε = 1e-6 does: a unit
// vector of D elements moves each by about eps/√D (8e-10 at the protocol's
// ε = 1e-6 for Llama-3.2-1B's 1.7 M LoRA weights), and at 1e-6 float32's
// rounding of the two losses is already about a tenth of their difference
// (docs/BACKENDS.md, "ZO agreement"): the estimates would be rounding.
// Not refused: the paper's protocol may ask for it.
func warnSphere(out io.Writer, eps float64, dims []int) {
	d := slices.Max(dims)
	if per := eps / math.Sqrt(float64(d)); per < 1e-6 {
		fmt.Fprintf(out, "warning: optimizer.dist sphere moves each parameter by about eps/√D = %.2g (eps %g, D = %d in the largest group), "+
			"less than normal noise at eps 1e-6, where float32's rounding of the losses is already about a tenth of the estimate "+
			"(docs/BACKENDS.md, ZO agreement): the estimates may be rounding; eps %.2g (eps·√D) moves each as normal noise at eps %g does\n",
			per, eps, d, eps*math.Sqrt(float64(d)), eps)
	}
}
