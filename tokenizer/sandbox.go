package tokenizer

import (
	"fmt"
	"reflect"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// A chat template is a program from a model repository, and gonja runs
// templates without any limit: a macro that calls itself overflows the Go
// stack (a fatal error no recover catches), {{ 'x' * 3000000000 }} or a
// string doubled in a loop exhausts memory, range(10**9) or nested loops run
// for hours. transformers renders templates in Jinja2's sandbox (ranges
// capped, recursion and division by zero raise); this file and the sandbox_*
// files give gonja the same guarantee: a render finishes within the limits
// below or fails with an error saying which limit the template hit.
//
// gonja offers no hooks in its evaluator, so the template is instrumented
// instead (sandbox_ast.go): after parsing, every operator, call, literal,
// loop and block of the syntax tree is routed through the guard functions of
// this package, which count the render's work in a budget kept in the
// render's context; the filters, tests and methods are gonja's, each wrapped
// (sandbox_builtins.go); include, import, extends and block are refused.
const (
	maxTemplateBytes   = 1 << 20 // the template's source
	maxTemplateNesting = 64      // brackets and blocks nested in the source
	maxTagTokens       = 10000   // tokens in one {{ }} or {% %}

	maxRenderSteps = 100_000 // guarded events: calls, operators, loop items, blocks

	// The bytes a render may make, copy or compare, and the bytes of one
	// value (the rendered text included), grow with the render's input (its
	// messages and variables): a template may not amplify its input more.
	baseRenderBytes  = 64 << 20 // plus 16 per byte of input
	baseValueBytes   = 16 << 20 // plus 2 per byte of input
	methodValueBytes = 64 << 20 // a method's result: methods cannot reach the render's limits

	maxValueItems = 1 << 20 // elements of one list or dict
	maxValueDepth = 128     // lists and dicts nested in a value
	maxCallDepth  = 200     // macros, caller() and loop() calling each other
	maxRange      = 100_000 // range()'s length, as Jinja2's sandbox MAX_RANGE
	renderTimeout = 60 * time.Second
)

// budgetKey names the render's budget in the template context. Templates
// cannot name it: identifiers with the reserved prefix are refused at load.
const (
	reservedPrefix = "__meazo_"
	budgetKey      = reservedPrefix + "budget"
)

// budget counts one render's work against the limits. The first limit hit
// is kept: gonja drops some errors (a for loop's if filter, for one), so
// render reports it even when the engine carried on.
type budget struct {
	steps, bytes      int64
	valueCap, byteCap int64 // the limits of one value and of the whole render's bytes
	depth             int
	line              int // the template line of the last guard that ran
	start             time.Time
	err               error
	setValue          *exec.Value // the value a {% set %} is assigning (cycle check)
}

// newBudget is the budget of a render whose messages and variables hold
// input bytes.
func newBudget(input int64) *budget {
	return &budget{start: time.Now(), valueCap: baseValueBytes + 2*input, byteCap: baseRenderBytes + 16*input}
}

// charge counts steps events and n bytes of work.
func (b *budget) charge(steps, n int64) error {
	if b.err != nil {
		return b.err
	}
	b.steps += steps
	b.bytes += n
	switch {
	case b.steps > maxRenderSteps:
		b.fail(fmt.Errorf("the render exceeded %d steps (loop iterations, calls and operations)", maxRenderSteps))
	case b.bytes > b.byteCap:
		b.fail(fmt.Errorf("the render exceeded %s of string and list work (64 MiB and 16 times the messages' size)", mib(b.byteCap)))
	case b.steps&1023 == 0 && time.Since(b.start) > renderTimeout:
		b.fail(fmt.Errorf("the render ran longer than %v", renderTimeout))
	}
	return b.err
}

// fail keeps the render's first error, with the line being evaluated.
func (b *budget) fail(err error) {
	if b.err == nil {
		b.err = fmt.Errorf("line %d: %w", b.line, err)
	}
}

// budgetOf finds the render's budget in the evaluator's context.
func budgetOf(ctx *exec.Context) *budget {
	if v, ok := ctx.Get(budgetKey); ok {
		if b, ok := v.(*budget); ok {
			return b
		}
	}
	b := newBudget(0)
	b.fail(fmt.Errorf("internal error: the render has no budget"))
	return b
}

// admit measures v (sizeOf), charges the measuring and checks the per-value
// limits; the error says what v exceeded.
func (b *budget) admit(v *exec.Value) error {
	size, err := sizeOf(v, b.valueCap)
	if err != nil {
		b.fail(err)
		return err
	}
	return b.charge(1, size.bytes)
}

// valueSize is what sizeOf measures.
type valueSize struct {
	bytes int64 // strings' bytes plus 64 per element
	items int64 // elements of the largest list or dict
	depth int   // lists and dicts nested
	limit int64 // the most bytes it may have
}

// sizeOf measures a template value, walking into lists, dicts and
// namespaces. It fails when the value is larger than limit bytes or deeper
// than one value may be; a value that contains itself fails as too deep,
// before anything recurses through it without end.
func sizeOf(v *exec.Value, limit int64) (valueSize, error) {
	s := valueSize{limit: limit}
	if v == nil {
		return s, nil
	}
	if err := s.walk(v.Val, 0); err != nil {
		return s, err
	}
	return s, nil
}

var valueType = reflect.TypeFor[*exec.Value]()

func (s *valueSize) walk(v reflect.Value, depth int) error {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return nil
		}
		if v.Type() == valueType {
			v = v.Interface().(*exec.Value).Val
			continue
		}
		if v.Kind() == reflect.Pointer && v.Type().Elem() != reflect.TypeFor[exec.Dict]() {
			s.bytes += 8 // another object (a loop's state, a cycler): not data
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		s.bytes += int64(v.Len())
	case reflect.Slice, reflect.Array, reflect.Map:
		if err := s.enter(v.Len(), depth); err != nil {
			return err
		}
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				if err := s.walkPair(it.Key(), it.Value(), depth); err != nil {
					return err
				}
			}
			break
		}
		for i := 0; i < v.Len(); i++ {
			if err := s.walk(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		d, ok := v.Interface().(exec.Dict)
		if !ok {
			s.bytes += 8
			break
		}
		if err := s.enter(len(d.Pairs), depth); err != nil {
			return err
		}
		for _, p := range d.Pairs {
			if err := s.walkPair(reflect.ValueOf(p.Key), reflect.ValueOf(p.Value), depth); err != nil {
				return err
			}
		}
	default:
		s.bytes += 8
	}
	if s.bytes > s.limit {
		return fmt.Errorf("a value grew past %s, the limit of one value", mib(s.limit))
	}
	return nil
}

// enter counts a list or dict of n elements at depth.
func (s *valueSize) enter(n, depth int) error {
	if depth >= maxValueDepth {
		return fmt.Errorf("a value nests lists or dicts more than %d deep (or contains itself)", maxValueDepth)
	}
	if int64(n) > maxValueItems {
		return fmt.Errorf("a list or dict has %d elements, more than %d", n, maxValueItems)
	}
	s.depth = max(s.depth, depth+1)
	s.items = max(s.items, int64(n))
	s.bytes += 64 * int64(n) // an element costs gonja about as much as 64 bytes
	return nil
}

func (s *valueSize) walkPair(k, v reflect.Value, depth int) error {
	if err := s.walk(k, depth+1); err != nil {
		return err
	}
	return s.walk(v, depth+1)
}

// mib shows a size limit in MiB.
func mib(n int64) string { return fmt.Sprintf("%.4g MiB", float64(n)/(1<<20)) }
