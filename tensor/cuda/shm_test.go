package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestShmKernelsAllowed: every kernel of kernels/ that takes dynamic shared
// memory (DYNAMIC_SHARED) is in shmKernels, which gpu.start allows beyond
// the default 48 KiB, and shmKernels names no other. The backend bounds such
// a kernel's shared memory by maxShm (EncoderAttention: 4·tokens bytes), so
// a kernel missing there would fail to launch on a GPU between 48 KiB and
// maxShm (encoder_attention and encoder_softmax did: about 12,000 tokens and
// more), which the emulator, with no such limit, cannot show.
func TestShmKernelsAllowed(t *testing.T) {
	comments := regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	name := regexp.MustCompile(`^\s*void\s+(\w+)\s*\(`)
	files, err := filepath.Glob(filepath.Join("kernels", "*.cu"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no kernel sources (%v)", err)
	}
	var uses []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(comments.ReplaceAllString(string(src), ""), "__global__")
		for _, p := range parts[1:] { // a kernel and what follows it up to the next
			m := name.FindStringSubmatch(p)
			if m == nil {
				t.Fatalf("%s: a __global__ with no kernel name: %.60q", f, p)
			}
			if strings.Contains(p, "DYNAMIC_SHARED") {
				uses = append(uses, m[1])
			}
		}
	}
	for _, k := range []string{"attention", "encoder_attention", "encoder_softmax"} {
		if !slices.Contains(uses, k) {
			t.Fatalf("found the kernels %v with dynamic shared memory, not %s: the check does not read the sources", uses, k)
		}
	}
	for _, k := range uses {
		if _, ok := shmKernels[k]; !ok {
			t.Errorf("kernel %s takes dynamic shared memory but is not in shmKernels: past 48 KiB it would not launch", k)
		}
	}
	for k := range shmKernels {
		if !slices.Contains(uses, k) {
			t.Errorf("shmKernels names %s, which takes no dynamic shared memory", k)
		}
		if _, ok := kernelParams[k]; !ok {
			t.Errorf("shmKernels names %s, which is not in kernelParams (gpu.start would set an attribute on no function)", k)
		}
	}
}
