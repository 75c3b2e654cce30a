// Package backends links every compute backend into a program and opens the
// one a user asks for. Importing it registers "cpu" and "cuda" with package
// tensor (each backend registers itself in its init).
package backends

import (
	"fmt"
	"io"

	"github.com/meazo-go/meazo/tensor"
	_ "github.com/meazo-go/meazo/tensor/cpu"  // registers "cpu"
	_ "github.com/meazo-go/meazo/tensor/cuda" // registers "cuda"
)

// Usage is the help text of a --backend flag or a model.backend key.
const Usage = "compute backend: auto (CUDA when a GPU and its libraries load, else the CPU), cpu or cuda"

// Open opens the backend called name ("auto", "cpu", "cuda") with the given
// CPU thread count and the settings of the environment (tensor.EnvOptions:
// for benchmarks and tests), and writes one line to log saying which
// backend runs and on what, preceded for "auto" by why each backend it
// passed over could not be used.
func Open(name string, threads int, log io.Writer) (tensor.Backend, error) {
	o, err := tensor.EnvOptions(tensor.Options{Threads: threads})
	if err != nil {
		return nil, err
	}
	b, skipped, err := tensor.Open(name, o)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(log, "backend %v; trying the next\n", s)
	}
	fmt.Fprintf(log, "backend %s: %s\n", b.Name(), b.Describe())
	return b, nil
}
