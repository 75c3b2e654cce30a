package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/noise"
)

func init() {
	register("noise", cli.Help{
		Summary:  "print perturbation noise values (the noise contract of docs/ALGORITHMS.md) as a JSON array",
		Synopsis: "[--seed S] [--step T] [--direction J] [--group G] [--dist D] [--n N]",
		Does: `Prints the perturbation z a run draws for one (seed, step, direction, group), as every backend draws it
(the noise contract, docs/ALGORITHMS.md): to check another implementation, or a GPU, against it.`,
		Reads:   "nothing: the flags name the draw.",
		Prints:  "elements 0..N-1 of z as float32 values in one JSON array.",
		Example: "meazo-inspect noise --seed 0 --step 12 --direction 1 --dist rademacher --n 4",
	}, runNoise)
}

// runNoise prints elements 0..n-1 of the noise vector z of one (run seed,
// step, direction, group) as float32 values in a JSON array.
func runNoise(args []string, _ io.Reader, stdout io.Writer) error {
	fs := commands.Flags("noise")
	seed := fs.Uint64("seed", 0, "run seed")
	step := fs.Uint64("step", 0, "training step (0-based)")
	dir := fs.Uint64("direction", 0, "direction j (0-based)")
	group := fs.Int("group", 0, "parameter group (0 when the run does not group parameters)")
	distName := fs.String("dist", "normal", "normal, sphere, rademacher or ternary")
	n := fs.Int("n", 8, "number of elements (the group's dimension, which matters for sphere)")
	if err := cli.Parse(fs, args); err != nil {
		return cli.Usage(err)
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	dist, err := noise.ParseDist(*distName)
	if err != nil {
		return cli.Usage(fmt.Errorf("--dist: %w", err))
	}
	switch {
	case *step > math.MaxUint32:
		return cli.Usage(fmt.Errorf("--step %d exceeds 2^32-1", *step))
	case *dir > math.MaxUint32:
		return cli.Usage(fmt.Errorf("--direction %d exceeds 2^32-1", *dir))
	case *group < 0:
		return cli.Usage(fmt.Errorf("--group %d is negative", *group))
	case *n < 1 || *n > 1<<28:
		return cli.Usage(fmt.Errorf("--n %d outside 1..2^28", *n))
	}
	z := make([]float32, *n)
	noise.Fill(z, dist, noise.Stream{Seed: noise.StreamSeed(*seed, *group), Step: uint32(*step), Dir: uint32(*dir)}, 0)
	w := bufio.NewWriter(stdout)
	w.WriteByte('[')
	for i, v := range z {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
	}
	w.WriteString("]\n")
	return w.Flush()
}
