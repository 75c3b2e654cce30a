package tokenizer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/clip"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// chatTemplate is a parsed Jinja chat template, rendered with gonja set up
// the way transformers sets up Jinja2 for apply_chat_template: trim_blocks,
// lstrip_blocks, a single trailing newline of the source dropped, plus the
// raise_exception and strftime_now globals.
//
// A template is a program from a model repository. It runs in a sandbox
// (sandbox.go): a render finishes within bounded steps, memory, call depth
// and time, or fails with an error naming the template and the limit, as
// transformers' sandboxed Jinja2 raises; it never takes the process down.
type chatTemplate struct {
	tpl  *exec.Template
	name string // the file it came from, for errors
}

const templateName = "/chat_template.jinja"

// newChatTemplate parses and instruments src. The parser panics on some
// malformed templates ("{% if x is %}"): an error, not a crash.
func newChatTemplate(src string) (_ *chatTemplate, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chat template does not parse: %v", r)
		}
	}()
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	if err := checkSource(src, cfg); err != nil {
		return nil, fmt.Errorf("chat template refused: %w", err)
	}
	loader, err := loaders.NewMemoryLoader(map[string]string{templateName: src})
	if err != nil {
		return nil, err
	}
	tpl, err := exec.NewTemplate(templateName, cfg, loader, sandboxEnvironment())
	if err != nil {
		// gonja's message quotes the whole source before the parser's error.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return nil, fmt.Errorf("chat template does not parse: %w", err)
	}
	if err := instrument(tpl.Root(), src, cfg); err != nil {
		return nil, fmt.Errorf("chat template refused: %w", err)
	}
	return &chatTemplate{tpl: tpl}, nil
}

// render executes the template. date pins both date_string and what
// strftime_now returns (DefaultDateString when empty).
func (c *chatTemplate) render(msgs []Message, vars map[string]any, date string) (out string, err error) {
	input := int64(len(date))
	for _, m := range msgs {
		input += int64(len(m.Role) + len(m.Content))
	}
	for _, v := range vars {
		if s, ok := v.(string); ok {
			input += int64(len(s))
		}
	}
	b := newBudget(input)
	// The template engine panics on some expressions: an error, not a crash
	// of the trainer.
	defer func() {
		if r := recover(); r != nil {
			if abort, ok := r.(sandboxAbort); ok {
				b.fail(abort.err)
				out, err = "", c.fail(b.err)
				return
			}
			out, err = "", c.fail(fmt.Errorf("%v", r))
		}
	}()
	if date == "" {
		date = DefaultDateString
	}
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	ctx := map[string]any{
		"messages":    list,
		"date_string": date,
		"raise_exception": func(e *exec.Evaluator, args *exec.VarArgs) (string, error) {
			msg := "raise_exception called"
			if len(args.Args) > 0 {
				msg = args.Args[0].String()
			}
			msg = clip.RawN(msg, raisedMax) // a message the template built, up to 16 MiB
			b.fail(errors.New("the template raised an error: " + msg))
			return "", b.err
		},
		"strftime_now": func(_ *exec.Evaluator, args *exec.VarArgs) (string, error) {
			if len(args.Args) != 1 || !args.Args[0].IsString() {
				return "", errors.New("strftime_now: want one format string")
			}
			now, err := time.Parse("02 Jan 2006", date)
			if err != nil {
				return "", fmt.Errorf("strftime_now: date_string %q is not of the form %q", date, DefaultDateString)
			}
			return strftime(now, args.Args[0].String())
		},
	}
	for k, v := range vars {
		ctx[k] = v
	}
	ctx[budgetKey] = b
	w := &limitedWriter{limit: b.valueCap}
	err = c.tpl.Execute(w, exec.NewContext(ctx))
	if b.err != nil { // a limit, even where gonja dropped the error
		err = b.err
	}
	if err != nil {
		return "", c.fail(err)
	}
	return w.String(), nil
}

// raisedMax is how much of raise_exception's message an error quotes (the
// real templates' are a line; one built by the template may be 16 MiB).
const raisedMax = 300

// fail names the template in a render's error.
func (c *chatTemplate) fail(err error) error {
	err = engineError(err)
	if c.name == "" {
		return fmt.Errorf("chat template: %w", err)
	}
	return fmt.Errorf("chat template of %s: %w", c.name, err)
}

// filterCall is how gonja's error chain names each filter it was calling:
// its token struct printed whole.
var filterCall = regexp.MustCompile(`unable to evaluate filter &\{<Token\[Name\] Val='(\w+)' Pos=\d+ Line=(\d+) Col=(\d+)> \w+ \[[^\]]*\] map\[[^\]]*\]\}: invalid call to filter '\w+': `)

// engineError is a render error of gonja's without the Go structs its chain
// prints for each filter call: the sandbox's own filters (reservedPrefix),
// which the template does not have, are left out, and the template's are
// named with their line and column.
func engineError(err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "unable to evaluate filter &{") {
		return err
	}
	return errors.New(filterCall.ReplaceAllStringFunc(msg, func(m string) string {
		g := filterCall.FindStringSubmatch(m)
		if strings.HasPrefix(g[1], reservedPrefix) {
			return ""
		}
		return fmt.Sprintf("filter %s (line %s, column %s): ", g[1], g[2], g[3])
	}))
}

// limitedWriter collects the rendered text, up to limit bytes.
type limitedWriter struct {
	strings.Builder
	limit int64
}

func (w *limitedWriter) Write(p []byte) (int, error) { return w.WriteString(string(p)) }

func (w *limitedWriter) WriteString(s string) (int, error) {
	if int64(w.Len()+len(s)) > w.limit {
		return 0, fmt.Errorf("the rendered text would exceed %s, the limit of one value", mib(w.limit))
	}
	return w.Builder.WriteString(s)
}

// strftime formats t with the C/Python directives templates use.
func strftime(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime_now: unsupported directive %%%c", format[i])
		}
	}
	return b.String(), nil
}
