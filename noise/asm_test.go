package noise

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKernelsUseNoLegacySSE reads the amd64 assembly: every instruction on
// a vector or mask register is VEX- or EVEX-encoded (a legacy SSE
// instruction while upper halves are dirty costs an Intel core a microcode
// assist), none is a fused multiply-add (the noise contract rounds every
// product), and every return follows VZEROUPPER.
func TestKernelsUseNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assembly files (%v)", err)
	}
	vecReg := regexp.MustCompile(`\b([XYZ]([0-9]|[12][0-9]|3[01])|K[0-7])\b`)
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
