package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/model"
)

// runRandomViT is random-model for a ViT image classifier's config.json
// (ViTForImageClassification, with its classes): the weights, config.json
// and a preprocessor_config.json of ViTImageProcessor's defaults at the
// model's image size, so that meazo-train's image task (task.name pets),
// meazo-eval and meazo-inspect forward load it as they load a published
// checkpoint. A ViT has no tokenizer and is stored in float32. The flags
// every model takes were checked (checkFlags).
func runRandomViT(fs *flag.FlagSet, f *randomModelFlags, stdout io.Writer) error {
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "tokenizer" || fl.Name == "dtype" && f.dtype != "f32" {
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return cli.Usage(fmt.Errorf("%v: not for a ViT (no tokenizer; float32 weights)", bad))
	}
	c, err := model.LoadViTConfig(f.cfgPath)
	if err != nil {
		return err
	}
	if f.layers > 0 && f.layers < c.NumLayers {
		c.NumLayers = f.layers
	}
	if err := checkNoModel(f.out); err != nil {
		return err
	}
	proc := filepath.Join(f.out, "preprocessor_config.json")
	if _, err := os.Lstat(proc); err == nil {
		return fmt.Errorf("--out %s already holds preprocessor_config.json: choose a new or empty directory", f.out)
	}
	if err := outpath.Check("--out", f.out, f.cfgPath); err != nil {
		return err
	}
	pre, err := imageproc.Default(c.ImageSize).JSON()
	if err != nil {
		return err
	}
	m, err := model.WriteRandomViT(f.out, c, f.seed, f.std)
	if err != nil {
		return err
	}
	m.Free()
	if err := keepConfigKeys(f.out, f.cfgPath); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(proc, pre); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a random ViTForImageClassification (%s, hidden %d, %d×%d images, %d classes, %s parameters, f32) and its preprocessor_config.json to %s\n",
		layers(c.NumLayers), c.HiddenSize, c.ImageSize, c.ImageSize, c.NumLabels, paramCount(int64(c.ParamCount())), f.out)
	return nil
}
