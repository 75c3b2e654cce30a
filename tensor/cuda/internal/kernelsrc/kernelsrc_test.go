package kernelsrc

import (
	"strings"
	"testing"
)

// TestRetarget checks PTXHopper's rewrite of NVRTC's compute_90 PTX: the
// version and target lines replaced, nothing else touched, and PTX of
// another target or without one refused.
func TestRetarget(t *testing.T) {
	for _, c := range []struct {
		name, in, want, err string
	}{
		{"compute_90", "//\n.version 7.8\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\n}\n",
			"//\n.version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n}\n", ""},
		{"compute_80", ".version 7.8\n.target sm_80\n", "", `PTX targets ".target sm_80", not sm_90`},
		{"no target", ".version 7.8\n.address_size 64\n", "", "0 .target sm_90 lines"},
		{"two versions", ".version 7.8\n.version 7.8\n.target sm_90\n", "", "2 .version"},
	} {
		got, err := Retarget([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Retarget = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
