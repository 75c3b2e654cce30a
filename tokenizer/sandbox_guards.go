package tokenizer

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The guards the instrumented template applies (sandbox_ast.go), as filters
// of reserved names: gonja calls a filter directly, where a function call
// costs it reflection. Each guard takes its input and arguments already
// evaluated, counts them in the render's budget and returns an error value
// once a limit is hit; its last argument is the template line, for errors.
const (
	guardEnterName     = reservedPrefix + "enter"
	guardTextName      = reservedPrefix + "text"
	guardValueName     = reservedPrefix + "value"
	guardIterName      = reservedPrefix + "iter"
	guardCalleeName    = reservedPrefix + "callee"
	guardOpName        = reservedPrefix + "op"
	guardNegName       = reservedPrefix + "neg"
	guardSetValueName  = reservedPrefix + "set_value"
	guardSetTargetName = reservedPrefix + "set_target"
	guardItemsName     = reservedPrefix + "items"
)

// guardFunc is a guard: in is the guarded value, args the guard's other
// arguments (the line removed).
type guardFunc = func(b *budget, in *exec.Value, args []*exec.Value) *exec.Value

var guards = map[string]guardFunc{
	guardEnterName:     guardEnter,
	guardTextName:      admitted,
	guardValueName:     admitted,
	guardIterName:      guardIter,
	guardCalleeName:    guardCallee,
	guardOpName:        guardOp,
	guardNegName:       guardNeg,
	guardSetValueName:  guardSetValue,
	guardSetTargetName: guardSetTarget,
	guardItemsName:     guardItems,
}

// guardFilters are the guards as the filters the instrumented template calls.
func guardFilters() map[string]exec.FilterFunction {
	out := map[string]exec.FilterFunction{}
	for name, g := range guards {
		out[name] = func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			if in.IsError() {
				return in
			}
			b := budgetOf(e.Environment.Context)
			b.line = p.Args[len(p.Args)-1].Integer()
			return g(b, in, p.Args[:len(p.Args)-1])
		}
	}
	return out
}

// guardEnter starts a body: in is its text's length, args[0] its nodes.
func guardEnter(b *budget, in *exec.Value, args []*exec.Value) *exec.Value {
	if err := b.charge(int64(args[0].Integer())+1, int64(in.Integer())); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsValue("")
}

// admitted measures what {{ }} prints, a literal, a slice or a call's result.
func admitted(b *budget, v *exec.Value, _ []*exec.Value) *exec.Value {
	if err := b.admit(v); err != nil {
		return exec.AsValue(err)
	}
	return v
}

// guardIter is a for loop's iterable: gonja first copies all its items, so
// each is a step, and a string iterates by character.
func guardIter(b *budget, v *exec.Value, _ []*exec.Value) *exec.Value {
	if err := b.admit(v); err != nil {
		return exec.AsValue(err)
	}
	n := v.Len()
	if int64(n) > maxValueItems {
		b.fail(fmt.Errorf("a for loop over %d items, more than %d", n, maxValueItems))
		return exec.AsValue(b.err)
	}
	if err := b.charge(int64(n), 0); err != nil {
		return exec.AsValue(err)
	}
	return v
}

// guardedCall is a macro, caller() or a recursive loop() that counts the
// render's call depth. It is a type of its own so that a macro called by
// name is not wrapped twice.
type guardedCall func(*exec.VarArgs) *exec.Value

func guard(b *budget, f func(*exec.VarArgs) *exec.Value) guardedCall {
	return func(a *exec.VarArgs) *exec.Value {
		if err := b.charge(1, 0); err != nil {
			return exec.AsValue(err)
		}
		if b.depth >= maxCallDepth {
			b.fail(fmt.Errorf("macros, caller() or loop() call each other more than %d deep", maxCallDepth))
			return exec.AsValue(b.err)
		}
		b.depth++
		defer func() { b.depth-- }()
		return f(a)
	}
}

// guardCallee is what a call of a name calls: a template's macro, a
// caller() or a loop() is wrapped to count the depth.
func guardCallee(b *budget, v *exec.Value, _ []*exec.Value) *exec.Value {
	if err := b.charge(1, 0); err != nil {
		return exec.AsValue(err)
	}
	if v.IsNil() {
		return v
	}
	switch f := v.Interface().(type) {
	case guardedCall:
		return v
	case exec.Macro:
		return exec.AsValue(guard(b, f))
	case func(*exec.VarArgs) *exec.Value:
		return exec.AsValue(guard(b, f))
	}
	return v
}

// guardSetValue is the value a {% set %} assigns to an attribute or item;
// guardSetTarget the namespace or dict it assigns into (evaluated after the
// value). A value that would then contain itself is refused: gonja would
// recurse through it without end when printing or comparing it.
func guardSetValue(b *budget, v *exec.Value, _ []*exec.Value) *exec.Value {
	v = admitted(b, v, nil)
	b.setValue = v
	return v
}

func guardSetTarget(b *budget, target *exec.Value, _ []*exec.Value) *exec.Value {
	value := b.setValue
	b.setValue = nil
	if value != nil && contains(value.Val, target.Val, 0) {
		b.fail(errors.New("a {% set %} would make a value contain itself"))
		return exec.AsValue(b.err)
	}
	return target
}

// contains says whether the map or dict target is v or inside v (v was
// measured, so it is no deeper than maxValueDepth).
func contains(v, target reflect.Value, depth int) bool {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return false
		}
		if v.Type() == valueType {
			v = v.Interface().(*exec.Value).Val
			continue
		}
		if v.Kind() == reflect.Pointer && same(v, target) {
			return true
		}
		v = v.Elem()
	}
	if !v.IsValid() || depth > maxValueDepth {
		return false
	}
	switch v.Kind() {
	case reflect.Map:
		if same(v, target) {
			return true
		}
		for it := v.MapRange(); it.Next(); {
			if contains(it.Value(), target, depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if contains(v.Index(i), target, depth+1) {
				return true
			}
		}
	case reflect.Struct:
		if d, ok := v.Interface().(exec.Dict); ok {
			for _, p := range d.Pairs {
				if contains(reflect.ValueOf(p.Value), target, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// same says whether v and target are the same map or the same *Dict.
func same(v, target reflect.Value) bool {
	for target.IsValid() && target.Kind() == reflect.Interface {
		target = target.Elem()
	}
	if !target.IsValid() || v.Kind() != target.Kind() || v.Type() != target.Type() {
		return false
	}
	return (v.Kind() == reflect.Map || v.Kind() == reflect.Pointer) && v.Pointer() == target.Pointer()
}

// sandboxEnvironment is gonja's default environment with the guards:
// filters, tests and methods wrapped (sandbox_builtins.go), range and lipsum
// bounded, macros counting their depth, and the tags that load other
// templates refused (transformers renders a chat template alone, with no
// loader, so they cannot work there either).
func sandboxEnvironment() *exec.Environment {
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("range", boundedRange)
	ctx.Set("lipsum", boundedLipsum(ctx))
	structures := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{})
	structures.Update(builtins.ControlStructures)
	for _, name := range []string{"include", "import", "from", "extends", "block"} {
		_ = structures.Replace(name, refusedTag(name))
	}
	macro, _ := builtins.ControlStructures.Get("macro")
	_ = structures.Replace("macro", func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := macro(p, args)
		if err != nil {
			return nil, err
		}
		return &sandboxMacro{Inner: cs.(*controlStructures.MacroControlStructure)}, nil
	})
	return &exec.Environment{
		Context:           ctx,
		Filters:           sandboxFilters(guardFilters()),
		Tests:             sandboxTests(),
		ControlStructures: structures,
		Methods:           sandboxMethods(),
	}
}

func refusedTag(name string) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		return nil, args.Error(fmt.Sprintf("{%% %s %%} is not available: a chat template is rendered alone, as transformers renders it", name), p.Current())
	}
}

// sandboxMacro defines a macro that counts the call depth when called, by
// any name or through a namespace.
type sandboxMacro struct {
	Inner *controlStructures.MacroControlStructure
}

func (m *sandboxMacro) Position() *tokens.Token { return m.Inner.Position() }
func (m *sandboxMacro) String() string          { return m.Inner.String() }

func (m *sandboxMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := m.Inner.Execute(r, tag); err != nil {
		return err
	}
	ctx := r.Environment.Context
	if f, ok := ctx.Get(m.Inner.Name); ok {
		if f, ok := f.(exec.Macro); ok {
			ctx.Set(m.Inner.Name, guard(budgetOf(ctx), f))
		}
	}
	return nil
}

// boundedRange is range() returning a list of at most maxRange numbers
// (gonja's sends them on a channel from a goroutine that a break leaks).
func boundedRange(e *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return nil, exec.ErrInvalidCall(errors.New("range() takes integers: [start, ]stop[, step]"))
		}
		ints[i] = int64(a.Integer())
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, exec.ErrInvalidCall(errors.New("range() takes integers: [start, ]stop[, step]"))
	}
	if step == 0 {
		return nil, exec.ErrInvalidCall(errors.New("range() step must not be zero"))
	}
	n := rangeLen(start, stop, step)
	if n > maxRange {
		b := budgetOf(e.Environment.Context)
		b.fail(fmt.Errorf("range() of %d numbers, more than %d", n, maxRange))
		return nil, b.err
	}
	out := make([]int, 0, n)
	for i := range int64(n) {
		out = append(out, int(start+i*step))
	}
	return out, nil
}

// rangeLen is len(range(start, stop, step)), which may not fit in an int64.
func rangeLen(start, stop, step int64) uint64 {
	lo, hi, s := start, stop, uint64(step)
	if step < 0 {
		lo, hi, s = stop, start, uint64(-step) // -MinInt64 wraps to 1<<63, as wanted
	}
	if hi <= lo {
		return 0
	}
	return (uint64(hi)-uint64(lo)-1)/s + 1 // the difference is exact modulo 1<<64
}

// boundedLipsum is lipsum() with its size checked first.
func boundedLipsum(ctx *exec.Context) any {
	lipsum, _ := ctx.Get("lipsum")
	f := lipsum.(func(*exec.Evaluator, *exec.VarArgs) *exec.Value)
	return func(e *exec.Evaluator, params *exec.VarArgs) *exec.Value {
		n, hi := int64(5), int64(100)
		if v, ok := argument(params, -1, "n"); ok {
			n = int64(v.Integer())
		}
		if v, ok := argument(params, -1, "max"); ok {
			hi = int64(v.Integer())
		}
		if n < 0 || hi < 0 || n > maxValueItems || hi > maxValueItems || n*hi*16 > baseValueBytes {
			b := budgetOf(e.Environment.Context)
			b.fail(fmt.Errorf("lipsum(n=%d, max=%d) would exceed %s, the limit of one value", n, hi, mib(baseValueBytes)))
			return exec.AsValue(b.err)
		}
		return f(e, params)
	}
}

// argument is a call's argument by position (pos < 0: keyword only) or name.
func argument(p *exec.VarArgs, pos int, name string) (*exec.Value, bool) {
	if v, ok := p.KwArgs[name]; ok {
		return v, true
	}
	if pos >= 0 && pos < len(p.Args) {
		return p.Args[pos], true
	}
	return nil, false
}

// guardItems is the container x of an item read x[i]: a list is handed on
// as a pyList and a string as a pyString, which gonja indexes through their
// GetItem; anything else as it is.
func guardItems(_ *budget, in *exec.Value, _ []*exec.Value) *exec.Value {
	switch {
	case in.IsList():
		return exec.AsValue(pyList{in})
	case in.IsString():
		return exec.AsValue(pyString{in})
	}
	return in
}

// pyList is a list whose items are read as Python reads them. gonja's own
// bound check is off by one for negative indices: it reads x[-n] of an
// n-item list as undefined (['a'][-1] is empty, not 'a'), and Qwen3's
// template fails on an answer holding "</think>" without "<think>" (its
// content.split('</think>')[0]...split('<think>')[-1] is then undefined).
type pyList struct{ list *exec.Value }

// GetItem is exec.ItemGetter's: x[i] for -n <= i < n, counting from the
// end for a negative i; anything else is gonja's.
func (p pyList) GetItem(key any) (*exec.Value, bool) {
	if i, ok := key.(int); ok && i < 0 && i >= -p.list.Len() {
		key = p.list.Len() + i
	}
	return p.list.GetItem(key)
}

// pyString is a string whose characters are read as Python reads them: by
// code point, counting from the end for a negative index, where gonja
// reads bytes ('é'[0] was half of its UTF-8) with its bound check off by
// one ('a'[-1] was undefined). Out of range, undefined, as Jinja2's
// getitem makes an IndexError.
type pyString struct{ s *exec.Value }

// GetItem is exec.ItemGetter's: s[i] for an int i; anything else is
// gonja's.
func (p pyString) GetItem(key any) (*exec.Value, bool) {
	i, ok := key.(int)
	if !ok {
		return p.s.GetItem(key)
	}
	r := []rune(p.s.String())
	if i < 0 {
		i += len(r)
	}
	if i < 0 || i >= len(r) {
		return exec.AsValue(nil), false
	}
	return exec.AsValue(string(r[i])), true
}
