package tokenizer

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Python's type rules for the template's operators. gonja converts freely
// ('x' + 5 renders "x5", 'x' * 'y' renders "0", 1 < 'a' is true, a list of
// numbers and strings sorts), where Jinja2, and so transformers, raises a
// TypeError: a template that works here would then fail for everyone else,
// or render a prompt the model was never trained on. The operators below
// accept what Python accepts and fail with Python's own message otherwise.

// pyType is the name Python gives v's type in its messages.
func pyType(v *exec.Value) string {
	switch {
	case v.IsNil():
		return "NoneType" // or undefined: Jinja2 raises for both
	case v.IsBool():
		return "bool"
	case v.IsInteger():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	}
	return "object"
}

// isNum: Python's bool is an int (True + 1 == 2).
func isNum(v *exec.Value) bool { return v.IsNumber() || v.IsBool() }

// isInt: an int or a bool, what may repeat a sequence.
func isInt(v *exec.Value) bool { return v.IsInteger() || v.IsBool() }

func intOf(v *exec.Value) int64 {
	if v.IsBool() {
		if v.Bool() {
			return 1
		}
		return 0
	}
	return int64(v.Integer())
}

func floatOf(v *exec.Value) float64 {
	if v.IsBool() {
		return float64(intOf(v))
	}
	return v.Float()
}

// unsupported is Python's TypeError for an operator its operands lack.
func unsupported(op string, l, r *exec.Value) error {
	if op == "**" {
		op = "** or pow()"
	}
	return fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, pyType(l), pyType(r))
}

// notOrdered is Python's TypeError for an ordering its operands lack.
func notOrdered(op string, l, r *exec.Value) error {
	return fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, pyType(l), pyType(r))
}

// order compares l and r as Python's < does: numbers with numbers, strings
// with strings, lists item by item; -1, 0 or 1, and false where NaN makes
// them unordered.
func order(op string, l, r *exec.Value) (int, bool, error) {
	switch {
	case isNum(l) && isNum(r):
		if !l.IsFloat() && !r.IsFloat() {
			a, b := intOf(l), intOf(r)
			return cmp.Compare(a, b), true, nil
		}
		a, b := floatOf(l), floatOf(r)
		if a != a || b != b {
			return 0, false, nil // NaN: every ordering is false, as in Python
		}
		return cmp.Compare(a, b), true, nil // no NaN here
	case l.IsString() && r.IsString():
		return strings.Compare(l.String(), r.String()), true, nil
	case l.IsList() && r.IsList():
		for i := 0; i < min(l.Len(), r.Len()); i++ {
			a, b := l.Index(i), r.Index(i)
			if equal(a, b) {
				continue
			}
			return order(op, a, b) // the first items that differ decide
		}
		return cmp.Compare(l.Len(), r.Len()), true, nil
	}
	return 0, false, notOrdered(op, l, r)
}

// equal is Python's ==: numbers by value (1 == 1.0 == True), the rest as
// gonja compares them.
func equal(l, r *exec.Value) bool {
	if isNum(l) && isNum(r) {
		if !l.IsFloat() && !r.IsFloat() {
			return intOf(l) == intOf(r)
		}
		return floatOf(l) == floatOf(r)
	}
	return l.EqualValueTo(r)
}

// checkOrderable fails where sorting values (or taking their min or max)
// would compare two that Python cannot order: Jinja2's sort, min, max and
// dictsort raise there, gonja's put them in some order. attribute is the
// filter's (dotted, comma-separated: each part is a key).
func checkOrderable(op string, in *exec.Value, attribute string) error {
	var items []*exec.Value
	in.Iterate(func(_, _ int, key, _ *exec.Value) bool {
		items = append(items, key)
		return true
	}, func() {})
	paths := []string{""}
	if attribute != "" {
		paths = strings.Split(attribute, ",")
	}
	for _, path := range paths {
		var first *exec.Value
		for _, item := range items {
			v := attributeOf(item, path)
			if first == nil {
				first = v
				continue
			}
			if _, _, err := order(op, v, first); err != nil {
				return err
			}
		}
	}
	return nil
}

// attributeOf follows a filter's dotted attribute path ("" is v itself);
// a missing one is None, as gonja's filters take it.
func attributeOf(v *exec.Value, path string) *exec.Value {
	if path == "" {
		return v
	}
	for _, part := range strings.Split(path, ".") {
		next, ok := v.Get(part)
		if !ok {
			return exec.AsValue(nil)
		}
		v = next
	}
	return v
}

// checkFilterTypes fails where Jinja2's filter name would raise a TypeError
// on in: sort, min, max and dictsort over values Python cannot order.
func checkFilterTypes(name string, in *exec.Value, p *exec.VarArgs) error {
	var err error
	switch name {
	case "sort":
		err = checkOrderable("<", in, strArg(p, 2, "attribute"))
	case "min":
		err = checkOrderable("<", in, strArg(p, 1, "attribute"))
	case "max":
		err = checkOrderable(">", in, strArg(p, 1, "attribute"))
	case "dictsort":
		if strArg(p, 1, "by") == "value" && in.IsDict() {
			values := make([]any, 0, in.Len())
			for _, pair := range in.Items() {
				values = append(values, pair.Value.Interface())
			}
			err = checkOrderable("<", exec.AsValue(values), "")
		}
	}
	if err != nil {
		return fmt.Errorf("filter %s: %w", name, err)
	}
	return nil
}

// sumOf is Jinja2's sum filter (Python's sum: start, default 0, plus each
// item or its attribute, by Python's +), where gonja's added the numbers as
// floats and skipped the rest.
func sumOf(in *exec.Value, p *exec.VarArgs, limit int64) (*exec.Value, error) {
	total := exec.AsValue(0)
	if v, ok := argument(p, 1, "start"); ok {
		total = v
	}
	if total.IsString() {
		return nil, errors.New("filter sum: sum() can't sum strings [use ''.join(seq) instead]")
	}
	attribute := strArg(p, 0, "attribute")
	var err error
	in.Iterate(func(_, _ int, key, _ *exec.Value) bool {
		total, err = add(total, attributeOf(key, attribute), limit)
		return err == nil
	}, func() {})
	if err != nil {
		return nil, fmt.Errorf("filter sum: %w", err)
	}
	return total, nil
}

// checkTestTypes fails where Jinja2's test name raises a TypeError: x in s
// where s is a string and x is not, or s is a number or bool (gonja said
// false). An s that is none is left to gonja (false): gonja cannot tell
// none from undefined, and Jinja2's undefined holds nothing.
func checkTestTypes(name string, in *exec.Value, p *exec.VarArgs) error {
	s, ok := argument(p, 0, "seq")
	switch {
	case name != "in" || !ok:
	case s.IsString() && !in.IsString():
		return fmt.Errorf("%s in %s: 'in <string>' requires string as left operand, not %s", describe(in), describe(s), pyType(in))
	case isNum(s):
		return fmt.Errorf("%s in %s: argument of type '%s' is not iterable", describe(in), describe(s), pyType(s))
	}
	return nil
}
