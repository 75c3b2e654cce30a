package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOtherShards: the other shards of a split in the HF hub's two
// layouts, and none for a lone shard, another split's shards, or a name
// of neither layout.
func TestOtherShards(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet", "data/test-00000-of-00001.parquet",
		"data/train-00000-of-00003.parquet", "default/train/0000.parquet", "default/train/0001.parquet",
		"default/validation/0000.parquet", "default/train/notes.parquet", "mine/x.parquet", "mine/0000.parquet.bak",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"data/train-00000-of-00002.parquet", []string{"data/train-00001-of-00002.parquet"}},
		{"data/train-00001-of-00002.parquet", []string{"data/train-00000-of-00002.parquet"}},
		{"data/test-00000-of-00001.parquet", nil},
		{"default/train/0000.parquet", []string{"default/train/0001.parquet"}},
		{"default/validation/0000.parquet", nil},
		{"mine/x.parquet", nil},
		{"missing/0000.parquet", nil},
	} {
		var want []string
		for _, w := range tc.want {
			want = append(want, filepath.Join(dir, filepath.FromSlash(w)))
		}
		if got := OtherShards(filepath.Join(dir, filepath.FromSlash(tc.path))); !slices.Equal(got, want) {
			t.Errorf("OtherShards(%s) = %v, want %v", tc.path, got, want)
		}
	}
}
