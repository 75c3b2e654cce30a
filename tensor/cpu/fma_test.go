package cpu

import (
	"regexp"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestScalarKernelsUnfused: the scalar code that a vector kernel's tail, or
// a build without one, runs in its place must round each product as the
// vector code does. The compiler fuses x*y + z into one rounding on arm64
// and with GOAMD64=v3 unless the product is converted; a GOAMD64=v3 build
// then gave other bits than a v1 build reporting the same arithmetic
// (tensor.Backend.Arithmetic), and its scalar tails other bits than its
// vector lanes.
func TestScalarKernelsUnfused(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package twice")
	}
	asmcheck.NoFusedMultiplyAddIn(t, ".", regexp.MustCompile(`^github\.com/meazo-go/meazo/tensor/cpu\.(Exp|\w+Scalar|kernPortable)$`), 10)
}
