package shell

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"runs/a-b_c.d", "runs/a-b_c.d"},
		{"train.steps=40", "train.steps=40"},
		{"", "''"},
		{"26 Jul 2024", "'26 Jul 2024'"},
		{`["a","b"]`, `'["a","b"]'`},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
