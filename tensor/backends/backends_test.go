package backends

import (
	"io"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cuda"
)

// TestSelection: "cpu" always opens; "cuda" opens where a GPU is usable and
// otherwise fails with one line naming what is missing; "auto" takes CUDA
// when it opens and otherwise falls back to the CPU, saying why in its one
// log line.
func TestSelection(t *testing.T) {
	if got := tensor.Names(); len(got) != 2 || got[0] != "cuda" || got[1] != "cpu" {
		t.Fatalf("registered backends %v, want [cuda cpu] (auto's order)", got)
	}
	var log strings.Builder
	b, err := Open("cpu", 1, &log)
	if err != nil || b.Name() != "cpu" || !strings.HasPrefix(log.String(), "backend cpu: CPU") {
		t.Fatalf("Open(cpu): %v, %q", err, log.String())
	}

	gpu, gpuErr := cuda.Open(cuda.Options{})
	if gpuErr == nil {
		gpu.Close()
	}
	log.Reset()
	b, err = Open("cuda", 0, &log)
	if gpuErr == nil {
		if err != nil || b.Name() != "cuda" {
			t.Fatalf("a GPU opens, but Open(cuda) gave %v", err)
		}
		b.Close()
	} else {
		if err == nil {
			t.Fatalf("Open(cuda) succeeded where cuda.Open fails: %v", gpuErr)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "not found") && !strings.Contains(msg, "no GPU") {
			t.Errorf("Open(cuda) error is not one line naming what is missing: %q", msg)
		}
		t.Logf("Open(cuda): %v", err)
	}

	log.Reset()
	b, err = Open("auto", 0, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if gpuErr == nil {
		if b.Name() != "cuda" {
			t.Errorf("auto chose %s where a GPU opens", b.Name())
		}
	} else {
		// One line: the CPU, and why not CUDA in short (the first clause
		// of cuda.Open's error).
		why, _, _ := strings.Cut(gpuErr.Error(), " (")
		want := "backend cpu (auto; not " + why + "): CPU"
		if got := log.String(); b.Name() != "cpu" || !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
			t.Errorf("auto without a GPU: %s, log %q; want the CPU and one line starting %q", b.Name(), got, want)
		}
	}
	t.Logf("auto: %s", log.String())

	if _, err := Open("tpu", 0, &log); err == nil || !strings.Contains(err.Error(), `unknown backend "tpu" (have auto, cuda, cpu)`) {
		t.Errorf("Open(tpu): %v", err)
	}
}

// TestOpenTakesEnv: Open applies tensor.EnvOptions, and a value a variable
// does not take stops it with an error naming the variable.
func TestOpenTakesEnv(t *testing.T) {
	t.Setenv("MEAZO_CUDA_STACK", "1")
	b, err := Open("cpu", 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := b.(tensor.Stacker); !ok || !s.StackProjections() {
		t.Errorf("MEAZO_CUDA_STACK=1: the CPU backend does not stack its projections")
	}
	t.Setenv("MEAZO_CUDA_STACK", "yes")
	if _, err := Open("cpu", 1, io.Discard); err == nil || !strings.Contains(err.Error(), "MEAZO_CUDA_STACK") {
		t.Errorf("MEAZO_CUDA_STACK=yes: Open gave %v, want an error naming the variable", err)
	}
}

// TestChoose: Choose names the backend Open picks, and fails as Open does.
func TestChoose(t *testing.T) {
	var log strings.Builder
	if got, err := Choose("cpu", 1, &log); err != nil || got != "cpu" || !strings.HasPrefix(log.String(), "backend cpu: ") {
		t.Errorf("Choose(cpu) = %q, %v; log %q", got, err, log.String())
	}
	b, err := Open("auto", 1, &log)
	if err != nil {
		t.Fatal(err)
	}
	want := b.Name()
	b.Close()
	if got, err := Choose("auto", 1, &log); err != nil || got != want {
		t.Errorf("Choose(auto) = %q, %v; Open(auto) opened %q", got, err, want)
	}
	if _, err := Choose("tpu", 1, &log); err == nil {
		t.Error("Choose(tpu) succeeded")
	}
}

// TestCheckName: the names Open takes pass, without opening anything; a
// mistyped one gets Open's message.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"", "auto", "cpu", "cuda"} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
	if err := CheckName("gpu"); err == nil || err.Error() != `unknown backend "gpu" (have auto, cuda, cpu)` {
		t.Errorf("CheckName(gpu): %v", err)
	}
}

// TestOpenWith: OpenWith opens the backend with the options it is given
// (model.bf16_products' BF16Products, which no CPU backend shows), the
// environment's settings applied on top of them: a variable set overrides
// the option, one unset leaves it.
func TestOpenWith(t *testing.T) {
	var got []tensor.Options
	defer func(o func(string, tensor.Options) (tensor.Backend, []error, error)) { open = o }(open)
	open = func(name string, o tensor.Options) (tensor.Backend, []error, error) {
		got = append(got, o)
		return tensor.Open(name, o)
	}
	t.Setenv("MEAZO_CUDA_STACK", "1")
	var log strings.Builder
	b, err := OpenWith("cpu", tensor.Options{Threads: 1, BF16Products: true}, &log)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	want := tensor.Options{Threads: 1, BF16Products: true, StackProjections: true}
	if len(got) != 1 || got[0] != want || !strings.HasPrefix(log.String(), "backend cpu: ") {
		t.Errorf("OpenWith(cpu, BF16Products) with MEAZO_CUDA_STACK=1 opened with %+v, log %q; want %+v", got, log.String(), want)
	}
	t.Setenv("MEAZO_CUDA_BF16_PRODUCTS", "0")
	got = nil
	if b, err = OpenWith("cpu", tensor.Options{Threads: 1, BF16Products: true}, io.Discard); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if len(got) != 1 || got[0].BF16Products {
		t.Errorf("MEAZO_CUDA_BF16_PRODUCTS=0 over BF16Products: opened with %+v; want the variable's setting", got)
	}
	// Open is OpenWith with the threads alone.
	t.Setenv("MEAZO_CUDA_BF16_PRODUCTS", "")
	got = nil
	if b, err = Open("cpu", 3, io.Discard); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if want := (tensor.Options{Threads: 3, StackProjections: true}); len(got) != 1 || got[0] != want {
		t.Errorf("Open(cpu, 3) opened with %+v, want %+v", got, want)
	}
}

// TestAutoFailureLeadsWithCPU: where no backend opens under "auto", the
// error gives the CPU's reason first (a setting it refuses), then the
// GPU's (on a machine without one, its missing library).
func TestAutoFailureLeadsWithCPU(t *testing.T) {
	if gpu, err := cuda.Open(cuda.Options{}); err == nil {
		gpu.Close()
		t.Skip("a GPU opens here, so auto does not fail")
	}
	_, _, err := tensor.Open("auto", tensor.Options{GEMMTile: 5})
	if want := "no backend could be opened: cpu: tile height 5 not available"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Open(auto) with a tile height no path has: %v; want it to begin %q", err, want)
	}
	if !strings.Contains(err.Error(), "\ncuda: ") {
		t.Errorf("Open(auto): %v; want the GPU's reason after the CPU's", err)
	}
}
