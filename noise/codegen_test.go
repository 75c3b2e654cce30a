package noise

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/asmcheck"
)

// TestNoFusedMultiplyAdd compiles the package for arm64 and for amd64 with
// GOAMD64=v3, where the Go compiler fuses a product and a sum into one
// multiply-add unless the product is converted explicitly (even across
// statements), and reads the listing: no fused multiply-add, so the scalar
// path rounds every product as the contract says on every build.
func TestNoFusedMultiplyAdd(t *testing.T) { asmcheck.NoFusedMultiplyAdd(t, ".") }

// TestKernelsUseNoLegacySSE reads the amd64 assembly: every instruction on
// a vector or mask register is VEX- or EVEX-encoded (a legacy SSE
// instruction while upper halves are dirty costs an Intel core a microcode
// assist), none is a fused multiply-add (the noise contract rounds every
// product), every return follows VZEROUPPER, and the AVX2 kernels use
// nothing of AVX-512 (no zmm, mask or 16-31 register, no broadcast operand;
// under qemu-x86_64 -cpu Haswell-v4, which has no AVX-512, they also run).
func TestKernelsUseNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly files (%v)", err)
	}
	vecReg := regexp.MustCompile(`\b([XYZ]([0-9]|[12][0-9]|3[01])|K[0-7])\b`)
	avx512Only := regexp.MustCompile(`\b(Z[0-9]+|K[0-7]|[XY](1[6-9]|2[0-9]|3[01]))\b|\.BCST|\.Z\b`)
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		usesVectors, prev := false, ""
		for i, line := range strings.Split(string(src), "\n") {
			ins := strings.TrimSpace(line)
			if ins == "" || strings.HasPrefix(ins, "//") || strings.HasPrefix(ins, "#") || strings.HasSuffix(ins, ":") ||
				strings.HasPrefix(ins, "TEXT") {
				continue
			}
			mnemonic := strings.Fields(ins)[0]
			if strings.Contains(name, "avx2") && avx512Only.MatchString(ins) {
				t.Errorf("%s:%d: %s needs AVX-512", name, i+1, ins)
			}
			if vecReg.MatchString(ins) {
				usesVectors = true
				if !strings.HasPrefix(mnemonic, "V") && !strings.HasPrefix(mnemonic, "K") {
					t.Errorf("%s:%d: %s is not a VEX or EVEX instruction", name, i+1, ins)
				}
			}
			if strings.HasPrefix(mnemonic, "VFMADD") || strings.HasPrefix(mnemonic, "VFMSUB") || strings.HasPrefix(mnemonic, "VFNM") {
				t.Errorf("%s:%d: %s fuses a multiply and an add", name, i+1, ins)
			}
			if mnemonic == "RET" && usesVectors && prev != "VZEROUPPER" {
				t.Errorf("%s:%d: RET without VZEROUPPER before it", name, i+1)
			}
			prev = mnemonic
		}
	}
}
