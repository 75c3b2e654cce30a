package train

import (
	"fmt"
	"io"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/imageproc"
	"github.com/meazo-go/meazo/internal/parallel"
)

// labeledImage is one example of an image task, decoded and resized once
// when the run starts (what ViTImageProcessor makes of the file before it
// rescales and normalises: pixel_values are made from it batch by batch).
type labeledImage struct {
	img   *imageproc.RGB
	label int
	id    string // its image_id (data.ImageExample.ID), for its answer's record
	row   int    // its row in the file
}

// imageSplits are an image task's train, validation and test examples.
type imageSplits struct{ train, val, test []labeledImage }

// imageSource is one split's file and the rows of it that the split takes.
type imageSource struct {
	key, path string // the config key that names the file, and the file
	rows      []data.ImageExample
	index     []int // the file's row of each example (for errors)
}

// loadImageSplits reads an image task's Parquet files as the data protocol
// reads SST-2's (docs/ALGORITHMS.md): the training file's 5% held out as
// validation by a permutation seeded by task.data_seed (unless
// task.validation names a file), the first max_train / max_validation /
// max_test of each split kept; then it decodes and resizes every image
// (proc, to side×side), on workers threads. A row that is not a valid
// example (an unreadable image, a label that is not one of the classes, a
// missing column) is an error naming the file and the row.
func loadImageSplits(cfg *Config, proc imageproc.Config, side, classes, workers int, log io.Writer, stop func(while string) error) (*imageSplits, error) {
	all, err := data.ReadImageParquet(cfg.Task.Train, classes)
	if err != nil {
		return nil, fmt.Errorf("task.train: %w", err)
	}
	fmt.Fprintf(log, "read %d training images from %s\n", len(all), cfg.Task.Train)
	warnShards(log, "task.train", cfg.Task.Train)
	train := imageSource{key: "task.train", path: cfg.Task.Train}
	val := imageSource{key: "task.train", path: cfg.Task.Train}
	if cfg.Task.Validation != "" {
		if val.rows, err = data.ReadImageParquet(cfg.Task.Validation, classes); err != nil {
			return nil, fmt.Errorf("task.validation: %w", err)
		}
		val.key, val.path, val.index = "task.validation", cfg.Task.Validation, firstRows(len(val.rows))
		warnShards(log, "task.validation", cfg.Task.Validation)
		train.rows, train.index = all, firstRows(len(all))
	} else {
		tr, va, err := data.TrainValidation(len(all), data.PetsSplit, cfg.Task.DataSeed)
		if err != nil {
			return nil, err
		}
		train.rows, train.index = pickImages(all, tr), tr
		val.rows, val.index = pickImages(all, va), va
	}
	train.cut(cfg.Task.MaxTrain)
	val.cut(cfg.Task.MaxValidation)
	if len(train.rows) == 0 || len(val.rows) == 0 {
		return nil, fmt.Errorf("empty split: %d training and %d validation images (task.train %s, task.validation %q)", len(train.rows), len(val.rows), cfg.Task.Train, cfg.Task.Validation)
	}
	s := &imageSplits{}
	decode := func(src *imageSource, what string) ([]labeledImage, error) {
		return src.decode(proc, side, workers, func() error { return stop("decoding the " + what + " images") })
	}
	if s.train, err = decode(&train, "training"); err != nil {
		return nil, err
	}
	if s.val, err = decode(&val, "validation"); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "train split: %d images; validation split: %d images (decoded and resized to %d×%d)\n", len(s.train), len(s.val), side, side)
	if cfg.Task.Test != "" && !cfg.Eval.Skip {
		test := imageSource{key: "task.test", path: cfg.Task.Test}
		if test.rows, err = data.ReadImageParquet(cfg.Task.Test, classes); err != nil {
			return nil, fmt.Errorf("task.test: %w", err)
		}
		test.index = firstRows(len(test.rows))
		test.cut(cfg.Task.MaxTest)
		if s.test, err = decode(&test, "test"); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "read %d test images from %s\n", len(s.test), cfg.Task.Test)
		warnShards(log, "task.test", cfg.Task.Test)
	}
	return s, nil
}

// firstRows is 0, 1, …, n−1.
func firstRows(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pickImages returns the rows of all at the given indices, in their order.
func pickImages(all []data.ImageExample, index []int) []data.ImageExample {
	out := make([]data.ImageExample, len(index))
	for i, j := range index {
		out[i] = all[j]
	}
	return out
}

// cut keeps the first n rows (0: all).
func (s *imageSource) cut(n int) {
	if n > 0 && n < len(s.rows) {
		s.rows, s.index = s.rows[:n], s.index[:n]
	}
}

// decodeChunk is how many images are decoded between two polls of the
// stop request.
const decodeChunk = 256

// decode decodes the source's images and resizes them as proc says (each
// image on its own, so the result does not depend on the workers), then
// checks that they are side×side, the model's input. stop is polled between
// chunks of images. The workers decode within one imageproc.Budget, so that
// hostile files (a few hundred KB each that decode to 256 MiB) cannot hold
// the worker count times that.
func (s *imageSource) decode(proc imageproc.Config, side, workers int, stop func() error) ([]labeledImage, error) {
	out := make([]labeledImage, len(s.rows))
	errs := make([]error, len(s.rows))
	budget := imageproc.NewBudget()
	for lo := 0; lo < len(s.rows); lo += decodeChunk {
		if err := stop(); err != nil {
			return nil, err
		}
		hi := min(lo+decodeChunk, len(s.rows))
		parallel.For(hi-lo, workers, func(k int) {
			i := lo + k
			release := budget.Acquire(s.rows[i].Image)
			img, err := imageproc.Decode(s.rows[i].Image)
			if err == nil && proc.DoResize {
				img, err = imageproc.Resize(img, proc.Width, proc.Height)
			}
			release() // what is kept is side×side (or refused below)
			if err == nil && (img.Width != side || img.Height != side) {
				err = fmt.Errorf("the image is %d×%d after preprocessing; the model takes %d×%d", img.Width, img.Height, side, side)
			}
			out[i], errs[i] = labeledImage{img: img, label: s.rows[i].Label, id: s.rows[i].ID, row: s.index[i]}, err
		})
		for i := lo; i < hi; i++ {
			if errs[i] != nil {
				return nil, fmt.Errorf("%s %s: row %d (image %q): %w", s.key, s.path, s.index[i], s.rows[i].ID, errs[i])
			}
		}
		for i := lo; i < hi; i++ {
			s.rows[i].Image = nil // the file's bytes are no longer needed
		}
	}
	return out, nil
}

// pixels is pixel_values [n][3][side][side] of the images, as
// ViTImageProcessor computes them (proc: rescale and normalise; the resize
// was done when decoding), and their labels.
func pixels(proc imageproc.Config, imgs []labeledImage) ([]float32, []int, error) {
	var px []float32
	labels := make([]int, len(imgs))
	for i, im := range imgs {
		p, err := proc.Pixels(im.img)
		if err != nil {
			return nil, nil, err
		}
		px = append(px, p...)
		labels[i] = im.label
	}
	return px, labels, nil
}
