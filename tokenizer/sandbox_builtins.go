package tokenizer

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// gonja's filters, tests and methods, each wrapped: its input and arguments
// are measured (and, for filters and tests, charged) before it runs, a
// builtin whose result can be much larger than its input (center, indent,
// replace, join, format, tojson, batch, slice, list, str.center, str.join,
// str.format, str.split, …) has the size of its result bounded first, and
// every result is measured after.

// outputBound estimates, before a builtin runs, the most bytes its result
// can have (self is the filter's input or the method's receiver).
type outputBound func(self *exec.Value, p *exec.VarArgs) int64

var filterBounds = map[string]outputBound{
	"center": func(in *exec.Value, p *exec.VarArgs) int64 {
		return max(measure(in), clampWidth(intArg(p, 0, "width", 0)))
	},
	"indent": func(in *exec.Value, p *exec.VarArgs) int64 {
		width := int64(4)
		if v, ok := argument(p, 0, "width"); ok {
			width = int64(len(v.String()))
			if v.IsInteger() {
				width = int64(v.Integer())
			}
		}
		s := in.String()
		return int64(len(s)) + clampWidth(width)*int64(strings.Count(s, "\n")+1)
	},
	"replace": func(in *exec.Value, p *exec.VarArgs) int64 {
		return replaceBound(in.String(), strArg(p, 0, "old"), strArg(p, 1, "new"), intArg(p, 2, "count", -1))
	},
	"join": func(in *exec.Value, p *exec.VarArgs) int64 {
		return measure(in) + int64(len(strArg(p, 0, "d")))*itemCount(in)
	},
	"format": func(in *exec.Value, p *exec.VarArgs) int64 {
		return formatBound(in.String(), p)
	},
	"tojson": func(in *exec.Value, p *exec.VarArgs) int64 {
		s, _ := sizeOf(in, measureLimit)
		return 6*s.bytes + s.bytes/8*int64(s.depth)*clampWidth(intArg(p, 0, "indent", 0))
	},
	"batch": func(in *exec.Value, p *exec.VarArgs) int64 {
		return measure(in) + 8*clampWidth(intArg(p, 0, "linecount", 0))
	},
	"slice": func(in *exec.Value, p *exec.VarArgs) int64 {
		return measure(in) + 32*clampWidth(intArg(p, 0, "slices", 0))
	},
	"list": func(in *exec.Value, p *exec.VarArgs) int64 {
		return measure(in) + 24*itemCount(in)
	},
}

var methodBounds = map[string]outputBound{
	"center": widthBound, "ljust": widthBound, "rjust": widthBound, "zfill": widthBound,
	"expandtabs": func(self *exec.Value, p *exec.VarArgs) int64 {
		s := self.String()
		return int64(len(s)) + int64(strings.Count(s, "\t"))*clampWidth(intArg(p, 1, "tabsize", 8))
	},
	"replace": func(self *exec.Value, p *exec.VarArgs) int64 {
		return replaceBound(self.String(), strArg(p, 0, "old"), strArg(p, 1, "new"), intArg(p, 2, "count", -1))
	},
	"join": func(self *exec.Value, p *exec.VarArgs) int64 {
		v, _ := argument(p, 0, "iterable")
		return measure(v) + int64(len(self.String()))*itemCount(v)
	},
	"format":     func(self *exec.Value, p *exec.VarArgs) int64 { return formatBound(self.String(), p) },
	"format_map": func(self *exec.Value, p *exec.VarArgs) int64 { return formatBound(self.String(), p) },
	"split":      splitBound, "rsplit": splitBound, "splitlines": splitBound,
}

func widthBound(self *exec.Value, p *exec.VarArgs) int64 {
	return int64(len(self.String())) + 4*clampWidth(intArg(p, 0, "width", 0))
}

// clampWidth is a width or count argument in [0, 1<<32]: far past every
// limit, and small enough that a bound it is multiplied into cannot wrap
// around (a width near 1<<62 made "its result could reach -3 bytes", and
// some wrapped to a small positive bound that let the builtin run).
func clampWidth(w int64) int64 { return min(max(w, 0), 1<<32) }

// splitBound bounds a split's parts: one per separator, or per word.
func splitBound(self *exec.Value, p *exec.VarArgs) int64 {
	s := self.String()
	parts := countWords(s)
	if sep := strArg(p, 0, "sep"); sep != "" {
		parts = int64(strings.Count(s, sep))
	}
	parts += int64(strings.Count(s, "\n") + strings.Count(s, "\r") + 1)
	return int64(len(s)) + 24*parts
}

// countWords counts what strings.Fields would return, without making it.
func countWords(s string) int64 {
	n, inWord := int64(0), false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return n
}

// replaceBound is the length of s with up to count (all if < 0) of old replaced by new.
func replaceBound(s, old, new string, count int64) int64 {
	n := int64(strings.Count(s, old)) // old == "": between every character
	if count >= 0 {
		n = min(n, count)
	}
	return int64(len(s)) + n*int64(len(new))
}

// formatBound bounds a printf- or str.format-style result: the format, every
// number in it taken as a field width, and every argument once per field.
func formatBound(format string, p *exec.VarArgs) int64 {
	var args, widths int64
	for _, a := range p.Args {
		args += measure(a)
	}
	for _, a := range p.KwArgs {
		args += measure(a)
	}
	for i := 0; i < len(format); i++ {
		var w int64
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			w = min(w*10+int64(format[i]-'0'), 1<<40)
		}
		widths += w
	}
	fields := int64(strings.Count(format, "%") + strings.Count(format, "{"))
	// A field nested in another's spec ("{:>{}}", "{0:{1}}") takes the
	// width or precision from an argument: bound it by the largest number
	// among them.
	if nested := nestedFields(format); nested > 0 {
		var widest int64
		for _, a := range p.Args {
			widest = max(widest, numericArg(a))
		}
		for _, a := range p.KwArgs {
			widest = max(widest, numericArg(a))
		}
		widths += nested * widest
	}
	return int64(len(format)) + widths + fields*(args+64)
}

// nestedFields counts the replacement fields of a str.format string that
// lie inside another field's spec.
func nestedFields(format string) int64 {
	var n int64
	depth := 0
	for i := 0; i < len(format); i++ {
		switch format[i] {
		case '{':
			if depth == 0 && i+1 < len(format) && format[i+1] == '{' {
				i++ // "{{" is a literal brace
				continue
			}
			if depth > 0 {
				n++
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return n
}

// numericArg is the number an argument's text spells (what a nested field
// puts into a spec), up to 1<<40; 0 when it is not digits.
func numericArg(v *exec.Value) int64 {
	s := strings.TrimLeft(v.String(), "+-")
	if s == "" || len(s) > 64 {
		return 0
	}
	var w int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		w = min(w*10+int64(s[i]-'0'), 1<<40)
	}
	return w
}

// measure is sizeOf's bytes for a bound, or more than any value may have
// when v is too large or deep to measure (its own check then reports it).
func measure(v *exec.Value) int64 {
	s, err := sizeOf(v, measureLimit)
	if err != nil {
		return measureLimit
	}
	return s.bytes
}

const measureLimit = 1 << 40

// itemCount is how many items iterating v gives (characters of a string).
func itemCount(v *exec.Value) int64 {
	if v == nil {
		return 0
	}
	if v.IsString() {
		return int64(utf8.RuneCountInString(v.String()))
	}
	if v.IsList() || v.IsDict() {
		return int64(v.Len())
	}
	return 1
}

func intArg(p *exec.VarArgs, pos int, name string, def int64) int64 {
	if v, ok := argument(p, pos, name); ok && v.IsInteger() {
		return int64(v.Integer())
	}
	return def
}

func strArg(p *exec.VarArgs, pos int, name string) string {
	if v, ok := argument(p, pos, name); ok {
		return v.String()
	}
	return ""
}

// checkCall measures a builtin's input and arguments and checks its bound
// against limit, the most bytes one value may have.
func checkCall(kind, name string, bound outputBound, self *exec.Value, p *exec.VarArgs, limit int64) (int64, error) {
	total := int64(0)
	for _, v := range append([]*exec.Value{self}, p.Args...) {
		s, err := sizeOf(v, limit)
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", kind, name, err)
		}
		total += s.bytes
	}
	for _, v := range p.KwArgs {
		s, err := sizeOf(v, limit)
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", kind, name, err)
		}
		total += s.bytes
	}
	if bound != nil {
		if n := bound(self, p); n > limit || n < 0 {
			return 0, fmt.Errorf("%s %s: its result could reach %d bytes, past %s, the limit of one value", kind, name, n, mib(limit))
		}
	}
	return total, nil
}

// checkResult measures a method's result.
func checkResult(kind, name string, out any) error {
	if _, err := sizeOf(exec.AsValue(out), methodValueBytes); err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return nil
}

// sandboxFilters wraps gonja's filters and adds extra (the guards).
func sandboxFilters(extra map[string]exec.FilterFunction) *exec.FilterSet {
	wrapped := extra
	for name, f := range builtinSet[exec.FilterFunction](builtins.Filters, "filters") {
		wrapped[name] = func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			b := budgetOf(e.Environment.Context)
			n, err := checkCall("filter", name, filterBounds[name], in, p, b.valueCap)
			if err == nil {
				err = b.charge(1, n)
			}
			if err == nil {
				err = checkFilterTypes(name, in, p)
			}
			out := exec.AsValue(nil)
			switch {
			case err != nil:
			case name == "sum":
				out, err = sumOf(in, p, b.valueCap)
			default:
				out = f(e, in, p)
			}
			if err != nil {
				b.fail(err)
				return exec.AsValue(err)
			}
			if out.IsError() {
				return out
			}
			if err := b.admit(out); err != nil {
				return exec.AsValue(err)
			}
			return out
		}
	}
	return exec.NewFilterSet(wrapped)
}

func sandboxTests() *exec.TestSet {
	wrapped := map[string]exec.TestFunction{}
	for name, f := range builtinSet[exec.TestFunction](builtins.Tests, "tests") {
		call := reflect.ValueOf(f)
		wrapped[name] = func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) (bool, error) {
			b := budgetOf(e.Environment.Context)
			n, err := checkCall("test", name, nil, in, p, b.valueCap)
			if err == nil {
				err = b.charge(1, n)
			}
			if err == nil {
				err = checkTestTypes(name, in, p)
			}
			if err != nil {
				b.fail(err)
				return false, err
			}
			first := reflect.ValueOf(e)
			if call.Type().In(0) == reflect.TypeFor[*exec.Context]() {
				first = reflect.ValueOf(e.Environment.Context)
			}
			out := call.Call([]reflect.Value{first, reflect.ValueOf(in), reflect.ValueOf(p)})
			err, _ = out[1].Interface().(error)
			return out[0].Bool(), err
		}
	}
	return exec.NewTestSet(wrapped)
}

func sandboxMethods() exec.Methods {
	m := builtins.Methods
	return exec.Methods{
		Bool:  wrapMethods(m.Bool),
		Int:   wrapMethods(m.Int),
		Float: wrapMethods(m.Float),
		Str:   wrapMethods(pyStr(m.Str)),
		Dict:  wrapMethods(m.Dict),
		List:  wrapMethods(m.List),
	}
}

// wrapMethods wraps a receiver type's methods. gonja passes a method no
// context, so a method cannot reach the render's budget: the call's receiver
// and result are charged by the guards around the call (sandbox_ast.go), and
// a method that would break a limit aborts the render (sandboxAbort), which
// render reports with the line.
func wrapMethods[I any](set *exec.MethodSet[I]) *exec.MethodSet[I] {
	wrapped := map[string]exec.Method[I]{}
	for name, f := range builtinSet[exec.Method[I]](set, "methods") {
		wrapped[name] = func(self I, selfValue *exec.Value, p *exec.VarArgs) (any, error) {
			if _, err := checkCall("method", name, methodBounds[name], selfValue, p, methodValueBytes); err != nil {
				panic(sandboxAbort{err})
			}
			out, err := f(self, selfValue, p)
			if err == nil {
				if err := checkResult("method", name, out); err != nil {
					panic(sandboxAbort{err})
				}
			}
			return out, err
		}
	}
	return exec.NewMethodSet(wrapped)
}

// pyStr is gonja's str methods with center, ljust and rjust as Python's:
// in gonja 2.9.1 a call without a fillchar ("x".center(5)) failed (its
// default ' ' is a rune, which its own argument check refuses), and center
// put an odd column of padding on the other side than CPython.
func pyStr(set *exec.MethodSet[string]) *exec.MethodSet[string] {
	methods := builtinSet[exec.Method[string]](set, "methods")
	for _, name := range []string{"center", "ljust", "rjust"} {
		methods[name] = func(self string, _ *exec.Value, p *exec.VarArgs) (any, error) {
			var (
				width int
				fill  string
			)
			if err := p.Take(
				exec.PositionalArgument("width", nil, exec.IntArgument(&width)),
				exec.PositionalArgument("fillchar", exec.AsValue(" "), exec.StringArgument(&fill)),
			); err != nil {
				return nil, exec.ErrInvalidCall(err)
			}
			if utf8.RuneCountInString(fill) != 1 {
				return nil, fmt.Errorf("%s: the fill character must be exactly one character long", name)
			}
			return pyPad(name, self, width, fill), nil
		}
	}
	return exec.NewMethodSet(methods)
}

// pyPad pads s to width code points with fill as CPython's str.center,
// ljust and rjust do (center: the odd column on the left when width is
// odd).
func pyPad(name, s string, width int, fill string) string {
	marg := width - utf8.RuneCountInString(s)
	if marg <= 0 {
		return s
	}
	left := 0
	switch name {
	case "center":
		left = marg/2 + (marg & width & 1)
	case "rjust":
		left = marg
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, marg-left)
}

// sandboxAbort carries a limit's error from where no budget is at hand.
type sandboxAbort struct{ err error }

// builtinSet reads the map behind one of gonja's builtin sets (FilterSet,
// TestSet, MethodSet), which offer lookups by name but no listing, so that
// every builtin gonja has is wrapped, and none is left out.
func builtinSet[F any](set any, field string) map[string]F {
	v := reflect.ValueOf(set).Elem().FieldByName(field)
	v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	out := map[string]F{}
	for it := v.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface().(F)
	}
	return out
}
