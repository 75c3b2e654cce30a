package train

import (
	"strings"
	"testing"
)

// TestWarnSphere: sphere noise is warned about where a unit vector of the
// largest group moves each parameter less than normal noise at ε = 1e-6
// (the protocol's ε over Llama-3.2-1B's 1.7 M LoRA weights: 7.7e-10), with
// the ε that moves them as normal noise would; not where it moves them
// more.
func TestWarnSphere(t *testing.T) {
	for _, tc := range []struct {
		eps  float64
		dims []int
		want string // "": no warning
	}{
		{1e-6, []int{1703936}, "eps/√D = 7.7e-10 (eps 1e-06, D = 1703936 in the largest group)"},
		{1e-6, []int{1703936}, "eps 0.0013 (eps·√D)"},
		{1e-3, []int{16, 4096, 64}, ""}, // 1.6e-5 each
		{1e-2, []int{16, 4e8, 64}, "eps/√D = 5e-07 (eps 0.01, D = 400000000"},
	} {
		var b strings.Builder
		warnSphere(&b, tc.eps, tc.dims)
		if got := b.String(); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("eps %g, dims %v: %q; want it to say %q", tc.eps, tc.dims, got, tc.want)
		}
	}
}
