// Command makepets writes the tiny Pets-like dataset of train's tests
// (train/testdata/pets): two Parquet files with the schema of the HF hub's
// timm/oxford-iiit-pet (image: a struct of the file's bytes and path,
// label: the breed 0…36, image_id, label_cat_dog), holding small images
// drawn with Go's image package: each class a colour and a stripe
// direction of its own, in sizes from 17 to 31 pixels a side, PNG and a
// few JPEG. The files are a few KB and the same bytes on every run.
//
//	go run ./scripts/makepets train/testdata/pets
package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/meazo-go/meazo/data"
)

// row is a row of timm/oxford-iiit-pet's Parquet files.
type row = data.HubImageRow

// classes are the breeds the images use: a few of the 37, the last one too.
var classes = []int{0, 5, 12, 36}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: makepets DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	for _, split := range []struct {
		name  string
		n     int
		first int
	}{{"train", 40, 0}, {"test", 12, 1000}} {
		var rows []row
		for i := range split.n {
			rows = append(rows, makeRow(split.first+i, classes[i%len(classes)]))
		}
		if err := parquet.WriteFile(filepath.Join(dir, split.name+".parquet"), rows); err != nil {
			fail(err)
		}
	}
}

// makeRow draws image k of class c.
func makeRow(k, c int) row {
	w, h := 17+(k*7)%15, 17+(k*5)%15
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	base := color.RGBA{uint8(40 + 50*(c%5)), uint8(200 - 40*(c%4)), uint8(60 + 5*c), 255}
	for y := range h {
		for x := range w {
			col := base
			stripe := x
			if c%2 == 1 {
				stripe = y
			}
			if (stripe/3)%2 == 0 {
				col.R, col.G = col.G, uint8((int(col.B)+k*13)%256)
			}
			img.Set(x, y, col)
		}
	}
	var r row
	var buf bytes.Buffer
	ext := "png"
	if k%5 == 4 {
		ext = "jpg"
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
			fail(err)
		}
	} else if err := png.Encode(&buf, img); err != nil {
		fail(err)
	}
	r.ImageID = fmt.Sprintf("breed%02d_%d", c, k)
	r.Image.Bytes, r.Image.Path = buf.Bytes(), r.ImageID+"."+ext
	r.Label, r.LabelCatDog = int64(c), int64(c%2)
	return r
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "makepets:", err)
	os.Exit(1)
}
