package fuzzguard

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestPanicKeepsItsStack: a panic in fn reaches Run's caller with the
// frames of the code that panicked (re-panicked from another goroutine,
// its stack ended in Run, the fuzz crash's cause in no frame).
func TestPanicKeepsItsStack(t *testing.T) {
	var stack string
	var got any
	func() {
		defer func() { got, stack = recover(), string(debug.Stack()) }()
		Run(panicsHere)
	}()
	if got == nil || !strings.Contains(stack, "fuzzguard.panicsHere") {
		t.Errorf("recovered %v; the stack has no frame of panicsHere:\n%s", got, stack)
	}
}

func panicsHere() {
	var m map[string]int
	m["x"] = 1
}

// TestRunReturns: fn that stays within the limits runs once, on the
// caller's goroutine, and Run returns.
func TestRunReturns(t *testing.T) {
	n := 0
	Run(func() { n++ })
	if n != 1 {
		t.Errorf("fn ran %d times", n)
	}
}
