package main

import (
	"io"
	"strings"
	"testing"
)

// TestStreamsLongLine: a stream without newlines (/dev/zero piped in, a
// JSON array on one line) is an error at maxLineBytes naming the line, for
// tokenize's and chat's stdin and generate's --messages, instead of being
// read into memory whole; a line at the bound is read.
func TestStreamsLongLine(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 1 << 16
	dir := t.TempDir()
	writeCharTokenizer(t, dir, 8, "</s>")
	endless := func() io.Reader { return io.MultiReader(strings.NewReader(`{"text": "`), zeroes{}) }
	for _, cmd := range []func([]string, io.Reader, io.Writer) error{runTokenize, runChat} {
		err := cmd([]string{"--model", dir}, endless(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "stdin line 1: over 64.0 KiB without a newline") {
			t.Errorf("an endless line: %v", err)
		}
	}
	if _, err := readConversations(nil, "-", endless()); err == nil || !strings.Contains(err.Error(), "--messages - line 1: over 64.0 KiB without a newline") {
		t.Errorf("--messages -, an endless line: %v", err)
	}
	line := `{"text": "` + strings.Repeat(" ", 100) + "\"}\n"
	maxLineBytes = len(line)
	var out strings.Builder
	if err := runTokenize([]string{"--model", dir}, strings.NewReader(line+line), &out); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("two lines at the bound: %v, output %q", err, out.String())
	}
}

// zeroes is an endless stream of zero bytes, as /dev/zero.
type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
