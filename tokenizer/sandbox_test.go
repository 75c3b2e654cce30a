package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// attack is a template a hostile or careless model repository could ship,
// and the words the error must contain (one of them, separated by |).
type attack struct{ name, src, want string }

func (a attack) matches(err error) bool {
	for _, w := range strings.Split(a.want, "|") {
		if strings.Contains(err.Error(), w) {
			return true
		}
	}
	return false
}

const (
	tooDeep    = "call each other more than 200 deep"
	tooLong    = "exceeded 100000 steps"
	tooBig     = "the limit of one value|exceeded 64 MiB" // whichever a growing value meets first
	zeroDiv    = "division by zero"
	overflow   = "does not fit in 64 bits"
	selfNested = "contain itself"
	notLoaded  = "is not available: a chat template is rendered alone"
)

// recursionAttacks: every way a template can call itself, directly or not.
func recursionAttacks() []attack {
	return []attack{
		{"macro calls itself", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, tooDeep},
		{"two macros call each other", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, tooDeep},
		{"macro called through a namespace", `{% macro f() %}{{ ns.g() }}{% endmacro %}{% set ns = namespace(g=f) %}{{ f() }}`, tooDeep},
		{"macro passed to itself", `{% macro f(g) %}{{ g(g) }}{% endmacro %}{{ f(f) }}`, tooDeep},
		{"macro in its own default", `{% macro f(x=f()) %}{% endmacro %}{{ f() }}`, tooDeep},
		{"macro in a filter argument", `{% macro f() %}{{ 'a'|replace('a', f()) }}{% endmacro %}{{ f() }}`, tooDeep},
		{"call block calls its macro", `{% macro m() %}{% call m() %}x{% endcall %}{% endmacro %}{{ m() }}`, tooDeep},
		{"recursive loop on the same list", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, tooDeep},
		{"recursion inside a loop", `{% macro f() %}{% for i in range(2) %}{{ f() }}{% endfor %}{% endmacro %}{{ f() }}`, tooDeep},
		{"shallow but exponential recursion", `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}`, tooLong},
	}
}

// timeAttacks: loops whose work has no bound but the sandbox's.
func timeAttacks() []attack {
	nested := func(k, n int) string {
		return strings.Repeat(fmt.Sprintf("{%% for i in range(%d) %%}", n), k) + "x" + strings.Repeat("{% endfor %}", k)
	}
	return []attack{
		{"range of a billion", `{% for i in range(10**9) %}{% break %}{% endfor %}`, "range() of 1000000000 numbers, more than 100000"},
		{"range over all integers", `{% for i in range(-9223372036854775807 - 1, 9223372036854775807) %}{% endfor %}`, "range() of 18446744073709551615 numbers"},
		{"two nested loops", nested(2, 100000), tooLong},
		{"four nested loops", nested(4, 1000), tooLong},
		{"loop over the characters of a long string", `{% for c in 'x' * 10000000 %}{% endfor %}`, "a for loop over 10000000 items"},
		{"loop that grows a list", `{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}`, "exceeded"},
		{"membership tests on a big list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if i in l %}{% endif %}{% endfor %}`, "exceeded"},
		{"comparisons of long strings", `{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{% if s == s ~ '' %}{% endif %}{% endfor %}`, "exceeded"},
	}
}

// memoryAttacks: values grown past what one value may hold, by every operator and builtin that grows one.
func memoryAttacks() []attack {
	double := func(expr string) string {
		return `{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(64) %}{% set ns.s = ` + expr + ` %}{% endfor %}`
	}
	return []attack{
		{"string times a billion", `{{ 'x' * 3000000000 }}`, tooBig},
		{"a billion times a string", `{{ 3000000000 * 'x' }}`, tooBig},
		{"list times a billion", `{{ [1, 2] * 1000000000 }}`, "more than 1048576 items"},
		{"string doubled with +", double("ns.s + ns.s"), tooBig},
		{"string doubled with ~", double("ns.s ~ ns.s"), tooBig},
		{"string doubled with join", double("[ns.s, ns.s]|join"), tooBig},
		{"string doubled with str.join", double("ns.s.join(['', '', ''])"), tooBig},
		{"string doubled with replace", double("ns.s|replace('x', 'xx')"), tooBig},
		{"string doubled with str.replace", double("ns.s.replace('x', 'xx', -1)"), tooBig},
		{"string doubled with format", double("'%s%s'|format(ns.s, ns.s)"), tooBig},
		{"string doubled with center", double("ns.s|center(ns.s|length * 2)"), tooBig},
		{"string doubled with indent", double("(ns.s ~ '\n' ~ ns.s)|indent(8)"), tooBig},
		{"list doubled", `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}`, tooBig},
		{"replace the empty string", `{% set s = 'x' * 100000 %}{{ s.replace('', 'y' * 1000, -1) }}`, tooBig},
		{"center by a billion", `{{ 'a'|center(3000000000) }}`, tooBig},
		{"str.center by a billion", `{{ 'a'.center(3000000000) }}`, tooBig},
		{"str.zfill by a billion", `{{ 'a'.zfill(3000000000) }}`, tooBig},
		{"format width", `{{ '%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d%999999d'|format(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1) }}`, tooBig},
		{"str.format width", `{{ '{:>3000000000}'.format(1) }}`, tooBig},
		{"indent many lines", `{{ ('\n' * 1000000)|indent(1000, blank=true) }}`, tooBig},
		{"tojson indent", `{{ (range(1000)|list)|tojson(indent=100000) }}`, tooBig},
		{"batch with a huge fill", `{{ [1]|batch(3000000000, fill_with=0) }}`, tooBig},
		{"slice into a billion", `{{ [1]|slice(3000000000) }}`, tooBig},
		{"a long string as a list", `{{ ('x' * 10000000)|list|length }}`, tooBig},
		{"lipsum of a million", `{{ lipsum(n=1000000) }}`, tooBig},
		{"a huge output", `{% set s = 'x' * 10000000 %}{{ s }}{{ s }}`, "rendered text would exceed 16 MiB"},
		{"a macro's huge output", `{% set s = 'x' * 10000000 %}{% macro m() %}{{ s }}{{ s }}{% endmacro %}{{ m() }}`, tooBig},
		{"a macro's output made again and again", `{% set s = 'x' * 10000000 %}{% macro m() %}{{ s }}{% endmacro %}{% for i in range(1000) %}{% set t = m() %}{% endfor %}`, "exceeded 64 MiB"},
	}
}

// arithmeticAttacks: what Python raises and gonja printed or crashed on.
func arithmeticAttacks() []attack {
	return []attack{
		{"integer division by zero", `{{ 1 / 0 }}`, zeroDiv},
		{"float division by zero", `{{ 1.5 / 0.0 }}`, zeroDiv},
		{"floor division by zero", `{{ 7 // 0 }}`, zeroDiv},
		{"float floor division by zero", `{{ 7.0 // 0 }}`, zeroDiv},
		{"modulo by zero", `{{ 7 % 0 }}`, zeroDiv},
		{"float modulo by zero", `{{ 7.5 % 0.0 }}`, zeroDiv},
		{"zero to a negative power", `{{ 0 ** -1 }}`, zeroDiv},
		{"addition overflow", `{{ 9223372036854775807 + 1 }}`, overflow},
		{"subtraction overflow", `{{ -9223372036854775807 - 2 }}`, overflow},
		{"multiplication overflow", `{{ 3037000500 * 3037000500 }}`, overflow},
		{"negative multiplication overflow", `{{ -4611686018427387905 * 2 }}`, overflow},
		{"power overflow", `{{ 2 ** 64 }}`, overflow},
		{"power overflow in a loop", `{% set ns = namespace(n=3) %}{% for i in range(100) %}{% set ns.n = ns.n * ns.n %}{% endfor %}`, overflow},
		{"negating the smallest integer", `{% set n = -9223372036854775807 - 1 %}{{ -n }}`, overflow},
		{"smallest integer floor-divided by -1", `{{ (-9223372036854775807 - 1) // -1 }}`, overflow},
		{"float power overflow", `{{ 10.0 ** 400 }}`, "too large"},
		{"negative to a fractional power", `{{ (0 - 8) ** 0.5 }}`, "no real value"},
		{"string formatting with %", `{{ '%s' % 'a' }}`, "not supported"},
	}
}

// structureAttacks: values that contain themselves or nest without end.
func structureAttacks() []attack {
	return []attack{
		{"namespace holding itself", `{% set ns = namespace() %}{% set ns.a = ns %}{{ ns }}`, selfNested},
		{"namespace holding its holder", `{% set ns = namespace(b=namespace()) %}{% set ns.b.c = ns %}{{ ns }}`, selfNested},
		{"namespace item holding itself", `{% set ns = namespace() %}{% set ns['a'] = ns %}{{ ns }}`, selfNested},
		{"list nested in a loop", `{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}`, "nests lists or dicts more than 128 deep"},
		{"dict nested in a loop", `{% set ns = namespace(x={}) %}{% for i in range(1000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}`, "more than 128 deep"},
		{"namespaces chained in a loop, then printed", `{% set ns = namespace(next=none) %}{% set cur = namespace(p=ns) %}{% for i in range(1000) %}{% set cur.p.next = namespace(next=none) %}{% set cur.p = cur.p.next %}{% endfor %}{{ ns }}`, "more than 128 deep"},
		{"namespaces chained in a loop, then a method", `{% set ns = namespace(next=none) %}{% set cur = namespace(p=ns) %}{% for i in range(1000) %}{% set cur.p.next = namespace(next=none) %}{% set cur.p = cur.p.next %}{% endfor %}{{ ns.items() }}`, "more than 128 deep"},
	}
}

// sourceAttacks: templates refused before they run.
func sourceAttacks() []attack {
	return []attack{
		{"include", `{% include '/chat_template.jinja' %}`, notLoaded},
		{"import", `{% import '/chat_template.jinja' as t %}`, notLoaded},
		{"from import", `{% from '/chat_template.jinja' import m %}`, notLoaded},
		{"extends", `{% extends '/chat_template.jinja' %}`, notLoaded},
		{"block calling itself", `{% block a %}{{ self.a() }}{% endblock %}`, notLoaded},
		{"a guard's name", `{{ 1|__meazo_value(1) }}`, `the name "__meazo_value" is reserved`},
		{"the budget's name", `{% set __meazo_budget = 1 %}`, `the name "__meazo_budget" is reserved`},
		{"deep parentheses", "{{ " + strings.Repeat("(", 300000) + "1" + strings.Repeat(")", 300000) + " }}", "nest more than 64 deep"},
		{"deep calls", "{{ " + strings.Repeat("f(", 300000) + strings.Repeat(")", 300000) + " }}", "nest more than 64 deep"},
		{"deep blocks", strings.Repeat("{% if 1 %}", 1000) + strings.Repeat("{% endif %}", 1000), "nest more than 64 deep"},
		{"long operator chain", "{{ 'a'" + strings.Repeat(" ~ 'a'", 100000) + " }}", "more than 10000 tokens"},
		{"long attribute chain", "{{ a" + strings.Repeat(".b", 100000) + " }}", "more than 10000 tokens"},
		{"a huge template", strings.Repeat("x", 2<<20), "more than 1048576"},
	}
}

// TestSandboxRefusesAttacks renders every attack and checks that each fails
// with its error, naming the template's file, within bounded time and memory.
func TestSandboxRefusesAttacks(t *testing.T) {
	groups := map[string][]attack{
		"recursion": recursionAttacks(), "time": timeAttacks(), "memory": memoryAttacks(),
		"arithmetic": arithmeticAttacks(), "structure": structureAttacks(), "source": sourceAttacks(),
	}
	for group, attacks := range groups {
		for _, a := range attacks {
			t.Run(group+"/"+a.name, func(t *testing.T) {
				out, err, m := renderMeasured(t, a.src)
				if err == nil {
					t.Fatalf("rendered %d bytes without an error", len(out))
				}
				if !a.matches(err) || !strings.Contains(err.Error(), "chat_template.jinja") {
					t.Errorf("error %q\nshould name chat_template.jinja and say %q", err, a.want)
				}
				t.Logf("%v, %d MB of live heap", m.wall.Round(time.Millisecond), m.peakHeap>>20)
				m.check(t)
			})
		}
	}
}

// measured is what a render cost.
type measured struct {
	wall     time.Duration
	peakHeap uint64 // live heap above the start's
}

// Bounds a render must stay within here (measured for these attacks: at
// most 1.4 s and 83 MB of live heap, on a 2-core Xeon at 2.5 GHz under a
// load of 7 to 17; the bounds leave room for a slower machine).
const (
	renderWallBound = 30 * time.Second
	renderHeapBound = 512 << 20
)

func (m measured) check(t *testing.T) {
	t.Helper()
	if m.wall > renderWallBound || m.peakHeap > renderHeapBound {
		t.Errorf("the render took %v and %d MB of heap, more than %v and %d MB", m.wall, m.peakHeap>>20, renderWallBound, renderHeapBound>>20)
	}
}

// renderMeasured loads src as a model directory's chat_template.jinja and
// renders one conversation, watching the live heap; a render that outlives
// twice renderWallBound fails the test (a hang).
func renderMeasured(t *testing.T, src string) (string, error, measured) {
	t.Helper()
	dir := t.TempDir()
	writeTinyTokenizer(t, dir, src)
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		tk, err := Load(dir)
		if err != nil {
			done <- result{"", err}
			return
		}
		out, err := tk.RenderChat([]Message{{Role: "user", Content: "hello"}}, ChatOptions{})
		done <- result{out, err}
	}()
	var m measured
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(2 * renderWallBound)
	for {
		select {
		case r := <-done:
			m.wall = time.Since(start)
			return r.out, r.err, m
		case <-tick.C:
			metrics.Read(sample)
			if h := sample[0].Value.Uint64(); h > base && h-base > m.peakHeap {
				m.peakHeap = h - base
			}
		case <-timeout:
			t.Fatalf("the render did not end within %v", 2*renderWallBound)
		}
	}
}

// writeTinyTokenizer writes a minimal model tokenizer with template as its
// chat_template.jinja.
func writeTinyTokenizer(t *testing.T, dir, template string) {
	t.Helper()
	files := map[string]string{
		"tokenizer.json": `{"added_tokens":[{"id":1,"content":"<s>","special":true}],"normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[
			{"type":"Split","pattern":{"Regex":` + jsonString(llama3SplitRegex) + `},"behavior":"Isolated","invert":false},
			{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},
			"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"tokenizer_config.json": `{"bos_token":"<s>","eos_token":"<s>"}`,
		"chat_template.jinja":   template,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSandboxMatchesJinja checks that the guarded operators compute what
// transformers' sandboxed Jinja2 does (jinja2 3.1.6's
// ImmutableSandboxedEnvironment rendered each expression; where Python's
// integers grow past 64 bits the sandbox raises instead).
func TestSandboxMatchesJinja(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"7 // 2", "3"}, {"-7 // 2", "-4"}, {"7 // -2", "-4"}, {"-7 % 3", "2"}, {"7 % -3", "-2"},
		{"7.5 // 2", "3.0"}, {"-7.5 % 2", "0.5"}, {"2 ** 10", "1024"}, {"2 ** -1", "0.5"}, {"(0 - 2) ** 3", "-8"},
		{"2.0 ** 3", "8.0"}, {"'ab' * 3", "ababab"}, {"3 * 'ab'", "ababab"}, {"'a' * 0", ""}, {"'a' * -2", ""},
		{"[1, 2] * 2", "[1, 2, 1, 2]"}, {"2 * [1]", "[1, 1]"}, {"[1] + [2, 3]", "[1, 2, 3]"}, {"'a' ~ 1", "a1"},
		{"1 + 2.5", "3.5"}, {"10 / 4", "2.5"}, {"-9223372036854775807 - 1", "-9223372036854775808"},
		{"'b' > 'a'", "True"}, {"3 > 2.5", "True"}, {"- 5", "-5"}, {"- 2.5", "-2.5"},
		{"'<' + 'a' + '>' + 'b' ~ 'c'", "<a>bc"}, {"1 + 2 * 3 - 4 // 3", "6"},
		{"range(100000)|length", "100000"},
		// Negative indices down to -n, as Python's (gonja's own stop at -(n-1)).
		{"['a'][-1]", "a"}, {"['a', 'b'][-2]", "a"}, {"['a', 'b'][-1]", "b"}, {"'x<t>abc'.split('<t>')[-1]", "abc"},
		{"'abc'.split('<t>')[-1].upper()", "ABC"}, {"[['a']][-1][-1]", "a"}, {"(['a'][-2] is defined)", "False"},
		{"['a', 'b'][0]", "a"}, {"(['a'][1] is defined)", "False"}, {"{'k': 1}['k']", "1"}, {"(1, 2)[-2]", "1"},
		// A string's characters by code point, negative indices too, as Python's.
		{"'a'[-1]", "a"}, {"'abc'[-3]", "a"}, {"'abc'[0]", "a"}, {"'é'[0]", "é"}, {"'héllo'[1]", "é"}, {"'héllo'[-4]", "é"},
		{"('abc'[3] is defined)", "False"}, {"('abc'[-4] is defined)", "False"}, {"'abc'[1:]", "bc"}, {"'日本語'[-1]", "語"},
		{"('nan'|float) <= 1", "False"}, {"('nan'|float) < 1", "False"}, {"('nan'|float) >= ('nan'|float)", "False"},
	}
	for _, c := range cases {
		tpl, err := newChatTemplate("{{ " + c.expr + " }}")
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, err := tpl.render(nil, nil, "")
		if err != nil || got != c.want {
			t.Errorf("{{ %s }} = %q, %v; Jinja2 renders %q", c.expr, got, err, c.want)
		}
	}
}

// TestSandboxLongMessages: the limits grow with the input, so long messages
// render with real templates (a template may not amplify them, but may copy
// them a few times).
func TestSandboxLongMessages(t *testing.T) {
	long := strings.Repeat("word ", 2<<20) + "end" // 10 MiB
	msgs := []Message{{Role: "system", Content: long}, {Role: "user", Content: long}, {Role: "assistant", Content: long}}
	for _, name := range []string{"qwen3", "llama3.2"} {
		out, err := model(t, name).RenderChat(msgs, ChatOptions{})
		if err != nil || strings.Count(out, long) != 3 {
			t.Errorf("%s: three 10 MiB messages: %v", name, err)
		}
	}
}

// TestSandboxKeepsFeatures: what templates use still works under the guards.
func TestSandboxKeepsFeatures(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(150) }}", ""},
		{"{% for x in [[1, [2]], [3]] recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}{% endif %}{% endfor %}", "123"},
		{"{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}in{% endcall %}", "[in]"},
		{"{% set ns = namespace(a=[]) %}{% set ns.b = ns.a %}{% set ns.c = {'k': ns.a} %}{{ ns.c.k }}", "[]"},
		{"{% set ns = namespace() %}{% set ns['k'] = 2 %}{{ ns.k }}", "2"},
		{"{{ 'a b c'.split(' ')|join('-') }}{{ 'x'.center(5, '*') }}|{{ '%d-%s'|format(1, 'a') }}", "a-b-c**x**|1-a"},
		{"{% for i in range(10000) %}{% endfor %}ok", "ok"},
		{"{% filter upper %}a{{ 'b' }}{% endfilter %}", "AB"},
	}
	for _, c := range cases {
		tpl, err := newChatTemplate(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := tpl.render(nil, nil, "")
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if c.want != "" && got != c.want {
			t.Errorf("%s = %q, want %q", c.src, got, c.want)
		}
	}
}

// TestQwen3ReasoningWithoutOpening: Qwen3's template takes the text before
// an answer's "</think>" as reasoning, reading it with
// split('<think>')[-1], a one-item list when the answer has no "<think>".
// The renders are Jinja2's (transformers' sandboxed environment).
func TestQwen3ReasoningWithoutOpening(t *testing.T) {
	tok, err := Load(filepath.Join("testdata", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	for answer, want := range map[string]string{
		"It is Paris.</think>Paris": "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nIt is Paris.\n</think>\n\nParis<|im_end|>\n",
		"a</think>b</think>c":       "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\na\n</think>\n\nc<|im_end|>\n",
	} {
		got, err := tok.RenderChat([]Message{{Role: "user", Content: "Q"}, {Role: "assistant", Content: answer}}, ChatOptions{})
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; Jinja2 renders %q", answer, got, err, want)
		}
	}
}

// A str.format field nested in another's spec takes its width from an
// argument: the bound must see it before the method allocates it (762 MB
// of heap held before it did).
func TestFormatNestedWidthBounded(t *testing.T) {
	_, err, m := renderMeasured(t, `{{ "{:>{}}".format("x", 400000000) }}`)
	if err == nil || !strings.Contains(err.Error(), "could reach") {
		t.Errorf("error %v, want the result's bound refused before it runs", err)
	}
	if m.peakHeap > 128<<20 {
		t.Errorf("the render held %d MB of heap", m.peakHeap>>20)
	}
}

// Width arguments near 1<<63 must not wrap a bound into a negative (or
// small) number ("its result could reach -3 bytes").
func TestWidthBoundNoWrap(t *testing.T) {
	_, err, _ := renderMeasured(t, `{{ "x".zfill(9223372036854775807) }}`)
	if err == nil || strings.Contains(err.Error(), "reach -") {
		t.Errorf("error %v", err)
	}
}

// str.center, ljust and rjust are Python's: fillchar defaults to a space
// (gonja's own default failed its own argument check), and center puts an
// odd column where CPython does (the expected strings are Python 3.11's).
func TestStrPadDefaults(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`[{{ "ab".center(6) }}]`, "[  ab  ]"},
		{`[{{ "ab".ljust(4) }}]`, "[ab  ]"},
		{`[{{ "ab".rjust(4) }}]`, "[  ab]"},
		{`[{{ "ab".rjust(4, "*") }}]`, "[**ab]"},
		{`[{{ "ab".center(5, "-") }}]`, "[--ab-]"}, // Python's: the odd column on the left
		{`[{{ "abc".center(6) }}]`, "[ abc  ]"},
		{`[{{ "abc".center(7, "é") }}]`, "[ééabcéé]"},
		{`[{{ "abcd".center(2) }}]`, "[abcd]"},
	} {
		got, err, _ := renderMeasured(t, tc.src)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
}
