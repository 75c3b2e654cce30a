// Package strictyaml reads a YAML file the way a configuration must be
// read: what the user wrote is either used or refused, never replaced by a
// default without a word. YAML itself would accept a key written with no
// value (an empty or null value, which a decoder turns into the default)
// and a second document after a "---" line (which a decoder ignores).
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is what is wrong with a file at a line (0: no line known).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// At is err about the file at path: it reads "path:LINE: what" when err
// carries an *Error with its line (the form compilers and editors read),
// else "path: err"; it wraps err, and keeps what err adds around the *Error.
func At(path string, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Line > 0 {
		return &atError{fmt.Sprintf("%s:%d: %s", path, e.Line, strings.Replace(err.Error(), e.Error(), e.Msg, 1)), err}
	}
	return &atError{fmt.Sprintf("%s: %v", path, err), err}
}

type atError struct {
	msg string
	err error
}

func (e *atError) Error() string { return e.msg }
func (e *atError) Unwrap() error { return e.err }

// decoderLine is how the YAML decoder names a node's line in its errors.
var decoderLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// invalid is a YAML error as an *Error. The decoder's (a key written twice)
// name a node's line, taken out of the message: of its list, the first. The
// parser's syntax errors keep their text: the line they name is the
// scanner's where the scanner found the error, but a line before the
// parser's otherwise (yaml.v3 counts the latter from 0), so it is not
// given as the file's line.
func invalid(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		if m := decoderLine.FindStringSubmatch(te.Errors[0]); m != nil {
			line, _ := strconv.Atoi(m[1])
			return &Error{Line: line, Msg: "invalid YAML: " + m[2]}
		}
	}
	return &Error{Msg: "invalid YAML: " + err.Error()}
}

// Parse returns the single document of b as maps, lists and scalars (nil
// for an empty file). A second document, or a mapping key with no value,
// is an *Error naming its line (and the key's path, a.b.c), as is a YAML
// syntax error where the parser names a line.
func Parse(b []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if line := tabIndent(b); line > 0 && tabError(err) {
			return nil, &Error{Line: line, Msg: "invalid YAML: a tab in the indentation (YAML indents with spaces only): replace it with spaces"}
		}
		return nil, invalid(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, invalid(err)
	case !isEmpty(&next):
		return nil, &Error{Line: next.Line, Msg: "a second YAML document starts (\"---\"): a file holds one, put the rest in a file of its own"}
	}
	if err := checkValues(&doc, ""); err != nil {
		return nil, err
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, invalid(err)
	}
	return v, nil
}

// tabIndent is the 1-based number of the first line of b whose
// indentation holds a tab, which YAML forbids (the parser's message, "found
// character that cannot start any token", does not say so); 0 if none.
func tabIndent(b []byte) int {
	for i, line := range bytes.Split(b, []byte("\n")) {
		indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 && len(bytes.TrimSpace(line)) > 0 {
			return i + 1
		}
	}
	return 0
}

// tabError says whether the parser's error is one a tab in the
// indentation causes: a file with a legal tab (in a block scalar, before a
// comment) and an error elsewhere gets the parser's message, not the tab's.
func tabError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "found character that cannot start any token") ||
		strings.Contains(msg, "found a tab character")
}

// isEmpty says whether a document holds nothing (a trailing "---").
func isEmpty(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode {
		return len(n.Content) == 0 || len(n.Content) == 1 && isEmpty(n.Content[0])
	}
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// checkValues refuses a mapping key whose value is null, written or not.
func checkValues(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if err := checkValues(c, p); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := strings.TrimPrefix(path+"."+k.Value, ".")
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				return &Error{Line: k.Line, Msg: fmt.Sprintf("%s has no value (%q); write one (\"\" for an empty string, [] for no items), or remove the line to take the default", p, v.Value)}
			}
			if err := checkValues(v, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Line returns the line of b's single document where the key at path is
// written (path: a key of the top mapping, then a key of its value, …; in
// a list, an element's 0-based index), or 0 when there is no such key: so
// that a message about a key can point at the line to fix, as the YAML
// parser's own errors do.
func Line(b []byte, path ...string) int {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || len(path) == 0 {
		return 0
	}
	n, line := doc.Content[0], 0
	for _, key := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next, line = n.Content[i+1], n.Content[i].Line
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}
