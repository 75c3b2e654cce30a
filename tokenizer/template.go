package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// chatTemplate is a parsed Jinja chat template, rendered with gonja set up
// the way transformers sets up Jinja2 for apply_chat_template: trim_blocks,
// lstrip_blocks, a single trailing newline of the source dropped, plus the
// raise_exception and strftime_now globals.
//
// A template is a program, and gonja runs it without limits: a macro that
// calls itself without end overflows the stack (a fatal error, which no
// recover catches) and {{ 'x' * 3000000000 }} builds gigabytes, where
// Jinja2 would raise RecursionError or MemoryError. Only use templates you
// trust, as with transformers' trust_remote_code.
type chatTemplate struct {
	tpl *exec.Template
}

const templateName = "/chat_template.jinja"

// newChatTemplate parses src. The parser panics on some malformed
// templates ("{% if x is %}"): an error, not a crash.
func newChatTemplate(src string) (_ *chatTemplate, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chat template does not parse: %v", r)
		}
	}()
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	loader, err := loaders.NewMemoryLoader(map[string]string{templateName: src})
	if err != nil {
		return nil, err
	}
	tpl, err := exec.NewTemplate(templateName, cfg, loader, gonja.DefaultEnvironment)
	if err != nil {
		return nil, err
	}
	return &chatTemplate{tpl: tpl}, nil
}

// render executes the template. date pins both date_string and what
// strftime_now returns (DefaultDateString when empty).
func (c *chatTemplate) render(msgs []Message, vars map[string]any, date string) (out string, err error) {
	// The template engine panics on some expressions ('%s' % x, a modulo
	// by zero, a negative repeat): an error, not a crash of the trainer.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template: %v", r)
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
		"raise_exception": func(_ *exec.Evaluator, args *exec.VarArgs) (string, error) {
			msg := "raise_exception called"
			if len(args.Args) > 0 {
				msg = args.Args[0].String()
			}
			return "", errors.New("template error: " + msg)
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
	return c.tpl.ExecuteToString(exec.NewContext(ctx))
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
