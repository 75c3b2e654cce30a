package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/meazo-go/meazo/data"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/rundir"
	"github.com/meazo-go/meazo/safetensors"
)

// preflight checks, before a run writes anything or reads a weight, that
// every file it needs is there: the model's config.json, weights (every
// shard an index names) and tokenizer files, the data files and
// adapter.init. A missing one is the commonest way a first run fails, and
// found here it fails in a moment, leaving nothing behind, instead of after
// minutes of loading; the error names every missing file and, for the
// paper's models and datasets, the command that downloads them.
func preflight(cfg *Config) error {
	var missing, fixes []string
	relative := false
	miss := func(key, path, what string, fix string) {
		missing = append(missing, fmt.Sprintf("%s %s: %s", key, path, what))
		if fix != "" && !strings.Contains(strings.Join(fixes, "\n"), fix) {
			fixes = append(fixes, fix)
		}
		relative = relative || !filepath.IsAbs(path)
	}
	if what := checkModelDir(cfg.Model.Path, isImageTask(cfg)); what != "" {
		miss("model.path", cfg.Model.Path, what, modelDownload(cfg))
	}
	for _, f := range []struct{ key, path string }{
		{"task.train", cfg.Task.Train}, {"task.validation", cfg.Task.Validation}, {"task.test", testFile(cfg)},
	} {
		if f.path == "" {
			continue
		}
		if what := checkFile(f.path); what != "" {
			fix := ""
			switch what {
			case noSuchFile:
				fix = datasetDownload(f.path)
			case isADirectory: // a dataset's download directory, say
				what += " (name the data file in it: " + dataExts(data.Task(cfg.Task.Name)) + ")"
			}
			miss(f.key, f.path, what, fix)
		}
	}
	if dir := cfg.Adapter.Init; dir != "" {
		for _, name := range rundir.AdapterFiles {
			if what := checkFile(filepath.Join(dir, name)); what != "" {
				if what == noSuchFile && name == "adapter_config.json" {
					miss("adapter.init", dir, notAnAdapter(dir), "")
				} else {
					miss("adapter.init", dir, name+" "+what+" (want a saved adapter directory: a run's best/ or last/)", "")
				}
				break
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msg := "the run needs files that are missing or unusable (nothing was written):\n  " + strings.Join(missing, "\n  ")
	if wd, err := os.Getwd(); err == nil && relative {
		msg += "\n(relative paths are to the working directory, " + wd + ")"
	}
	if len(fixes) > 0 {
		msg += "\n" + strings.Join(fixes, "\n")
	}
	return errors.New(msg)
}

// Preflight is the check a run makes before it writes anything (preflight):
// that every file cfg names (the model, the data, adapter.init) is there
// and usable. meazo-sweep makes it for a study's sweeps before it starts
// their runs on this machine.
func Preflight(cfg *Config) error { return preflight(cfg) }

// testFile is task.test where the run evaluates on it.
func testFile(cfg *Config) string {
	if cfg.Eval.Skip {
		return ""
	}
	return cfg.Task.Test
}

// checkFile says what is wrong with a file a run reads ("" if nothing).
func checkFile(path string) string {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return noSuchFile
	case err != nil:
		return err.Error()
	case st.IsDir():
		return isADirectory
	case st.Mode().IsRegular() && st.Size() == 0: // (a pipe's size is 0 too: refused when read)
		return fileIsEmpty
	}
	return ""
}

const (
	noSuchFile   = "no such file"
	isADirectory = "a directory, not a file"
	fileIsEmpty  = "the file is empty"
)

// checkModelDir says what is missing of a model directory ("" if
// nothing): config.json (which must parse as a model this project runs),
// the weights (one file, or an index and every shard it names),
// tokenizer.json (or vocab.json and merges.txt) and tokenizer_config.json;
// an image model's (image: a ViT's config.json) preprocessor_config.json
// instead of the tokenizer.
func checkModelDir(dir string, image bool) string {
	if what := notADir(dir); what != "" {
		return what
	}
	var gone []string
	var empty []string // there, but empty: not "no … there"
	loadConfig := func(path string) error { _, err := model.LoadConfig(path); return err }
	if image {
		loadConfig = func(path string) error { _, err := model.LoadViTConfig(path); return err }
	}
	if err := loadConfig(filepath.Join(dir, "config.json")); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "config.json")); serr != nil {
			if what := RunDirAsModel(dir); what != "" {
				return what
			}
			gone = append(gone, "config.json")
		} else if checkFile(filepath.Join(dir, "config.json")) == fileIsEmpty {
			empty = append(empty, "config.json")
		} else {
			return err.Error()
		}
	}
	weights, err := safetensors.CheckpointFiles(dir)
	convert := "" // the weights are there, in a format to convert first
	switch {
	case err == nil:
	case checkFile(filepath.Join(dir, "pytorch_model.bin")) == "" || checkFile(filepath.Join(dir, "pytorch_model.bin.index.json")) == "":
		// OPT's checkpoint (README, docs/MODELS.md); the larger OPT models' is sharded.
		convert = "no model.safetensors: the weights are PyTorch's pytorch_model.bin (as OPT's are published), which a run does not read; " +
			"convert it first: python3 scripts/bin_to_safetensors.py " + dir
	default:
		gone = append(gone, "model.safetensors (or model.safetensors.index.json and its shards)")
	}
	for _, w := range weights {
		switch checkFile(w) {
		case "":
		case fileIsEmpty:
			empty = append(empty, filepath.Base(w))
		default:
			gone = append(gone, filepath.Base(w))
		}
	}
	if image {
		switch checkFile(filepath.Join(dir, "preprocessor_config.json")) {
		case "":
		case fileIsEmpty:
			empty = append(empty, "preprocessor_config.json")
		default:
			gone = append(gone, "preprocessor_config.json")
		}
		return joinWhat(convert, missingFiles(gone), emptyFiles(empty))
	}
	// The tokenizer: tokenizer.json, or GPT-2's vocab.json and merges.txt
	// (OPT's, which tokenizer.Load converts), and tokenizer_config.json.
	if tj := checkFile(filepath.Join(dir, "tokenizer.json")); tj != "" &&
		(checkFile(filepath.Join(dir, "vocab.json")) != "" || checkFile(filepath.Join(dir, "merges.txt")) != "") {
		what := "tokenizer.json (or vocab.json and merges.txt)"
		if checkFile(filepath.Join(dir, "tokenizer.model")) == "" {
			what = "tokenizer.json (only SentencePiece's tokenizer.model, from which transformers writes it: AutoTokenizer.from_pretrained(dir).save_pretrained(dir))"
		}
		if tj == fileIsEmpty {
			empty = append(empty, "tokenizer.json")
		} else {
			gone = append(gone, what)
		}
	}
	switch checkFile(filepath.Join(dir, "tokenizer_config.json")) {
	case "":
	case fileIsEmpty:
		empty = append(empty, "tokenizer_config.json")
	default:
		gone = append(gone, "tokenizer_config.json")
	}
	return joinWhat(convert, missingFiles(gone), emptyFiles(empty))
}

// joinWhat joins what is wrong with a model directory, skipping "".
func joinWhat(parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "; ")
}

// NotAModelDir says, for a command's flag (--model), why dir cannot be a
// model directory before anything reads it: it does not exist, it is a
// file, or it is a run directory (RunDirAsModel); "" otherwise. What the
// directory lacks is found when it is loaded.
func NotAModelDir(dir string) string {
	if what := notADir(dir); what != "" {
		return what
	}
	return RunDirAsModel(dir)
}

// notADir says why dir, given as a model directory, is no directory at
// all ("" when it is one).
func notADir(dir string) string {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case err != nil:
		return err.Error()
	case !st.IsDir():
		return "a file, not a model directory (config.json, *.safetensors, tokenizer.json, …)"
	}
	return ""
}

// RunDirAsModel says what a run directory, or a saved adapter (a LoRA or
// prompt-tuning run's best/, last/ or checkpoint/), given as a model
// directory is ("" for a directory with a config.json, or with neither
// adapter_config.json, best/ nor checkpoint/): the model of a full-parameter
// run is its best/ or last/, and a LoRA or prompt-tuning run's hold
// adapters, for the base model.
func RunDirAsModel(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "adapter_config.json")); err == nil {
		return adapterAsModel(dir)
	}
	if !isRunDir(dir) {
		return ""
	}
	return "a run directory, not a model: " + runWeights(dir, "a full-parameter run's models") + "; a LoRA or prompt-tuning run's hold adapters, for its base model"
}

// runWeights completes what (a run's models or adapters) for run directory
// dir: its best/ and last/, or what output.keep_weights left of them once
// the run finished.
func runWeights(dir, what string) string {
	best, last := filepath.Join(dir, rundir.BestDir), filepath.Join(dir, rundir.LastDir)
	s, err := rundir.ReadSummary(dir)
	switch {
	case err != nil || s.WeightsKept == "":
		return fmt.Sprintf("%s are %s and %s", what, best, last)
	case s.WeightsKept == rundir.KeepBest:
		return fmt.Sprintf("%s are its best/ and last/, and this one kept only %s (output.keep_weights: best)", what, best)
	}
	return fmt.Sprintf("%s are its best/ and last/, and this one kept neither (output.keep_weights: none)", what)
}

// adapterAsModel says what a saved adapter given as a model directory is,
// and where it goes instead, naming its base model where its
// adapter_config.json does (base_model_name_or_path).
func adapterAsModel(dir string) string {
	base := ""
	if b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json")); err == nil {
		var c struct {
			Base string `json:"base_model_name_or_path"`
		}
		if json.Unmarshal(b, &c) == nil && c.Base != "" {
			base = fmt.Sprintf(" (its adapter_config.json names %q)", c.Base)
		}
	}
	return "a saved adapter (adapter_config.json, no config.json), not a model: the model is its base model" + base +
		", with --adapter " + dir + " where the command takes one (meazo-train: adapter.init)"
}

// isRunDir reports whether dir looks like a run directory (a best/ or a
// checkpoint/ in it, or the summary.json of a run that kept neither:
// output.keep_weights): what a model or an adapter directory is mistaken for.
func isRunDir(dir string) bool {
	for _, sub := range []string{rundir.BestDir, rundir.CheckpointDir} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err == nil && st.IsDir() {
			return true
		}
	}
	s, err := rundir.ReadSummary(dir)
	return err == nil && s.WeightsKept != ""
}

// missingFiles says which files of a model directory are missing ("" for none).
func missingFiles(gone []string) string {
	if len(gone) > 0 {
		return "no " + strings.Join(gone, ", no ") + " there (an interrupted download?)"
	}
	return ""
}

// emptyFiles says which files of a model directory are there but empty
// ("" for none).
func emptyFiles(empty []string) string {
	switch len(empty) {
	case 0:
		return ""
	case 1:
		return empty[0] + " is there but empty (an interrupted download?)"
	}
	return strings.Join(empty, ", ") + " are there but empty (an interrupted download?)"
}

// modelDownload is the command that downloads the config's model into
// model.path: the model's hub repository is model.name where that is one
// (the shipped configs name it so), or the published model model.path is
// named after; "" when neither says. A built-in model's is its Download
// (only the files a run reads, and the conversion of weights that need it).
func modelDownload(cfg *Config) string {
	p, ok := model.LookupPublished(cfg.Model.Name)
	if !ok && cfg.Model.Name == "" {
		p, ok = model.LookupPublished(cfg.Model.Path)
	}
	cmd := ""
	switch {
	case ok:
		cmd = p.Download(cfg.Model.Path)
	case strings.Count(cfg.Model.Name, "/") == 1 && !strings.HasPrefix(cfg.Model.Name, ".") && !filepath.IsAbs(cfg.Model.Name):
		cmd = fmt.Sprintf("hf download %s --local-dir %s", cfg.Model.Name, cfg.Model.Path)
	default:
		return ""
	}
	s := "Download the model (pip install -U huggingface_hub gives the hf command):\n  " + strings.ReplaceAll(cmd, "\n", "\n  ")
	if ok && p.Gated {
		s += fmt.Sprintf("\n  (%s is gated: accept its licence at https://huggingface.co/%s and log in with `hf auth login` first)", p.Repo, p.Repo)
	}
	return s
}

// hubDatasets are the paper's datasets as the README downloads them: the
// directory each lands in, and its hub repository (and revision).
var hubDatasets = []struct{ dir, repo string }{
	{"data/sst2", "stanfordnlp/sst2"},
	{"data/squad", "rajpurkar/squad"},
	{"data/xsum", "EdinburghNLP/xsum --revision refs/convert/parquet"},
	{"data/pets", "timm/oxford-iiit-pet"},
}

// datasetDownload is the command that downloads a missing data file of the
// paper's datasets where the shipped configs look for it ("" for another).
func datasetDownload(path string) string {
	p := filepath.ToSlash(filepath.Clean(path))
	if !strings.HasSuffix(p, ".parquet") { // what the Hub's copies hold: not a .tsv or the official JSON
		return ""
	}
	for _, d := range hubDatasets {
		i := strings.Index("/"+p, "/"+d.dir+"/")
		if i < 0 {
			continue
		}
		dir := filepath.FromSlash(p[:i+len(d.dir)])
		return fmt.Sprintf("Download the dataset:\n  hf download --repo-type dataset %s --local-dir %s", d.repo, dir)
	}
	return ""
}

// dataExts lists the file kinds task reads, for messages: JSON Lines alone
// for the tasks on the user's own data.
func dataExts(task data.Task) string {
	if task.OwnData() {
		return ".jsonl"
	}
	return ".parquet, .tsv, .json or .jsonl"
}
