package data

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// The two ways the HF hub splits a split's Parquet into shards: a
// repository's data/train-00000-of-00002.parquet, …, and the files its
// converter writes (refs/convert/parquet), default/train/0000.parquet,
// 0001.parquet, … in a directory of the split's own.
var (
	repoShard      = regexp.MustCompile(`^(.+)-\d{5}-of-(\d{5})\.parquet$`)
	converterShard = regexp.MustCompile(`^\d{4}\.parquet$`)
)

// OtherShards returns the other shards of the split whose shard path is,
// where its name follows one of the HF hub's layouts and they lie beside
// it (sorted names, joined to path's directory): a data file names one file,
// so a run given one shard of several reads part of the split. A name of
// neither layout, or a directory that cannot be read, has none.
func OtherShards(path string) []string {
	dir, base := filepath.Split(path)
	var same func(name string) bool
	switch m := repoShard.FindStringSubmatch(base); {
	case m != nil:
		suffix := "-of-" + m[2] + ".parquet"
		same = func(name string) bool {
			n := repoShard.FindStringSubmatch(name)
			return n != nil && n[1] == m[1] && name[len(name)-len(suffix):] == suffix
		}
	case converterShard.MatchString(base):
		same = converterShard.MatchString
	default:
		return nil
	}
	entries, err := os.ReadDir(filepath.Clean(dir + "."))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if name := e.Name(); name != base && same(name) && !e.IsDir() {
			out = append(out, filepath.Join(dir, name))
		}
	}
	slices.Sort(out)
	return out
}
