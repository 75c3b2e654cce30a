package fuzzguard

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestPanicKeepsItsStack: a panic in fn reaches Run's caller with the
// frames of the code that panicked in its message (re-panicked from fn's
// goroutine, the fuzz crash's stack ended in Run, its cause in no frame).
func TestPanicKeepsItsStack(t *testing.T) {
	var got any
	func() {
		defer func() { got = recover() }()
		Run(panicsHere)
	}()
	if msg := fmt.Sprint(got); !strings.Contains(msg, "assignment to entry in nil map") || !strings.Contains(msg, "fuzzguard.panicsHere") {
		t.Errorf("recovered %q; want the panic and a frame of panicsHere", msg)
	}
}

// TestGoexitEndsTheCaller: fn ending its goroutine (t.Fatal does) ends
// the caller's too: the code after Run does not run.
func TestGoexitEndsTheCaller(t *testing.T) {
	after := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(runtime.Goexit)
		after = true
	}()
	<-done
	if after {
		t.Error("the code after Run ran after fn's goroutine exited")
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
