// Package backends links every compute backend into a program and opens the
// one a user asks for. Importing it registers "cpu" and "cuda" with package
// tensor (each backend registers itself in its init).
package backends

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/tensor"
	_ "github.com/meazo-go/meazo/tensor/cpu"  // registers "cpu"
	_ "github.com/meazo-go/meazo/tensor/cuda" // registers "cuda"
)

// Usage is the help text of a --backend flag or a model.backend key.
const Usage = "compute backend: auto (CUDA when a GPU and its libraries load, else the CPU), cpu or cuda"

// CheckName refuses a backend name that is neither "auto" (or empty) nor a
// registered backend, with the message Open gives it, so that a command
// can refuse a mistyped --backend as a bad command line before it reads or
// writes anything.
func CheckName(name string) error {
	if name == "" || name == "auto" || slices.Contains(tensor.Names(), name) {
		return nil
	}
	return fmt.Errorf("unknown backend %q (have auto, %s)", name, strings.Join(tensor.Names(), ", "))
}

// Open opens the backend called name ("auto", "cpu", "cuda") with the given
// CPU thread count and the settings of the environment (tensor.EnvOptions:
// for benchmarks and tests), and writes one line to log saying which
// backend runs and on what; for "auto", the same line says in short why
// each backend it passed over could not be used (a CPU machine's missing
// NVIDIA driver is expected, not an error: --backend cuda gives the whole
// message).
func Open(name string, threads int, log io.Writer) (tensor.Backend, error) {
	return OpenWith(name, tensor.Options{Threads: threads}, log)
}

// OpenWith is Open with more of the backend's settings than its threads:
// those a program's own configuration gives (model.bf16_products sets
// BF16Products). The environment's settings (tensor.EnvOptions, for
// benchmarks and tests) apply on top of opts, as Open applies them.
func OpenWith(name string, opts tensor.Options, log io.Writer) (tensor.Backend, error) {
	o, err := tensor.EnvOptions(opts)
	if err != nil {
		return nil, err
	}
	b, skipped, err := open(name, o)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "backend %s%s: %s\n", b.Name(), passedOver(skipped), b.Describe())
	return b, nil
}

// open is tensor.Open; a test replaces it to see the options OpenWith
// passes.
var open = tensor.Open

// passedOver is " (auto: …)" naming the backends auto passed over and why,
// each reason cut to its first clause; "" when none was.
func passedOver(skipped []error) string {
	if len(skipped) == 0 {
		return ""
	}
	var why []string
	for _, s := range skipped {
		msg, _, _ := strings.Cut(s.Error(), " (")
		why = append(why, msg)
	}
	return " (auto; not " + strings.Join(why, "; not ") + ")"
}

// Choose opens the backend called name as Open does (writing its line to
// log), closes it again and returns its name: a program that starts several
// runs (the demo) resolves "auto" once and says once why, then hands each
// run the chosen name.
func Choose(name string, threads int, log io.Writer) (string, error) {
	b, err := Open(name, threads, log)
	if err != nil {
		return "", err
	}
	defer b.Close()
	return b.Name(), nil
}
