// Command imagememory loads image files as train loads Pets' (imageproc's
// Decode, Resize to the config's size, Pixels) and prints, for each, the
// SHA-256 of its pixel_values (float32, little-endian, channels first), so
// that a run under /usr/bin/time -v measures the peak memory of decoding
// one large image and shows that its values did not change:
//
//	go build -o /tmp/imagememory ./scripts/imagememory
//	/usr/bin/time -v /tmp/imagememory [-config preprocessor_config.json] IMAGE...
//
// Without -config it uses ViTImageProcessor's defaults (224×224, mean and
// std 0.5). docs/MODELS.md gives the figures and how transformers' hash of
// the same image was computed.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/meazo-go/meazo/imageproc"
)

func main() {
	config := flag.String("config", "", "a preprocessor_config.json (default: ViTImageProcessor's defaults at 224×224)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: imagememory [-config preprocessor_config.json] IMAGE...")
		os.Exit(2)
	}
	cfg := imageproc.Default(224)
	if *config != "" {
		var err error
		if cfg, err = imageproc.LoadConfig(*config); err != nil {
			fmt.Fprintln(os.Stderr, "imagememory:", err)
			os.Exit(1)
		}
	}
	for _, path := range flag.Args() {
		sum, err := pixelsHash(cfg, path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "imagememory: %s: %v\n", path, err)
			os.Exit(1)
		}
		fmt.Printf("%x  %s\n", sum, path)
	}
}

// pixelsHash decodes, resizes and normalises one image as train does
// (train/vision_data.go: Decode, Resize, then Pixels) and hashes the result.
func pixelsHash(cfg imageproc.Config, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	img, err := imageproc.Decode(data)
	if err != nil {
		return nil, err
	}
	if cfg.DoResize {
		if img, err = imageproc.Resize(img, cfg.Width, cfg.Height); err != nil {
			return nil, err
		}
	}
	px, err := cfg.Pixels(img)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	b := make([]byte, 4*len(px))
	for i, v := range px {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	h.Write(b)
	return h.Sum(nil), nil
}
