package tokenizer

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// checkSource refuses, before gonja parses it, a template whose parse could
// itself exhaust the stack or run long: gonja's parser recurses once per
// nested bracket or block, and evaluates a chain of operators recursively.
// It also refuses identifiers with the sandbox's reserved prefix, so a
// template cannot replace the guard functions.
func checkSource(src string, cfg *config.Config) error {
	if len(src) > maxTemplateBytes {
		return fmt.Errorf("the template has %d bytes, more than %d", len(src), maxTemplateBytes)
	}
	stream := tokens.LexAll(src, cfg)
	brackets, blocks, inTag := 0, 0, 0
	var tag []*tokens.Token
	for ; !stream.End(); stream.Next() {
		tok := stream.Current()
		switch tok.Type {
		case tokens.Error:
			return nil // gonja's parser reports it, with its position
		case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
			brackets++
		case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			brackets--
		case tokens.VariableBegin, tokens.BlockBegin:
			inTag, tag = 0, tag[:0]
		case tokens.BlockEnd:
			blocks += blockNesting(tag)
		case tokens.Name:
			if strings.HasPrefix(tok.Val, reservedPrefix) {
				return fmt.Errorf("line %d: the name %q is reserved", tok.Line, tok.Val)
			}
		}
		tag = append(tag, tok)
		if inTag++; inTag > maxTagTokens {
			return fmt.Errorf("line %d: a tag has more than %d tokens", tok.Line, maxTagTokens)
		}
		if brackets > maxTemplateNesting || blocks > maxTemplateNesting {
			return fmt.Errorf("line %d: brackets or blocks nest more than %d deep", tok.Line, maxTemplateNesting)
		}
	}
	return nil
}

// blockOpeners are the tags with an end tag; set has one only without "=".
var blockOpeners = map[string]bool{
	"if": true, "for": true, "macro": true, "call": true, "filter": true, "with": true,
	"raw": true, "autoescape": true, "trans": true, "block": true, "set": true,
}

// blockNesting is +1 for a tag that opens a block, -1 for an end tag.
func blockNesting(tag []*tokens.Token) int {
	if len(tag) < 2 || tag[1].Type != tokens.Name {
		return 0
	}
	name := tag[1].Val
	if strings.HasPrefix(name, "end") {
		return -1
	}
	if name == "set" {
		for _, t := range tag[2:] {
			if t.Type == tokens.Assign {
				return 0
			}
		}
	}
	if blockOpeners[name] {
		return 1
	}
	return 0
}

// instrument rewrites a parsed template so that its evaluation goes through
// the guards (sandbox_guards.go), each applied as a filter (x|guard(…)):
//   - every operator but and/or is computed by guardOp (with Python's type
//     rules, so comparisons with a literal too), one guard for a chain
//     a + b + c; unary minus by guardNeg;
//   - list, tuple and dict literals, slices and every call's result pass
//     through guardValue, and a method call's receiver too;
//   - a call of a name (a macro, caller, loop) calls what guardCallee
//     returns, which counts the call depth;
//   - what {{ }} prints passes through guardText; a for loop's iterable
//     through guardIter; a {% set %}'s value and target through
//     guardSetValue and guardSetTarget (no value may contain itself);
//   - the template and each body that may run many times (a loop's, a
//     macro's, a call block's) start with a call of guardEnter, which counts
//     the text and nodes they run.
//
// The rewrite walks the whole tree by reflection, so that it reaches the
// expressions of every control structure, including those gonja keeps in
// unexported fields (set, with, filter).
func instrument(root *nodes.Template, src string, cfg *config.Config) error {
	w := &rewriter{done: map[nodes.Node]nodes.Node{}, chains: map[*nodes.FilteredExpression]opKind{},
		groups: closedGroups(src, cfg)}
	w.node(root)
	return w.err
}

type rewriter struct {
	done   map[nodes.Node]nodes.Node            // each node's replacement (itself if none)
	chains map[*nodes.FilteredExpression]opKind // guardOp calls that a following operator of the same kind extends
	groups map[int]int                          // closedGroups
	depth  int
	err    error
}

// node instruments n's children, then returns what replaces n.
func (w *rewriter) node(n nodes.Node) nodes.Node {
	if r, ok := w.done[n]; ok {
		return r
	}
	w.done[n] = n // a node reached again while walking it stays as it is
	if w.depth++; w.depth > 4*maxTagTokens {
		w.err = fmt.Errorf("the template's syntax tree is more than %d deep", 4*maxTagTokens)
		return n
	}
	w.fields(reflect.ValueOf(n).Elem())
	w.depth--
	r := w.replace(n)
	w.done[n] = r
	return r
}

// fields walks the fields of a node's struct, exported or not.
func (w *rewriter) fields(s reflect.Value) {
	for i := 0; i < s.NumField(); i++ {
		f := s.Field(i)
		if !f.CanSet() {
			f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		}
		w.value(f)
	}
}

var (
	nodeType  = reflect.TypeFor[nodes.Node]()
	tokenType = reflect.TypeFor[*tokens.Token]()
)

// value walks a settable field, element or copy of a map value.
func (w *rewriter) value(v reflect.Value) {
	if w.err != nil || v.Type() == tokenType {
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return
		}
		n, ok := v.Interface().(nodes.Node)
		if !ok || !isTreePackage(reflect.TypeOf(n)) || reflect.TypeOf(n).Kind() != reflect.Pointer {
			return
		}
		r := w.node(n)
		if v.Kind() == reflect.Interface && r != n && reflect.TypeOf(r).AssignableTo(v.Type()) {
			v.Set(reflect.ValueOf(r))
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			w.value(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(it.Value().Type()).Elem()
			e.Set(it.Value())
			w.value(e)
			v.SetMapIndex(it.Key(), e)
		}
	}
}

// isTreePackage says whether t is one of the syntax tree's types: gonja's
// nodes and control structures, and this package's wrappers of them.
func isTreePackage(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := t.PkgPath()
	return strings.HasPrefix(p, "github.com/nikolalohinski/gonja/v2/nodes") ||
		strings.HasPrefix(p, "github.com/nikolalohinski/gonja/v2/builtins/control_structures") ||
		p == reflect.TypeFor[sandboxMacro]().PkgPath()
}

// replace returns the instrumented form of n, whose children are done.
func (w *rewriter) replace(n nodes.Node) nodes.Node {
	switch n := n.(type) {
	case *nodes.BinaryExpression:
		op := n.Operator.Token
		if op.Type == tokens.And || op.Type == tokens.Or {
			return n
		}
		opName := &nodes.String{Location: op, Val: op.Val}
		kind := kindOfOp(op.Type)
		if left, ok := n.Left.(*nodes.FilteredExpression); ok && w.chains[left] == kind && !w.grouped(left, op) {
			// a + b + c: one guard for the chain, which it evaluates left
			// to right; a < b < c: one guard, which compares as Python
			// chains (a < b and b < c), where (a < b) != c compares a bool
			f := left.Filters[0]
			line := f.Args[len(f.Args)-1]
			f.Args = append(f.Args[:len(f.Args)-1], opName, n.Right, line)
			return left
		}
		c := guardCall(op, guardOpName, n.Left, opName, n.Right)
		w.chains[c] = kind
		return c
	case *nodes.UnaryExpression:
		if n.Negative {
			return guardCall(n.Operator, guardNegName, n.Term)
		}
	case *nodes.List, *nodes.Tuple, *nodes.Dict, *nodes.GetSlice:
		return guardCall(n.Position(), guardValueName, n)
	case *nodes.GetItem:
		n.Node = guardCall(n.Location, guardItemsName, n.Node)
	case *nodes.Call:
		if name, ok := n.Func.(*nodes.Name); ok {
			n.Func = guardCall(name.Name, guardCalleeName, name)
		}
		if n.Parent != nil {
			n.Parent = guardCall(n.Location, guardValueName, n.Parent)
		}
		return guardCall(n.Location, guardValueName, n)
	case *nodes.Output:
		if !isLiteral(n.Expression) {
			n.Expression = guardCall(n.Start, guardTextName, n.Expression)
		}
		if n.Alternative != nil && !isLiteral(n.Alternative) {
			n.Alternative = guardCall(n.Start, guardTextName, n.Alternative)
		}
	case *nodes.Template:
		n.Nodes = withEnter(n.Nodes)
	default:
		w.controlStructure(n)
	}
	return n
}

// closedGroups maps the position of each token that follows a closing
// parenthesis to the position of the parenthesis that opened it: gonja's
// syntax tree keeps no parentheses, and (a == b) != c differs from
// a == b != c (Python chains the second).
func closedGroups(src string, cfg *config.Config) map[int]int {
	groups := map[int]int{}
	var open []int
	after := -1 // the opening of the parenthesis just closed
	for stream := tokens.LexAll(src, cfg); !stream.End(); stream.Next() {
		tok := stream.Current()
		if tok.Type == tokens.Whitespace {
			continue
		}
		if after >= 0 {
			groups[tok.Pos], after = after, -1
		}
		switch tok.Type {
		case tokens.LeftParenthesis:
			open = append(open, tok.Pos)
		case tokens.RightParenthesis:
			if len(open) > 0 {
				after, open = open[len(open)-1], open[:len(open)-1]
			}
		}
	}
	return groups
}

// grouped says whether the operand before op is a parenthesised group
// that holds the whole of left, as in (a == b) != c.
func (w *rewriter) grouped(left nodes.Node, op *tokens.Token) bool {
	opened, ok := w.groups[op.Pos]
	start := left.Position()
	return ok && start != nil && opened < start.Pos
}

// opKind tells the operators that chain apart: arithmetic (a + b + c is
// (a + b) + c) and comparisons (a < b < c is a < b and b < c).
type opKind int

const (
	notChained opKind = iota
	arithmetic
	comparison
)

func kindOfOp(t tokens.Type) opKind {
	if isComparison(t) {
		return comparison
	}
	return arithmetic
}

func isComparison(t tokens.Type) bool {
	switch t {
	case tokens.Equals, tokens.Ne, tokens.LowerThan, tokens.LowerThanOrEqual, tokens.GreaterThan, tokens.GreaterThanOrEqual:
		return true
	}
	return false
}

func isLiteral(n nodes.Node) bool {
	switch n.(type) {
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.None:
		return true
	}
	return false
}

// controlStructure instruments what the generic walk reached but cannot
// tell apart: a for loop's iterable, set's value and target, and the bodies
// that run more than once per run of their block (a loop's, a macro's, a
// call block's), which are charged each time they start.
func (w *rewriter) controlStructure(n nodes.Node) {
	s := reflect.ValueOf(n)
	if s.Kind() != reflect.Pointer || s.Elem().Kind() != reflect.Struct {
		return
	}
	s = s.Elem()
	field := func(name string) reflect.Value {
		f := s.FieldByName(name)
		if !f.IsValid() || f.IsNil() {
			return reflect.Value{}
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	wrap := func(f reflect.Value, name string) {
		if f.IsValid() {
			e := f.Interface().(nodes.Expression)
			f.Set(reflect.ValueOf(guardCall(e.Position(), name, e)))
		}
	}
	enter := func(f reflect.Value) {
		if f.IsValid() {
			body := f.Interface().(*nodes.Wrapper)
			body.Nodes = withEnter(body.Nodes)
		}
	}
	switch s.Type().Name() {
	case "ForControlStructure":
		wrap(field("ObjectEvaluator"), guardIterName)
		enter(field("BodyWrapper"))
	case "CallControlStructure":
		enter(field("Body"))
	case "MacroControlStructure":
		enter(field("Wrapper"))
	case "SetControlStructure":
		switch t := field("target").Interface().(type) {
		case *nodes.GetAttribute:
			t.Node = guardCall(t.Location, guardSetTargetName, t.Node)
		case *nodes.GetItem:
			// What is assigned to is the container itself, not the
			// pyList that reads its items (replace).
			if f, ok := t.Node.(*nodes.FilteredExpression); ok && f.Filters[0].Name == guardItemsName {
				t.Node = f.Expression
			}
			t.Node = guardCall(t.Location, guardSetTargetName, t.Node)
		default:
			return // a name: no value can come to contain itself
		}
		wrap(field("expression"), guardSetValueName)
		wrap(field("alternative"), guardSetValueName)
	}
}

// guardCall is in|name(args…, line): the guard filter name applied to in.
func guardCall(at *tokens.Token, name string, in nodes.Node, args ...nodes.Node) *nodes.FilteredExpression {
	if at == nil {
		at = &tokens.Token{Type: tokens.Name}
	}
	f := &nodes.FilterCall{Token: &tokens.Token{Type: tokens.Name, Val: name, Line: at.Line, Col: at.Col, Pos: at.Pos}, Name: name,
		Kwargs: map[string]nodes.Expression{}}
	for _, a := range args {
		f.Args = append(f.Args, a)
	}
	f.Args = append(f.Args, &nodes.Integer{Location: at, Val: at.Line})
	return &nodes.FilteredExpression{Expression: in, Filters: []*nodes.FilterCall{f}}
}

// withEnter puts a call of guardEnter before a body's nodes: it charges the
// text the body writes and the nodes it runs, down to the bodies that are
// charged on their own (nested loops, macros, call blocks).
func withEnter(list []nodes.Node) []nodes.Node {
	if len(list) == 0 {
		return list
	}
	text, count := bodyCost(list)
	at := list[0].Position()
	enter := &nodes.Output{Start: at, End: at, Expression: guardCall(at, guardEnterName,
		&nodes.Integer{Location: at, Val: text}, &nodes.Integer{Location: at, Val: count})}
	return append([]nodes.Node{enter}, list...)
}

// bodyCost sums the text and the nodes of list and of the blocks inside it
// (both branches of an if), but not of the bodies charged on their own.
func bodyCost(list []nodes.Node) (text, count int) {
	for _, n := range list {
		count++
		switch n := n.(type) {
		case *nodes.Data:
			text += len(n.Data.Val)
		case *nodes.ControlStructureBlock:
			for _, body := range innerBodies(n.ControlStructure) {
				t, c := bodyCost(body.Nodes)
				text, count = text+t, count+c
			}
		}
	}
	return text, count
}

// innerBodies are the bodies of a block that run at most once when it runs
// (if branches, a set or filter block): not those of loops, macros or call
// blocks, which withEnter charges on each start.
func innerBodies(cs nodes.ControlStructure) []*nodes.Wrapper {
	v := reflect.ValueOf(cs)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	switch v.Elem().Type().Name() {
	case "ForControlStructure", "CallControlStructure", "MacroControlStructure", "sandboxMacro":
		return nil
	}
	var out []*nodes.Wrapper
	s := v.Elem()
	for i := 0; i < s.NumField(); i++ {
		f := s.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch body := f.Interface().(type) {
		case *nodes.Wrapper:
			if body != nil {
				out = append(out, body)
			}
		case []*nodes.Wrapper:
			out = append(out, body...)
		}
	}
	return out
}
