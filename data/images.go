package data

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// ImageExample is one row of an image classification dataset: the encoded
// image (PNG, JPEG or GIF bytes, decoded later by package imageproc) and its
// class.
type ImageExample struct {
	ID    string // image_id when the file has one, else the row's position
	Image []byte
	Label int
}

// Pets is Oxford-IIIT Pets' 37-way breed classification (task.name pets):
// an image task, read by ReadImageParquet, which ParseTask (the text
// tasks') does not accept.
const Pets Task = "pets"

// PetsClasses is the number of Oxford-IIIT Pets breeds (the labels 0…36).
const PetsClasses = 37

// PetsSplit holds out 5% of Pets' train split as validation, drawn as
// SST-2's is (TrainValidation); the test split is the dataset's own.
var PetsSplit = SplitSpec{ValidationFraction: 0.05}

// HubImageRow is a row of the HF hub's Oxford-IIIT Pets Parquet files
// (timm/oxford-iiit-pet) as parquet-go writes it: the datasets Image
// feature (a struct of the file's bytes and path), the breed's ClassLabel,
// the image's name and the species' ClassLabel (0 cat, 1 dog). The reader
// does not need it (ReadImageParquet reads the columns by name); it is for
// writing such files: tests, scripts/makepets.
type HubImageRow struct {
	Image       HubImage `parquet:"image"`
	Label       int64    `parquet:"label"`
	ImageID     string   `parquet:"image_id"`
	LabelCatDog int64    `parquet:"label_cat_dog"`
}

// HubImage is the datasets Image feature as the hub's Parquet files store
// it: the image file's bytes and its name.
type HubImage struct {
	Bytes []byte `parquet:"bytes,optional"`
	Path  string `parquet:"path,optional"`
}

// imageColumns are the columns of the HF hub's image classification
// Parquet files (timm/oxford-iiit-pet: the datasets Image feature, a struct
// of the file's bytes and path, and a ClassLabel).
var imageColumns = []string{"image.bytes", "label", "image_id?", "image.path?"}

// ReadImageParquet reads an HF hub image classification Parquet file
// (image.bytes, label, and image_id when present) row group by row group.
// A row whose image is null or empty, or whose label is not one of the
// classes 0…classes−1, is an error naming the row; so is a file without
// the columns.
func ReadImageParquet(path string, classes int) ([]ImageExample, error) {
	f, leaves, rows, err := openParquet(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer rows.Close()
	index := map[string]int{}
	for _, want := range imageColumns {
		name, optional := want, want[len(want)-1] == '?'
		if optional {
			name = name[:len(name)-1]
		}
		i := findLeaf(leaves, name)
		if i < 0 && !optional {
			return nil, fmt.Errorf("load %s: column %q is missing (the file has %v); want the HF hub schema of an image dataset (image.bytes, label)",
				path, name, joinPaths(leaves))
		}
		index[name] = i
	}
	var out []ImageExample
	buf := make([]parquet.Row, 16)
	for {
		var k int
		err := parquetCall(func() (err error) { k, err = rows.ReadRows(buf); return err })
		for _, row := range buf[:k] {
			ex, msg := imageRow(row, index, classes)
			if msg != "" {
				return nil, fmt.Errorf("load %s: row %d: %s", path, len(out), msg)
			}
			if ex.ID == "" {
				ex.ID = fmt.Sprint(len(out))
			}
			out = append(out, ex)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("load %s: row %d: %w", path, len(out), err)
		}
	}
}

// pathOnly says, for a row without the image's bytes, where its image.path
// (column i, −1 when the file has none) says the image was: the datasets
// Image feature keeps only the path of a file it did not embed, which this
// reader cannot follow (the file is on the machine that wrote the Parquet).
func pathOnly(values map[int][]parquet.Value, i int) string {
	if i < 0 {
		return ""
	}
	if p := values[i]; len(p) == 1 && !p[0].IsNull() && p[0].Kind() == parquet.ByteArray && len(p[0].ByteArray()) > 0 {
		return fmt.Sprintf(" (image.path is %q: the image was not embedded in the file; push or save the dataset with its images embedded)", p[0].ByteArray())
	}
	return ""
}

// imageRow builds an ImageExample from one row's values, or says what is
// wrong with it.
func imageRow(row parquet.Row, index map[string]int, classes int) (ImageExample, string) {
	var ex ImageExample
	values := map[int][]parquet.Value{}
	for _, v := range row {
		values[v.Column()] = append(values[v.Column()], v)
	}
	img := values[index["image.bytes"]]
	if len(img) != 1 || img[0].IsNull() || img[0].Kind() != parquet.ByteArray || len(img[0].ByteArray()) == 0 {
		return ex, "image.bytes is null, empty or not bytes" + pathOnly(values, index["image.path"])
	}
	ex.Image = append([]byte(nil), img[0].ByteArray()...)
	lv := values[index["label"]]
	if len(lv) != 1 || lv[0].IsNull() {
		return ex, "label is null or missing"
	}
	switch lv[0].Kind() {
	case parquet.Int32:
		ex.Label = int(lv[0].Int32())
	case parquet.Int64:
		ex.Label = int(lv[0].Int64())
	default:
		return ex, fmt.Sprintf("label is %v, not an integer", lv[0].Kind())
	}
	if ex.Label < 0 || ex.Label >= classes {
		return ex, fmt.Sprintf("label %d is not one of the %d classes", ex.Label, classes)
	}
	if i := index["image_id"]; i >= 0 {
		if id := values[i]; len(id) == 1 && !id[0].IsNull() {
			if s, msg := parquetText(id[0], true); msg == "" {
				ex.ID = s
			}
		}
	}
	return ex, ""
}
