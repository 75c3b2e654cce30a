package data

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// petsRow is a row of timm/oxford-iiit-pet's Parquet files.
type petsRow = HubImageRow

// otherRow lacks the image column (a text dataset's file, say).
type otherRow struct {
	Sentence string `parquet:"sentence"`
	Label    int64  `parquet:"label"`
}

func writeImageParquet[T any](t *testing.T, rows []T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "train.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	return p
}

func petsRows(t *testing.T) []petsRow {
	var rows []petsRow
	for i, name := range []string{"scene_97x61.jpg", "scene_97x61.png", "gray_150x100.jpg"} {
		b, err := os.ReadFile(filepath.Join("..", "imageproc", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var r petsRow
		r.Image.Bytes, r.Image.Path = b, name
		r.Label, r.ImageID = int64([]int{0, 36, 12}[i]), "Abyssinian_"+name
		rows = append(rows, r)
	}
	return rows
}

func TestReadImageParquet(t *testing.T) {
	rows := petsRows(t)
	exs, err := ReadImageParquet(writeImageParquet(t, rows), PetsClasses)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != len(rows) {
		t.Fatalf("%d examples, want %d", len(exs), len(rows))
	}
	for i, ex := range exs {
		if !bytes.Equal(ex.Image, rows[i].Image.Bytes) || ex.Label != int(rows[i].Label) || ex.ID != rows[i].ImageID {
			t.Errorf("row %d: id %q label %d, %d bytes; want %q, %d, %d bytes", i, ex.ID, ex.Label, len(ex.Image), rows[i].ImageID, rows[i].Label, len(rows[i].Image.Bytes))
		}
	}
	train, val, err := TrainValidation(len(exs), PetsSplit, 0)
	if err != nil || len(train)+len(val) != len(exs) || len(val) != 1 {
		t.Errorf("split of 3: %v / %v, %v (want 1 held out: ceil(5%% of 3))", train, val, err)
	}
}

func TestReadImageParquetRefuses(t *testing.T) {
	rows := petsRows(t)
	bad := append([]petsRow(nil), rows...)
	bad[1].Label = 37
	empty := append([]petsRow(nil), rows...)
	empty[2].Image.Bytes = nil
	pathOnly := append([]petsRow(nil), rows...)
	pathOnly[0].Image = HubImage{Path: "/data/pets/Abyssinian_1.jpg"}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"label out of range", writeImageParquet(t, bad), "row 1: label 37 is not one of the 37 classes"},
		{"no image", writeImageParquet(t, empty), "row 2: image.bytes is null"},
		{"only the image's path", writeImageParquet(t, pathOnly), `row 0: image.bytes is null, empty or not bytes (image.path is "/data/pets/Abyssinian_1.jpg": the image was not embedded`},
		{"no image column", writeImageParquet(t, []otherRow{{"a", 1}}), `column "image.bytes" is missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadImageParquet(tc.path, PetsClasses)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %v, want one naming the file and containing %q", err, tc.want)
			}
		})
	}
	p := writeImageParquet(t, rows)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o644)
	if _, err := ReadImageParquet(p, PetsClasses); err == nil || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("truncated file: %v", err)
	}
}
