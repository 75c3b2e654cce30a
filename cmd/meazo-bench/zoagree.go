package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/noise"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
)

func init() {
	register("zoagree", cli.Help{
		Summary:  "projected gradients of one model on two backends (e.g. cpu and cuda): how far ZO estimates agree",
		Synopsis: "-model DIR [-a cpu] [-b cuda] [-eps LIST] [-directions N] [flags]",
		Does: `Computes the projected gradients (L(θ+εz) − L(θ−εz)) / 2ε of one model for the same directions on two
backends, at each ε: whether a ZO run on a GPU estimates what the CPU does (small ε is where float32 differs).`,
		Reads: "-model DIR: an HF model directory (config.json, safetensors weights); the batch is random tokens.",
		Prints: `a header, then a line per ε: the median, 95th-percentile and largest relative difference, the share
within 1e-3, the share of signs that agree, and the scale of d.`,
		Example: "meazo-bench zoagree -model $MEAZO_SHARED/fixtures/models/llama-tiny -a cpu -b cuda",
	}, runZOAgree)
}

// agreeBench is zoagree's settings (its flags).
type agreeBench struct {
	dir, a, b, shape string
	dirs             int
	epss             []float64
	bsz, t           int
	bf16             bool
}

func parseZOAgree(args []string) (*agreeBench, error) {
	var ab agreeBench
	fs := modes.Flags("zoagree")
	fs.StringVar(&ab.dir, "model", "", "HF model directory (e.g. $MEAZO_SHARED/fixtures/models/llama-tiny)")
	fs.StringVar(&ab.a, "a", "cpu", "first backend")
	fs.StringVar(&ab.b, "b", "cuda", "second backend")
	fs.IntVar(&ab.dirs, "directions", 64, "number of directions z")
	epsList := fs.String("eps", "1e-3,1e-6", "comma-separated perturbation scales ε")
	fs.StringVar(&ab.shape, "shape", "4x32", "BxT batch of random tokens; the second half of each row is supervised")
	fs.BoolVar(&ab.bf16, "bf16", false, "keep the weights in bfloat16 on both backends (model.bf16_weights; with MEAZO_CUDA_BF16_PRODUCTS=1 the GPU multiplies them in bfloat16)")
	cli.Alias(fs, "bf16-weights", "bf16") // meazo-train's and meazo-eval task's spelling
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if ab.dirs < 1 {
		return nil, cli.Usage(fmt.Errorf("-directions must be at least 1, got %d", ab.dirs))
	}
	if err := backends.CheckName(ab.b); err != nil {
		return nil, cli.Usage(fmt.Errorf("-b: %w", err))
	}
	if err := backends.CheckName(ab.a); err != nil {
		return nil, cli.Usage(fmt.Errorf("-a: %w", err))
	}
	if ab.dir == "" {
		return nil, cli.Usage(fmt.Errorf("-model is required"))
	}
	for s := range strings.SplitSeq(*epsList, ",") {
		e, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(e > 0) {
			return nil, cli.Usage(fmt.Errorf("-eps: bad value %q", s))
		}
		ab.epss = append(ab.epss, e)
	}
	var err error
	if ab.bsz, ab.t, err = parseShape(ab.shape); err != nil {
		return nil, err
	}
	return &ab, nil
}

// runZOAgree computes, on each backend, the central-difference projected
// gradient d = (L(θ+εz) − L(θ−εz)) / 2ε of a LoRA adapter for many seeded
// directions z (the trainer's noise), and reports how the two backends'
// estimates differ: the relative difference |d_a − d_b| / max(|d_a|, |d_b|)
// (median, 95th percentile, maximum) and the share of directions whose signs
// agree, for each ε.
func runZOAgree(args []string, stdout io.Writer) error {
	ab, err := parseZOAgree(args)
	if err != nil {
		return err
	}
	da, err := ab.estimate(ab.a, stdout)
	if err != nil {
		return err
	}
	db, err := ab.estimate(ab.b, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s, %d directions, batch %s, LoRA r=16: projected gradients on %s vs %s\n", ab.dir, ab.dirs, ab.shape, ab.a, ab.b)
	// rel is |d_a − d_b| / max(|d_a|, |d_b|) per direction; it is large
	// where d itself is near 0, so the absolute difference is also given
	// against the RMS of d over the directions (the scale of a step).
	fmt.Fprintf(stdout, "%-8s %12s %12s %12s %10s %12s %14s %16s\n", "eps", "median rel", "p95 rel", "max rel", "rel<=1e-3", "signs agree", "median |d|", "max |Δd|/rms d")
	for e, eps := range ab.epss {
		reportAgreement(stdout, eps, da[e], db[e])
	}
	return nil
}

// estimate returns, on the named backend, d for every ε and direction
// ([ε][direction]): the model with a LoRA adapter whose B looks trained,
// on a batch of random tokens.
func (ab *agreeBench) estimate(name string, stdout io.Writer) ([][]float64, error) {
	be, err := backends.Open(name, 0, stdout)
	if err != nil {
		return nil, err
	}
	defer be.Close()
	m, err := model.LoadWith(ab.dir, model.LoadOptions{Backend: be, BF16Weights: ab.bf16})
	if err != nil {
		return nil, err
	}
	defer m.Free()
	// A -bf16 comparison of float32 weights would be labelled as bfloat16's
	// (the GPU session's bf16products part compared tiny float32 checkpoints).
	if note := train.BF16WeightsNote(m, ab.dir, ab.bf16, "-bf16"); note != "" {
		return nil, fmt.Errorf("%s; give a checkpoint that stores BF16 weights (a fixture's bf16/ folder)", note)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	in, labels := randomBatch(rng, m.VocabSize, ab.bsz, ab.t, ab.t-ab.t/2)
	ad, err := lora.New(m, lora.Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	theta := ad.Params()
	for _, g := range theta { // a trained-looking B (PEFT starts it at 0)
		for i := range g {
			if g[i] == 0 {
				g[i] = float32(rng.NormFloat64() * 0.01)
			}
		}
	}
	ad.Attach(m)
	return ab.directions(theta, func() (float64, error) {
		out, err := m.Forward(in, model.Options{Labels: labels})
		if err != nil {
			return 0, err
		}
		return out.Loss, nil
	})
}

// directions returns d for every ε and direction of the parameters theta,
// whose loss is loss(): direction dirn's noise is drawn once for both sides
// and every ε. theta is left perturbed.
func (ab *agreeBench) directions(theta [][]float32, loss func() (float64, error)) ([][]float64, error) {
	base := make([][]float32, len(theta))
	z := make([][]float32, len(theta))
	for i, g := range theta {
		base[i] = slices.Clone(g)
		z[i] = make([]float32, len(g))
	}
	ds := make([][]float64, len(ab.epss))
	for dirn := range ab.dirs {
		for gi := range theta {
			noise.Fill(z[gi], noise.Normal, noise.Stream{Seed: 7 + uint64(gi), Step: uint32(dirn)}, 0)
		}
		for e, eps := range ab.epss {
			var l [2]float64
			for side, sign := range []float32{1, -1} {
				for gi, g := range theta {
					for i := range g {
						g[i] = base[gi][i] + sign*float32(eps)*z[gi][i]
					}
				}
				var err error
				if l[side], err = loss(); err != nil {
					return nil, err
				}
			}
			ds[e] = append(ds[e], (l[0]-l[1])/(2*eps))
		}
	}
	return ds, nil
}

// reportAgreement prints one ε's line: how the two backends' d over the
// directions (da, db) differ.
func reportAgreement(stdout io.Writer, eps float64, da, db []float64) {
	var rel, mag []float64
	agree, within := 0, 0
	var ss, maxAbs float64
	for i := range da {
		x, y := da[i], db[i]
		den := math.Max(math.Abs(x), math.Abs(y))
		r := 0.0
		switch {
		case math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0):
			r = math.Inf(1) // a backend whose d is not finite agrees with nothing
		case den > 0:
			r = math.Abs(x-y) / den
		}
		rel = append(rel, r)
		mag = append(mag, math.Abs(x))
		if !math.IsInf(r, 1) && (x > 0) == (y > 0) {
			agree++
		}
		if r <= 1e-3 {
			within++
		}
		ss += x * x
		maxAbs = math.Max(maxAbs, math.Abs(x-y))
	}
	rms := math.Sqrt(ss / float64(len(da)))
	slices.Sort(rel)
	slices.Sort(mag)
	q := func(p float64) float64 { return rel[min(len(rel)-1, int(p*float64(len(rel))))] }
	fmt.Fprintf(stdout, "%-8.0e %12.3g %12.3g %12.3g %9.1f%% %11.1f%% %14.4g %16.3g\n", eps, q(0.5), q(0.95), rel[len(rel)-1],
		100*float64(within)/float64(len(rel)), 100*float64(agree)/float64(len(rel)), mag[len(mag)/2], maxAbs/rms)
}
