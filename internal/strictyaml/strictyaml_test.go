package strictyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct{ name, yaml, wantErr string }{
		{"one document", "a:\n  b: 1\n  c: [x, y]\n", ""},
		{"an empty file", "", ""},
		{"a leading document marker", "---\na: 1\n", ""},
		{"a trailing document marker", "a: 1\n---\n", ""},
		{"an explicit empty string", "a: ''\nb: []\n", ""},
		{"a key without a value", "a:\n  b:\n  c: 1\n", `line 2: a.b has no value ("")`},
		{"a null key", "a:\n  b: ~\n", `line 2: a.b has no value ("~")`},
		{"a null written out", "a: null\n", `line 1: a has no value ("null")`},
		{"a null inside a list's mapping", "l:\n  - x: 1\n  - x:\n", `line 3: l[1].x has no value`},
		{"a second document", "a: 1\n---\nb: 2\n", "line 2: a second YAML document"},
		{"a second empty mapping document", "a: 1\n---\n{}\n", "line 2: a second YAML document"},
		{"a duplicate key", "a: 1\na: 2\n", `line 2: invalid YAML: mapping key "a" already defined at line 1`},
		{"not YAML", "a: [1\n", "invalid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("error %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestAt: an error at a line reads path:LINE: what, whatever wraps it;
// one without a line path: what.
func TestAt(t *testing.T) {
	_, err := Parse([]byte("a:\n  b:\n"))
	at := At("c.yaml", fmt.Errorf("%w (a hint)", err))
	if got, want := at.Error(), `c.yaml:2: a.b has no value (""); write one`; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "(a hint)") {
		t.Errorf("At: %q, want %q… (a hint)", got, want)
	}
	if !errors.Is(at, err) {
		t.Errorf("At does not wrap its error")
	}
	if got := At("c.yaml", errors.New("empty")).Error(); got != "c.yaml: empty" {
		t.Errorf("no line: %q", got)
	}
}

func TestLine(t *testing.T) {
	doc := []byte("# a config\nmodel:\n  path: m\n\noptimizer:\n  name: meazo\n  lr: 2e-4\ntrain: {steps: 3}\nruns:\n  - name: a\n  - name: b\n    seeds: [1, 2]\n")
	for _, c := range []struct {
		path []string
		want int
	}{
		{[]string{"model"}, 2},
		{[]string{"model", "path"}, 3},
		{[]string{"optimizer", "lr"}, 7},
		{[]string{"train", "steps"}, 8},
		{[]string{"optimizer", "beta"}, 0},
		{[]string{"model", "path", "deeper"}, 0},
		{[]string{"eval"}, 0},
		{[]string{"runs", "1", "seeds"}, 12},
		{[]string{"runs", "1"}, 11},
		{[]string{"runs", "2"}, 0},
		{[]string{"runs", "x"}, 0},
		{nil, 0},
	} {
		if got := Line(doc, c.path...); got != c.want {
			t.Errorf("Line(%q) = %d, want %d", c.path, got, c.want)
		}
	}
	if Line([]byte("a: [\n"), "a") != 0 || Line(nil, "a") != 0 || Line([]byte("- a\n- b\n"), "a") != 0 {
		t.Error("a document without the key gave a line")
	}
}

// A tab in a line's indentation (YAML forbids it) is named with its line,
// instead of the parser's "found character that cannot start any token".
func TestTabIndent(t *testing.T) {
	_, err := Parse([]byte("model:\n  path: m\ntrain:\n\tsteps: 3\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 4 || !strings.Contains(e.Msg, "a tab in the indentation") {
		t.Errorf("got %v, want line 4 named for its tab", err)
	}
	if _, err := Parse([]byte("a: \"x\ty\"\n")); err != nil {
		t.Errorf("a tab inside a value: %v", err)
	}
	// A legal tab (in a block scalar) is not blamed for an error elsewhere.
	_, err = Parse([]byte("a: |\n  x\n  \tindented with a tab\nb: [1, 2\n"))
	if err == nil || strings.Contains(err.Error(), "tab") || !strings.Contains(err.Error(), "did not find expected") {
		t.Errorf("an unclosed list after a block scalar holding a tab: got %v, want the parser's error", err)
	}
	if _, err := Parse([]byte("a:\n  b: 1\n\tc: 2\n")); err == nil || !strings.Contains(err.Error(), "a tab in the indentation") {
		t.Errorf("a tab after a nested key: %v", err)
	}
}
