package tokenizer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// guardOp: v0|guardOp(op1, v1, op2, v2, …) evaluates a chain of binary operators
// left to right ((v0 op1 v1) op2 v2 …) as gonja does, or a chain of
// comparisons as Python does (v0 op1 v1 and v1 op2 v2 …), with the checks Python
// makes: a division or modulo by zero and an integer result that does not
// fit in 64 bits raise (gonja printed +Inf, wrapped around, or crashed), and
// a string or list is never made larger than one value may be. Floor
// division, modulo and integer powers follow Python (-7 // 2 == -4,
// -7 % 3 == 2, 2 ** 3 == 8), where gonja truncated or returned floats.
func guardOp(b *budget, v *exec.Value, args []*exec.Value) *exec.Value {
	if err := b.admit(v); err != nil {
		return exec.AsValue(err)
	}
	for i := 0; i+1 < len(args); i += 2 {
		op, r := args[i].String(), args[i+1]
		if err := b.admit(r); err != nil {
			return exec.AsValue(err)
		}
		left := v
		if i > 0 && isComparisonOp(op) { // a < b < c: a < b and b < c
			if !v.IsTrue() {
				return v
			}
			left = args[i-1]
		}
		out, err := binaryOp(op, left, r, b.valueCap)
		if err == nil {
			err = b.admit(out)
		}
		if err != nil {
			b.fail(fmt.Errorf("%s %s %s: %w", describe(left), op, describe(r), err))
			return exec.AsValue(b.err)
		}
		v = out
	}
	return v
}

func isComparisonOp(op string) bool {
	switch op {
	case "==", "!=", "<", "<=", ">", ">=":
		return true
	}
	return false
}

var (
	errZeroDivision = errors.New("division by zero")
	errOverflow     = errors.New("the integer result does not fit in 64 bits")
)

// binaryOp computes l op r; limit is the most bytes one value may have.
// Operands Python's operator does not take fail with Python's TypeError
// (sandbox_types.go).
func binaryOp(op string, l, r *exec.Value, limit int64) (*exec.Value, error) {
	switch op {
	case "+":
		return add(l, r, limit)
	case "*":
		return multiply(l, r, limit)
	case "~":
		return concat(l.String(), r.String(), limit)
	case "==":
		return exec.AsValue(equal(l, r)), nil
	case "!=":
		return exec.AsValue(!equal(l, r)), nil
	case "<", "<=", ">", ">=":
		c, ok, err := order(op, l, r)
		if err != nil {
			return nil, err
		}
		return exec.AsValue(ok && ordered(op, c, 0)), nil
	case "%":
		if l.IsString() {
			return nil, errors.New("string formatting with % is not supported: use the format filter or ~")
		}
	}
	if !isNum(l) || !isNum(r) {
		return nil, unsupported(op, l, r)
	}
	switch op {
	case "-":
		if l.IsFloat() || r.IsFloat() {
			return exec.AsValue(floatOf(l) - floatOf(r)), nil
		}
		return intResult(sub64(intOf(l), intOf(r)))
	case "/":
		if floatOf(r) == 0 {
			return nil, errZeroDivision
		}
		return exec.AsValue(floatOf(l) / floatOf(r)), nil
	case "//", "%":
		return floorDivMod(op, l, r)
	case "**":
		return power(l, r)
	}
	return nil, fmt.Errorf("unknown operator %q", op)
}

// add is Python's +: numbers, two strings or two lists.
func add(l, r *exec.Value, limit int64) (*exec.Value, error) {
	switch {
	case l.IsList() && r.IsList():
		if l.Len()+r.Len() > maxValueItems {
			return nil, fmt.Errorf("the list would have more than %d items", maxValueItems)
		}
		out := make([]any, 0, l.Len()+r.Len())
		for _, v := range []*exec.Value{l, r} {
			for i := 0; i < v.Len(); i++ {
				out = append(out, v.Index(i).Interface())
			}
		}
		return exec.AsValue(out), nil
	case l.IsString() && r.IsString():
		return concat(l.String(), r.String(), limit)
	case l.IsString() || l.IsList():
		return nil, fmt.Errorf("can only concatenate %s (not \"%s\") to %s", pyType(l), pyType(r), pyType(l))
	case !isNum(l) || !isNum(r):
		return nil, unsupported("+", l, r)
	case l.IsFloat() || r.IsFloat():
		return exec.AsValue(floatOf(l) + floatOf(r)), nil
	}
	return intResult(add64(intOf(l), intOf(r)))
}

func concat(l, r string, limit int64) (*exec.Value, error) {
	if int64(len(l))+int64(len(r)) > limit {
		return nil, fmt.Errorf("the string would exceed %s, the limit of one value", mib(limit))
	}
	return exec.AsValue(l + r), nil
}

// multiply is Python's *: numbers, or a string or list repeated an int's times.
func multiply(l, r *exec.Value, limit int64) (*exec.Value, error) {
	seq, n := l, r
	if r.IsString() || r.IsList() {
		seq, n = r, l
	}
	switch {
	case (seq.IsString() || seq.IsList()) && !isInt(n):
		return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", pyType(n))
	case seq.IsString():
		return repeatString(seq.String(), intOf(n), limit)
	case seq.IsList():
		return repeatList(seq, intOf(n))
	case !isNum(l) || !isNum(r):
		return nil, unsupported("*", l, r)
	case l.IsFloat() || r.IsFloat():
		return exec.AsValue(floatOf(l) * floatOf(r)), nil
	}
	return intResult(mul64(intOf(l), intOf(r)))
}

// repeatString is Python's s * n: empty when n <= 0.
func repeatString(s string, n, limit int64) (*exec.Value, error) {
	if n <= 0 || s == "" {
		return exec.AsValue(""), nil
	}
	if n > limit/int64(len(s)) {
		return nil, fmt.Errorf("the string would exceed %s, the limit of one value", mib(limit))
	}
	return exec.AsValue(strings.Repeat(s, int(n))), nil
}

func repeatList(l *exec.Value, n int64) (*exec.Value, error) {
	if n <= 0 || l.Len() == 0 {
		return exec.AsValue([]any{}), nil
	}
	if n > maxValueItems/int64(l.Len()) {
		return nil, fmt.Errorf("the list would have more than %d items", maxValueItems)
	}
	out := make([]any, 0, int(n)*l.Len())
	for range n {
		for i := 0; i < l.Len(); i++ {
			out = append(out, l.Index(i).Interface())
		}
	}
	return exec.AsValue(out), nil
}

// floorDivMod is Python's // and %: the quotient rounded down, the
// remainder with the divisor's sign.
func floorDivMod(op string, l, r *exec.Value) (*exec.Value, error) {
	if l.IsFloat() || r.IsFloat() {
		x, y := floatOf(l), floatOf(r)
		if y == 0 {
			return nil, errZeroDivision
		}
		m := math.Mod(x, y)
		if m != 0 && (m < 0) != (y < 0) {
			m += y
		}
		if op == "%" {
			return exec.AsValue(m), nil
		}
		return exec.AsValue(math.Round((x - m) / y)), nil
	}
	x, y := intOf(l), intOf(r)
	if y == 0 {
		return nil, errZeroDivision
	}
	if x == math.MinInt64 && y == -1 {
		if op == "%" {
			return exec.AsValue(0), nil
		}
		return nil, errOverflow
	}
	q, m := x/y, x%y
	if m != 0 && (m < 0) != (y < 0) {
		q, m = q-1, m+y
	}
	if op == "%" {
		return exec.AsValue(int(m)), nil
	}
	return exec.AsValue(int(q)), nil
}

// power is Python's **: an integer for integers with a non-negative
// exponent, raising on overflow; a float otherwise, raising where Python
// raises (zero to a negative power, a float result too large).
func power(l, r *exec.Value) (*exec.Value, error) {
	if isInt(l) && isInt(r) && intOf(r) >= 0 {
		return intResult(pow64(intOf(l), intOf(r)))
	}
	x, y := floatOf(l), floatOf(r)
	if x == 0 && y < 0 {
		return nil, errZeroDivision
	}
	p := math.Pow(x, y)
	switch {
	case math.IsInf(p, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0):
		return nil, errors.New("the result is too large")
	case math.IsNaN(p) && !math.IsNaN(x) && !math.IsNaN(y):
		return nil, errors.New("a negative number to a fractional power has no real value")
	}
	return exec.AsValue(p), nil
}

func ordered[T cmp.Ordered](op string, a, b T) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

// guardNeg(v) is unary minus.
func guardNeg(b *budget, v *exec.Value, _ []*exec.Value) *exec.Value {
	switch {
	case v.IsFloat():
		return exec.AsValue(-v.Float())
	case isInt(v) && intOf(v) != math.MinInt64:
		return exec.AsValue(int(-intOf(v)))
	case isInt(v):
		b.fail(fmt.Errorf("-(%d): %w", intOf(v), errOverflow))
	default:
		b.fail(fmt.Errorf("-%s: bad operand type for unary -: '%s'", describe(v), pyType(v)))
	}
	return exec.AsValue(b.err)
}

func intResult(x int64, ok bool) (*exec.Value, error) {
	if !ok {
		return nil, errOverflow
	}
	return exec.AsValue(int(x)), nil
}

func add64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

func sub64(a, b int64) (int64, bool) {
	s := a - b
	return s, (s < a) == (b > 0)
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64 {
		return 0, false
	}
	c := a * b
	return c, c/b == a
}

func pow64(base, exp int64) (int64, bool) {
	switch base {
	case 0:
		if exp == 0 {
			return 1, true
		}
		return 0, true
	case 1:
		return 1, true
	case -1:
		return 1 - 2*(exp%2), true
	}
	result := int64(1)
	for ; exp > 0; exp-- { // |base| >= 2 overflows within 63 steps
		var ok bool
		if result, ok = mul64(result, base); !ok {
			return 0, false
		}
	}
	return result, true
}

// describe names a value in an error: a short one as it prints, a long one by type and size.
func describe(v *exec.Value) string {
	switch {
	case v.IsString() && len(v.String()) > 40:
		return fmt.Sprintf("a string of %d bytes", len(v.String()))
	case v.IsString():
		return fmt.Sprintf("%q", v.String())
	case v.IsList():
		return fmt.Sprintf("a list of %d items", v.Len())
	case v.IsDict():
		return fmt.Sprintf("a dict of %d items", v.Len())
	case v.IsNil():
		return "none" // or undefined
	case v.IsNumber() || v.IsBool():
		return v.String()
	}
	return "a value"
}
