package tensor_test

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor"
	_ "github.com/meazo-go/meazo/tensor/cpu" // registers "cpu"; tensor/backends links every backend
)

// A program has the backends whose packages it links (this one links only
// tensor/cpu). "auto" opens the first of them that opens and says in
// skipped why each one before it could not (here there is none before it);
// a name that is not registered is an error listing those that are.
func ExampleOpen() {
	be, skipped, err := tensor.Open("auto", tensor.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer be.Close()
	fmt.Println("opened", be.Name(), "skipping", len(skipped))

	_, _, err = tensor.Open("tpu", tensor.Options{})
	fmt.Println(err)
	// Output:
	// opened cpu skipping 0
	// unknown backend "tpu" (have auto, cpu)
}

// Full-parameter ZO reads a weight perturbed, θ + εz, without writing or
// copying it: the noise is drawn again as the product reads W. Here one
// MatMulPerturbed call multiplies two rows of x, the first by W as it is,
// the second by W + εz; each row equals the plain MatMul by the weight
// that the host forms element by element (noise.Perturbed), bit for bit.
// The two rows of x are equal, so the rows of y differ by the perturbation
// alone.
func ExampleTrainer() {
	be, _, err := tensor.Open("cpu", tensor.Options{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer be.Close()
	tr, ok := be.(tensor.Trainer)
	if !ok {
		fmt.Println(be.Name(), "cannot train a model's own weights")
		return
	}
	const n, k = 3, 4 // W [3][4]
	w := []float32{0.5, -1, 0.25, 2, 1, 0, -0.5, 0.75, -2, 1.5, 1, -0.25}
	x := []float32{1, 2, 3, 4, 1, 2, 3, 4}
	p := &tensor.Perturbation{Noise: tensor.Noise{Stream: noise.Stream{Seed: noise.StreamSeed(7, 0), Step: 1}, Dist: noise.Normal, Norm: 1}, Scale: 1e-3}

	packed := be.Pack(w, n, k, false)
	defer be.FreeWeight(packed)
	xb, y := be.FromHost(x), be.Alloc(2*n)
	defer be.Free(xb, y)
	tr.MatMulPerturbed(y, xb, packed, []tensor.Segment{{Rows: 1}, {Rows: 1, P: p}}, false)
	got := slices.Clone(be.ToHost(y))

	z := make([]float32, n*k)
	p.Stream.FillRange(z, 0, p.Dist, p.Norm)
	wp := make([]float32, n*k)
	for i := range w {
		wp[i] = noise.Perturbed(w[i], p.Scale, z[i])
	}
	for row, weights := range [][]float32{w, wp} {
		pw := be.Pack(weights, n, k, false)
		xr, yr := be.FromHost(x[row*k:(row+1)*k]), be.Alloc(n)
		be.MatMul(yr, xr, 1, pw)
		fmt.Printf("row %d: the same bits as MatMul by the host's weights: %v\n", row, slices.Equal(got[row*n:(row+1)*n], be.ToHost(yr)))
		be.Free(xr, yr)
		be.FreeWeight(pw)
	}
	fmt.Println("row 1 differs from row 0:", !slices.Equal(got[:n], got[n:]))
	// Output:
	// row 0: the same bits as MatMul by the host's weights: true
	// row 1: the same bits as MatMul by the host's weights: true
	// row 1 differs from row 0: true
}
