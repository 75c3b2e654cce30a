package suggest

import "testing"

func TestClosest(t *testing.T) {
	for _, c := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"optimzer.lr", []string{"optimizer.lr", "optimizer.eps", "train.steps"}, "optimizer.lr"},
		{"partiton", []string{"partition", "account", "qos"}, "partition"},
		{"x", nil, ""},
		{"ab", []string{"ax", "xb"}, "ax"}, // equals: the first
	} {
		if got := Closest(c.name, c.cands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
