package sweep

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/meazo-go/meazo/train"
)

// testConfigs is a directory of copies of configs/qwen06b_sst2_lora_*.yaml
// whose model and data are files that are there (the built-in demo's tiny
// model, stand-in data files), made by TestMain: a local study's sweeps are
// refused when a run would not find its files (CheckConfigs), and the tests
// run studies of those configs with a fake trainer.
var testConfigs string

// makeTestConfigs writes testConfigs' files into dir.
func makeTestConfigs(dir string) error {
	if _, err := train.WriteDemo(filepath.Join(dir, "demo"), 10); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(dir, "demo", "model"), filepath.Join(dir, "models", "Qwen3-0.6B")); err != nil {
		return err
	}
	data := filepath.Join(dir, "data", "sst2", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"} {
		if err := os.WriteFile(filepath.Join(data, f), []byte("stand-in: the fake trainer reads no data\n"), 0o644); err != nil {
			return err
		}
	}
	testConfigs = filepath.Join(dir, "configs")
	if err := os.MkdirAll(testConfigs, 0o755); err != nil {
		return err
	}
	paths, err := filepath.Glob("../configs/qwen06b_sst2_lora_*.yaml")
	if err != nil {
		return err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := strings.ReplaceAll(string(b), "path: models/", "path: "+dir+"/models/")
		s = strings.ReplaceAll(s, ": data/", ": "+dir+"/data/")
		if err := os.WriteFile(filepath.Join(testConfigs, filepath.Base(p)), []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}
