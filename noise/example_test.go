package noise_test

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/noise"
)

// The perturbation z of one training step: direction 0 of step 3 in
// parameter group 1's stream of a run seeded with 42. Fill draws the whole
// vector (on any number of goroutines, the same values); FillRange draws any
// part of it again, here elements 4 to 7, without the ones before: nothing
// is stored between the two. The values are bit-identical on every CPU and
// GPU, so they can be printed (scripts/noise_reference.py, an independent
// NumPy implementation of the contract, gives the same ones). Rademacher
// signs come from the same Philox words: +1 where a word is odd.
func ExampleStream() {
	s := noise.Stream{Seed: noise.StreamSeed(42, 1), Step: 3, Dir: 0}
	z := make([]float32, 8)
	noise.Fill(z, noise.Normal, s, 0)
	fmt.Printf("z: %.4f\n", z)

	tail := make([]float32, 4)
	s.FillRange(tail, 4, noise.Normal, 0)
	fmt.Println("elements 4..7 drawn again:", slices.Equal(tail, z[4:]))

	signs := make([]float32, 8)
	s.FillRange(signs, 0, noise.Rademacher, 0)
	fmt.Println("rademacher:", signs)
	// Output:
	// z: [-0.9387 -0.4054 -0.4582 0.1035 -0.0092 0.3294 -0.3476 -0.9012]
	// elements 4..7 drawn again: true
	// rademacher: [1 -1 -1 -1 1 1 -1 -1]
}

// Philox4x32 is the counter-based generator under every distribution: the
// known-answer vectors of Random123 (kat_vectors, philox4x32 10 rounds).
func ExamplePhilox4x32() {
	fmt.Printf("%#x\n", noise.Philox4x32([4]uint32{}, [2]uint32{}))
	fmt.Printf("%#x\n", noise.Philox4x32([4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}))
	// Output:
	// [0x6627e8d5 0xe169c58d 0xbc57ac4c 0x9b00dbd8]
	// [0xd16cfe09 0x94fdcceb 0x5001e420 0x24126ea1]
}
