// Command meazo-inspect looks inside the pieces a training run is made of:
// checkpoints (forward, generate: from token ids or text), tokenizers and
// chat templates, training examples, and the perturbation noise; and it
// merges a LoRA adapter into its model (merge). Each subcommand lives in
// its own file and registers itself in init.
package main

import (
	"io"

	"github.com/meazo-go/meazo/internal/cli"
)

var commands = cli.New("meazo-inspect", "command")

func register(name string, h cli.Help, run func(args []string, stdin io.Reader, stdout io.Writer) error) {
	commands.Register(name, h, run)
}

func main() { commands.Main() }
