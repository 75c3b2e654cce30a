package train_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/train"
)

// ExampleRun is the whole pipeline on the built-in demo (README.md, "The
// demo"): train.WriteDemo writes a tiny model, its tokenizer, an SST-2-style
// dataset and a config; train.Run trains LoRA on it with MEAZO, validating,
// keeping the best adapter, checkpointing, and scoring the test split before
// training ("base") and with the best adapter ("best"). Overrides are
// meazo-train's --set values. (The accuracy reached is not printed: each
// build of the kernels, SIMD or portable, rounds its sums its own way, and 300
// zeroth-order steps carry the difference on; each is bit-identical to
// itself.)
func ExampleRun() {
	dir, err := os.MkdirTemp("", "meazo-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfgPath, err := train.WriteDemo(dir, 300)
	if err != nil {
		panic(err)
	}
	s, err := train.Run(train.Options{
		ConfigPath: cfgPath,
		Overrides:  []string{"optimizer.lr=0.05", "output.dir=" + filepath.Join(dir, "run")},
		Log:        io.Discard, // os.Stderr shows the progress lines
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s after %d steps of %s\n", s.Status, s.StepsDone, s.Optimizer)
	base, best := s.Test["base"]["accuracy"], s.Test["best"]["accuracy"]
	fmt.Printf("test accuracy before training %.1f %%; better with the best adapter: %v\n", 100*base, best > base+0.1)
	// Output:
	// done after 300 steps of meazo
	// test accuracy before training 36.5 %; better with the best adapter: true
}
