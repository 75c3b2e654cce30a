package tokenizer

import (
	"strings"
	"testing"
)

// renderExpr renders {{ expr }} alone.
func renderExpr(t *testing.T, expr string) (string, error) {
	t.Helper()
	tpl, err := newChatTemplate("{{ " + expr + " }}")
	if err != nil {
		t.Fatalf("{{ %s }}: %v", expr, err)
	}
	return tpl.render([]Message{{Role: "user", Content: "hello"}}, nil, "")
}

// TestSandboxTypeErrorsAsJinja: what Python's operators refuse, the
// template refuses with Python's message (each message is what jinja2
// 3.1.6's ImmutableSandboxedEnvironment, transformers' renderer, raised for
// the same expression); gonja rendered "x5", "0", "True", a sorted list.
func TestSandboxTypeErrorsAsJinja(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"'x' + 5", `can only concatenate str (not "int") to str`},
		{"'5' + 5", `can only concatenate str (not "int") to str`},
		{"5 + 'x'", "unsupported operand type(s) for +: 'int' and 'str'"},
		{"5.5 + '1'", "unsupported operand type(s) for +: 'float' and 'str'"},
		{"'a' + [1]", `can only concatenate str (not "list") to str`},
		{"[1] + 'a'", `can only concatenate list (not "str") to list`},
		{"{'a': 1} + {'b': 2}", "unsupported operand type(s) for +: 'dict' and 'dict'"},
		{"none + 1", "unsupported operand type(s) for +: 'NoneType' and 'int'"},
		{"1 + none", "unsupported operand type(s) for +: 'int' and 'NoneType'"},
		{"'abc'|first + 1", `can only concatenate str (not "int") to str`},
		{"'x' * 'y'", "can't multiply sequence by non-int of type 'str'"},
		{"'a' * 2.0", "can't multiply sequence by non-int of type 'float'"},
		{"[1] * 2.0", "can't multiply sequence by non-int of type 'float'"},
		{"'ab' - 1", "unsupported operand type(s) for -: 'str' and 'int'"},
		{"1 - 'a'", "unsupported operand type(s) for -: 'int' and 'str'"},
		{"'a' / 2", "unsupported operand type(s) for /: 'str' and 'int'"},
		{"'a' // 2", "unsupported operand type(s) for //: 'str' and 'int'"},
		{"2 ** 'a'", "unsupported operand type(s) for ** or pow(): 'int' and 'str'"},
		{"- 'a'", "bad operand type for unary -: 'str'"},
		{"- none", "bad operand type for unary -: 'NoneType'"},
		{"- [1]", "bad operand type for unary -: 'list'"},
		{"1 < 'a'", "'<' not supported between instances of 'int' and 'str'"},
		{"'a' < 1", "'<' not supported between instances of 'str' and 'int'"},
		{"none < 1", "'<' not supported between instances of 'NoneType' and 'int'"},
		{"[1, 'a'] < [1, 2]", "'<' not supported between instances of 'str' and 'int'"},
		{"5 > 3 < 'x'", "'<' not supported between instances of 'int' and 'str'"},
		{"[1, 'a']|sort", "'<' not supported between instances of 'str' and 'int'"},
		{"[1, none]|sort", "'<' not supported between instances of 'NoneType' and 'int'"},
		{"[{'n': 1}, {'n': 'a'}]|sort(attribute='n')", "'<' not supported between instances of 'str' and 'int'"},
		{"[1, 'a']|max", "'>' not supported between instances of 'str' and 'int'"},
		{"[1, 'a']|min", "'<' not supported between instances of 'str' and 'int'"},
		{"[1, 'a']|sum", "unsupported operand type(s) for +: 'int' and 'str'"},
		{"['a', 'b']|sum", "unsupported operand type(s) for +: 'int' and 'str'"},
		{"[1, 2]|sum(start='a')", "sum() can't sum strings [use ''.join(seq) instead]"},
		{"1 in 'abc'", "'in <string>' requires string as left operand, not int"},
		{"none in 'abc'", "'in <string>' requires string as left operand, not NoneType"},
		{"'a' in 1", "argument of type 'int' is not iterable"},
		{"'a' not in 1.5", "argument of type 'float' is not iterable"},
	}
	for _, c := range cases {
		got, err := renderExpr(t, c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("{{ %s }} = %q, %v; Jinja2 raises TypeError: %s", c.expr, got, err, c.want)
		}
	}
}

// TestSandboxTypesMatchJinja: what Python's operators accept renders as
// Jinja2 3.1.6 renders it: bool is an int, comparisons chain, sum adds by
// Python's +.
func TestSandboxTypesMatchJinja(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"True + 1", "2"}, {"True * 'ab'", "ab"}, {"'ab' * True", "ab"}, {"True - 0.5", "0.5"},
		{"2.5 * True", "2.5"}, {"- True", "-1"}, {"(2 > 1) + (3 > 1)", "2"},
		{"1 == 1.0", "True"}, {"1 == True", "True"}, {"1 == 'a'", "False"}, {"'a' != 1", "True"},
		{"none == none", "True"}, {"[1, 2] == [1, 2]", "True"}, {"1 <= 1.0", "True"}, {"2 >= True", "True"},
		{"[1] < [2]", "True"}, {"[1, 2] < [1, 2, 0]", "True"},
		// Chained comparisons, as Python's; a parenthesised one compares a bool.
		{"1 < 2 < 2", "False"}, {"(1 < 2) < 2", "True"}, {"((1 < 2)) < 2", "True"}, {"(1 < 2 < 2)", "False"},
		{"'a' < 'b' < 'a'", "False"}, {"1 < 2 > 0", "True"}, {"0 <= 5 < 10 == 1", "False"},
		{"1 + 1 == 2 < 3", "True"}, {"5 > 6 < 'x'", "False"}, {"1 == (1) != 2", "True"},
		{"(1 == 1) != (2 == 3)", "True"}, {"('a' == 'a') == True", "True"}, {"2 ** 3 ** 2", "64"},
		{"[0.1, 0.2]|sum", "0.30000000000000004"}, {"[1.0, 2.0]|sum", "3.0"}, {"[1, 2]|sum", "3"},
		{"[]|sum", "0"}, {"[{'n': 1}, {'n': 2}]|sum(attribute='n')", "3"}, {"[1, 2]|sum(start=10)", "13"},
		{"[[1], [2]]|sum(start=[])", "[1, 2]"}, {"[True, True]|sum", "2"},
		{"[3, 1, 2]|max", "3"}, {"['b', 'a']|min", "a"}, {"[[2], [1]]|sort", "[[1], [2]]"},
		{"[{'n': 2}, {'n': 1}]|sort(attribute='n')|map(attribute='n')|list", "[1, 2]"},
		{"messages[0]|dictsort", "[('content', 'hello'), ('role', 'user')]"},
		{"'b' in 'abc'", "True"}, {"'role' in messages[0]", "True"}, {"1 in [1, 2]", "True"}, {"'x' not in 'abc'", "True"},
		{"'a' in messages[0].nothing", "False"},
	}
	for _, c := range cases {
		got, err := renderExpr(t, c.expr)
		if err != nil || got != c.want {
			t.Errorf("{{ %s }} = %q, %v; Jinja2 renders %q", c.expr, got, err, c.want)
		}
	}
}
