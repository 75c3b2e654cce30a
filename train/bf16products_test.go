package train

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/backends"
)

// TestBF16ProductsConfig: model.bf16_products is off by default and loads
// with model.bf16_weights; without them it is refused, saying to add
// model.bf16_weights, and so it is with adapter.kind full (whose perturbed
// products stay float32), each message blamed on the --set or the file's
// line that gave it.
func TestBF16ProductsConfig(t *testing.T) {
	_, cfg := demoConfig(t, 1)
	c, err := Load(cfg, nil)
	if err != nil || c.Model.BF16Products {
		t.Fatalf("the demo config: %v, bf16_products %v; want it off by default", err, c != nil && c.Model.BF16Products)
	}
	c, err = Load(cfg, []string{"model.bf16_weights=true", "model.bf16_products=true"})
	if err != nil || !c.Model.BF16Products || !c.Model.BF16 {
		t.Fatalf("bf16_products with bf16_weights: %v", err)
	}
	y, err := c.YAML()
	if err != nil || !strings.Contains(string(y), "bf16_products: true") {
		t.Errorf("the run's config.yaml does not keep bf16_products (%v):\n%s", err, y)
	}

	_, err = Load(cfg, []string{"model.bf16_products=true"})
	var oe *OverrideError
	if !errors.As(err, &oe) || oe.Key != "model.bf16_products" ||
		!strings.Contains(err.Error(), "add model.bf16_weights: true (--set model.bf16_weights=true)") {
		t.Errorf("bf16_products without bf16_weights: %v; want it refused on --set model.bf16_products, saying to add model.bf16_weights", err)
	}
	// With adapter.kind full it is refused as such, with or without
	// bf16_weights (not sent to add bf16_weights, which would not do).
	for _, set := range [][]string{{"model.bf16_weights=true", "model.bf16_products=true", "adapter.kind=full"}, {"model.bf16_products=true", "adapter.kind=full"}} {
		_, err = Load(cfg, set)
		if err == nil || !strings.Contains(err.Error(), "model.bf16_products: is for frozen weights") || !strings.Contains(err.Error(), "not adapter.kind full") {
			t.Errorf("bf16_products with adapter.kind full (--set %v): %v; want it refused", set, err)
		}
	}
	// In the file: the message names the file and the key's line.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "model:\n", "model:\n  bf16_products: true\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file, nil); err == nil || !strings.HasPrefix(err.Error(), "config "+file+":") ||
		!strings.Contains(err.Error(), ": model.bf16_products multiplies the weights that model.bf16_weights keeps in bfloat16") {
		t.Errorf("bf16_products without bf16_weights in a file: %v", err)
	}
}

// bf16Demo writes the demo's model again with its matrices stored as BF16
// (and its tokenizer) into dir/bf16, and returns the overrides that train
// on it with model.bf16_products.
func bf16Demo(t *testing.T, dir string) []string {
	t.Helper()
	demo, err := model.Load(filepath.Join(dir, "model"))
	if err != nil {
		t.Fatal(err)
	}
	bf16 := filepath.Join(dir, "bf16")
	if err := model.WriteRandomBF16(bf16, &demo.Config, 1, 0.02); err != nil {
		t.Fatal(err)
	}
	demo.Free()
	if err := WriteDemoTokenizer(bf16); err != nil {
		t.Fatal(err)
	}
	return append([]string{"model.path=" + bf16, "model.backend=cpu", "model.bf16_weights=true", "model.bf16_products=true"}, trustSet...)
}

// TestBF16ProductsRun: a run with model.bf16_products opens its backend
// with Options.BF16Products (and its threads); on the CPU, which has no
// bfloat16 products, its log says once that the setting has no effect; a
// run without it opens the backend without it and says nothing.
func TestBF16ProductsRun(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	set := bf16Demo(t, dir)
	var opened []tensor.Options
	open := func(name string, o tensor.Options, log io.Writer) (tensor.Backend, error) {
		opened = append(opened, o)
		return backends.OpenWith(name, o, log)
	}
	const note = "model.bf16_products: the cpu backend has no bfloat16 products, so it has no effect"
	var log strings.Builder
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "train.threads=2", "output.dir="+filepath.Join(dir, "on")), Log: &log, openBackend: open}); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || !opened[0].BF16Products || opened[0].Threads != 2 {
		t.Errorf("model.bf16_products: the backend was opened with %+v; want BF16Products and 2 threads, once", opened)
	}
	if n := strings.Count(log.String(), note); n != 1 {
		t.Errorf("model.bf16_products on the CPU: the note %q is in the log %d times, want once:\n%s", note, n, log.String())
	}
	opened = nil
	log.Reset()
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(set, "model.bf16_products=false", "output.dir="+filepath.Join(dir, "off")), Log: &log, openBackend: open}); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || opened[0].BF16Products {
		t.Errorf("without model.bf16_products: the backend was opened with %+v", opened)
	}
	if strings.Contains(log.String(), "bf16_products") {
		t.Errorf("without model.bf16_products the log names it:\n%s", log.String())
	}
}

// TestBF16ProductsNote: the note is for a backend without bfloat16
// products (the CPU's), and only when the setting was asked for.
func TestBF16ProductsNote(t *testing.T) {
	cpu, err := backends.Open("cpu", 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	if got := BF16ProductsNote(cpu, false, "--bf16-products"); got != "" {
		t.Errorf("not asked: %q", got)
	}
	if got := BF16ProductsNote(cpu, true, "--bf16-products"); !strings.HasPrefix(got, "--bf16-products: the cpu backend has no bfloat16 products, so it has no effect") {
		t.Errorf("asked on the CPU: %q", got)
	}
	t.Setenv("MEAZO_CUDA_BF16_PRODUCTS", "0")
	for _, on := range []bool{true, false} {
		got := BF16ProductsNote(bf16Backend{cpu, on}, true, "model.bf16_products")
		if (got == "") != on {
			t.Errorf("a backend whose BF16Products() is %v: note %q", on, got)
		}
		// A backend that has bfloat16 products but was opened without them (the
		// environment's setting over the config's): the note names the variable,
		// not a backend without such products.
		if !on && (strings.Contains(got, "has no bfloat16 products") || !strings.Contains(got, `MEAZO_CUDA_BF16_PRODUCTS="0"`)) {
			t.Errorf("a backend with bfloat16 products opened without them: note %q; want it to name MEAZO_CUDA_BF16_PRODUCTS", got)
		}
	}
}

// bf16Backend is a backend that says whether it multiplies in bfloat16
// (tensor.BF16Multiplier), as the CUDA backend does.
type bf16Backend struct {
	tensor.Backend
	on bool
}

func (b bf16Backend) BF16Products() bool { return b.on }

// TestBF16ProductsResume: model.bf16_products changes the numbers, so a
// resume keeps the run's setting: --set to the other value is refused,
// naming the key and both values, as an edit of config.yaml is.
func TestBF16ProductsResume(t *testing.T) {
	dir, cfg := demoConfig(t, 6)
	set := bf16Demo(t, dir)
	for _, start := range []bool{true, false} {
		out := filepath.Join(dir, "run-"+map[bool]string{true: "on", false: "off"}[start])
		over := append(append([]string{}, set...), "model.bf16_products="+map[bool]string{true: "true", false: "false"}[start], "output.dir="+out)
		if _, err := Run(Options{ConfigPath: cfg, Overrides: over, StopAfter: 3, Log: io.Discard}); err != nil {
			t.Fatal(err)
		}
		old, other := map[bool]string{true: "true", false: "false"}[start], map[bool]string{true: "false", false: "true"}[start]
		_, err := Run(Options{Resume: out, Overrides: []string{"model.bf16_products=" + other}, Log: io.Discard})
		want := "--set model.bf16_products: cannot change on resume (the run's " + old + ", --set " + other + ";"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resume of a run with bf16_products %s, --set %s: %v; want it refused with %q", old, other, err, want)
		}
		// config.yaml edited by hand: refused too, naming the change.
		p := filepath.Join(out, "config.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(b), "bf16_products: "+old, "bf16_products: "+other, 1)
		if edited == string(b) {
			t.Fatalf("config.yaml has no bf16_products: %s:\n%s", old, b)
		}
		if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Run(Options{Resume: out, Log: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "model.bf16_products "+old+" -> "+other) || !strings.Contains(err.Error(), "model.bf16_products cannot change on resume") {
			t.Errorf("resume after config.yaml's bf16_products %s was edited to %s: %v", old, other, err)
		}
	}
}

// TestEnvBF16Products: a backend opened with bfloat16 products by the
// environment though the config said no: with bfloat16 weights a note says
// the config does not record it; a full-parameter run is refused (its
// perturbed products stay float32); without bfloat16 weights, or when the
// config asked, nothing.
func TestEnvBF16Products(t *testing.T) {
	cpu, err := backends.Open("cpu", 1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	t.Setenv("MEAZO_CUDA_BF16_PRODUCTS", "1")
	cfg := func(bf16, products bool, kind string) *Config {
		c := &Config{}
		c.Model.BF16, c.Model.BF16Products, c.Adapter.Kind = bf16, products, kind
		return c
	}
	on := bf16Backend{cpu, true}
	for _, c := range []struct {
		be         tensor.Backend
		cfg        *Config
		note, fail string
	}{
		{on, cfg(true, false, "lora"), `note: MEAZO_CUDA_BF16_PRODUCTS="1" in the environment turns on bfloat16 products though model.bf16_products is false`, ""},
		{on, cfg(true, false, "full"), "", "which full-parameter training (adapter.kind full) cannot use"},
		{on, cfg(false, false, "lora"), "", ""},
		{on, cfg(true, true, "lora"), "", ""},
		{bf16Backend{cpu, false}, cfg(true, false, "full"), "", ""},
		{cpu, cfg(true, false, "full"), "", ""},
	} {
		note, err := envBF16Products(c.be, c.cfg)
		if (c.note == "") != (note == "") || !strings.HasPrefix(note, c.note) {
			t.Errorf("%+v: note %q, want %q", c.cfg.Model, note, c.note)
		}
		if (c.fail == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.fail) {
			t.Errorf("%+v %s: error %v, want %q", c.cfg.Model, c.cfg.Adapter.Kind, err, c.fail)
		}
	}
}
