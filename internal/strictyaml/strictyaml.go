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
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse returns the single document of b as maps, lists and scalars (nil
// for an empty file). A second document, or a mapping key with no value,
// is an error naming its line (and the key's path, a.b.c).
func Parse(b []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("invalid YAML: %w", err)
	case !isEmpty(&next):
		return nil, fmt.Errorf("line %d: a second YAML document starts (\"---\"): a file holds one, put the rest in a file of its own", next.Line)
	}
	if err := checkValues(&doc, ""); err != nil {
		return nil, err
	}
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	return v, nil
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
				return fmt.Errorf("line %d: %s has no value (%q); write one (\"\" for an empty string, [] for no items), or remove the line to take the default", k.Line, p, v.Value)
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
