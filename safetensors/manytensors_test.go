package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyTensorsRefused: a header listing more tensors than any model file
// has is refused before it is parsed (1.7 million empty tensors took a
// minute and a gigabyte to open); one of a few is read.
func TestManyTensorsRefused(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string // "": opens
	}{{3, ""}, {maxTensors + 1, fmt.Sprintf("header lists %d tensors, more than the %d", maxTensors+1, maxTensors)}} {
		var b strings.Builder
		b.WriteString("{")
		for i := range tc.n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`, i)
		}
		b.WriteString("}")
		p := filepath.Join(t.TempDir(), "x.safetensors")
		file := binary.LittleEndian.AppendUint64(nil, uint64(b.Len()))
		if err := os.WriteFile(p, append(file, b.String()...), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%d tensors: %v, want %q", tc.n, err, tc.want)
		}
		if f != nil {
			f.Close()
		}
	}
}
