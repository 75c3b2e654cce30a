package zo

import (
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestNoFusedMultiplyAdd compiles the package for arm64 and for amd64 with
// GOAMD64=v3 and fails on a fused multiply-add: MEAZO's v and FZOO's σ
// were fused there, their bits (the step's coefficient, metrics.jsonl's v
// and sigma) depending on the build.
func TestNoFusedMultiplyAdd(t *testing.T) { asmcheck.NoFusedMultiplyAdd(t, ".") }
