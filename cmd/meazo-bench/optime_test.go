package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meazo-go/meazo/tensor/cpu"
)

// TestOpTimer: the wrapper computes what the backend computes and counts
// every call under its op class; the report lists them with (other).
func TestOpTimer(t *testing.T) {
	be := cpu.New(cpu.Options{Threads: 1})
	o := newOpTimer(be)
	x := o.FromHost([]float32{1, 2, 3, 4})
	y := o.FromHost([]float32{10, 20, 30, 40})
	o.Add(y, x)
	o.Add(y, x)
	w := o.Pack([]float32{1, 0, 0, 1}, 2, 2, false)
	out := o.Alloc(4)
	o.MatMul(out, y, 2, w)
	got := o.ToHost(out)
	for i, want := range []float32{12, 24, 36, 48} {
		if got[i] != want {
			t.Fatalf("MatMul through the timer: %v, want [12 24 36 48]", got)
		}
	}
	for op, n := range map[string]int{"Add": 2, "MatMul": 1, "FromHost": 2, "Alloc": 1, "ToHost": 1} {
		if o.calls[op] != n {
			t.Errorf("%s: %d calls recorded, want %d", op, o.calls[op], n)
		}
	}
	var buf bytes.Buffer
	o.report(&buf, time.Second, 1)
	for _, want := range []string{"Add", "MatMul", "(other)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	o.reset()
	if len(o.calls) != 0 || len(o.spent) != 0 {
		t.Errorf("reset left %v", o.calls)
	}
}
