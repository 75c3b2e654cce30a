package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor/backends"
	"github.com/meazo-go/meazo/train"
	"github.com/meazo-go/meazo/zo"
)

func init() {
	register("vitstep", cli.Help{
		Summary:  "one ZO step (LoRA on query/value and the classifier, MEAZO) of a ViT image classifier vs two plain forwards",
		Synopsis: "-model config.json [-batch N] [-steps N] [-backend B] [flags]",
		Does: `Times one MEAZO step of a ViT image classifier (LoRA r=16 on query and value, the classifier trained whole) on
random weights and images, against two plain forwards on one upload of the images (as the step's two
variants share one): what a Pets run's step costs here.`,
		Reads: `-model: a ViTForImageClassification config.json (scripts/gpu/vit-b16-pets-config.json: ViT-B/16,
Pets' 37 classes); random weights of its shapes.`,
		Prints: `a header (the model, the adapter, threads, backend), then a line each for two plain forwards (and
their images' cut into patches and upload alone) and the ZO step: median seconds, the ratio, the host's share;
-steps: time per step and losses.`,
		Example: "meazo-bench vitstep -model scripts/gpu/vit-b16-pets-config.json -batch 16",
	}, runViTStep)
}

// vitStepBench is vitstep's settings (its flags).
type vitStepBench struct {
	cfgPath, backend   string
	profile            string // -cpuprofile: a CPU profile of the timed forwards and steps
	batch, reps, steps int
	threads            int
	cfg                *model.ViTConfig
}

func parseViTStep(args []string) (*vitStepBench, error) {
	var vb vitStepBench
	fs := modes.Flags("vitstep")
	fs.StringVar(&vb.cfgPath, "model", "", "a ViTForImageClassification config.json (random weights of its shapes; scripts/gpu/vit-b16-pets-config.json is ViT-B/16 with Pets' 37 classes)")
	fs.IntVar(&vb.batch, "batch", 32, "images per batch (random pixel values and labels)")
	cli.Alias(fs, "batch-size", "batch") // meazo-eval task's and meazo-inspect generate's spelling
	fs.IntVar(&vb.reps, "reps", 3, "timed repetitions after one warm-up; the median is reported")
	fs.IntVar(&vb.steps, "steps", 0, "then a run of this many MEAZO steps, each on a new random batch: its time per step and losses")
	fs.IntVar(&vb.threads, "threads", runtime.GOMAXPROCS(0), "CPU worker threads")
	fs.StringVar(&vb.backend, "backend", "auto", backends.Usage)
	fs.StringVar(&vb.profile, "cpuprofile", "", "write a CPU profile of the timed forwards and steps to this file")
	if err := cli.Parse(fs, args); err != nil {
		return nil, cli.Usage(err)
	}
	if err := checkThreads(vb.threads); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	if err := backends.CheckName(vb.backend); err != nil {
		return nil, cli.Usage(fmt.Errorf("-backend: %w", err))
	}
	switch {
	case vb.cfgPath == "":
		return nil, cli.Usage(fmt.Errorf("-model: a ViTForImageClassification config.json is required"))
	case vb.batch < 1 || vb.batch > 4096:
		return nil, cli.Usage(fmt.Errorf("-batch: must be between 1 and 4096, got %d", vb.batch))
	case vb.reps < 1:
		return nil, cli.Usage(fmt.Errorf("-reps: must be >= 1, got %d", vb.reps))
	case vb.steps < 0:
		return nil, cli.Usage(fmt.Errorf("-steps: must be >= 0, got %d", vb.steps))
	}
	var err error
	if vb.cfg, err = model.LoadViTConfig(vb.cfgPath); err != nil {
		return nil, err
	}
	return &vb, nil
}

func runViTStep(args []string, stdout io.Writer) error {
	vb, err := parseViTStep(args)
	if err != nil {
		return err
	}
	be, err := backends.Open(vb.backend, vb.threads, stdout)
	if err != nil {
		return err
	}
	defer be.Close()
	t0 := time.Now()
	m, err := model.NewRandomViT(vb.cfg, 1, 0.02, be)
	if err != nil {
		return err
	}
	defer m.Free()
	a, err := lora.NewViT(m, lora.Options{Seed: 1})
	if err != nil {
		return err
	}
	c := &m.Config
	fmt.Fprintf(stdout, "# %s: ViT, %d layers, hidden %d, %dx%d images in %d patches, %d classes, %d parameters; random float32 weights built in %.1fs\n",
		vb.cfgPath, c.NumLayers, c.HiddenSize, c.ImageSize, c.ImageSize, c.Patches(), c.NumLabels, c.ParamCount(), time.Since(t0).Seconds())
	fmt.Fprintf(stdout, "# LoRA r=16 on query/value and the classifier trained whole (%d trainable), MEAZO, %d CPU threads, %s\n", a.Count(), vb.threads, be.Describe())
	fmt.Fprintf(stdout, "%-8s %-22s %10s %14s %7s %9s\n", "shape", "what", "seconds", "vs 2 forwards", "host", "host ms")
	rng := rand.New(rand.NewPCG(3, 4))
	obj := train.NewViTObjective(m, a)
	pixels, labels := randomImages(rng, c, vb.batch)
	if err := obj.SetImages(pixels, labels); err != nil {
		return err
	}
	shape := fmt.Sprintf("%dx%d", vb.batch, c.ImageSize)
	zb := zoStepBench{reps: vb.reps}
	stop, err := startProfile(vb.profile, vb.cfgPath)
	if err != nil {
		return err
	}
	defer stop()
	a.Attach(m)
	two, _, err := zb.median(nil, func() error {
		im, err := m.Images(pixels, vb.batch)
		if err != nil {
			return err
		}
		defer im.Free()
		for range 2 {
			if _, _, err := m.LossOf(im, labels); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14s\n", shape, "2 plain forwards", two, "1.00")
	// Their share that is the host's cut of the images and the upload (on
	// a GPU a synchronous copy from pageable memory, the device idle).
	up, _, err := zb.median(nil, func() error {
		im, err := m.Images(pixels, vb.batch)
		if err == nil {
			im.Free()
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-22s %10.4f %14.3f\n", shape, "of which images in", up, up/two)
	eng, err := zo.New(a.Params(), zo.NewMEAZO(1e-4), zo.Config{Eps: 1e-3, Q: 1, Seed: 1})
	if err != nil {
		return err
	}
	timed := &timedObjective{Objective: obj}
	sec, host, err := zb.median(timed, func() error { _, err := eng.Step(timed); return err })
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-22s %10.3f %14.2f %6.1f%% %9.1f\n", shape, "ZO step q=1", sec, sec/two, 100*host, 1000*host*sec)
	reportDeviceMemory(stdout, be)
	if vb.steps > 0 {
		next := func() { _ = obj.SetImages(randomImages(rng, c, vb.batch)) } // a ViT's objective: no error
		if err := stepRun(stdout, be, shape, vb.steps, eng, obj, next); err != nil {
			return err
		}
	}
	reportPeak(stdout, be)
	return nil
}

// randomImages draws n images of uniform pixel values in [-1, 1) (the
// range of ViTImageProcessor's normalised values) and their classes.
func randomImages(rng *rand.Rand, c *model.ViTConfig, n int) (pixels []float32, labels []int) {
	pixels = make([]float32, n*c.PixelsPerImage())
	for i := range pixels {
		pixels[i] = 2*rng.Float32() - 1
	}
	labels = make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(c.NumLabels)
	}
	return pixels, labels
}
