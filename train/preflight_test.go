package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPreflight: a run missing any file it needs fails before it writes
// anything or reads a weight (no output directory, no run.lock), at once,
// naming every missing file, and for the paper's models and datasets the
// command that downloads them.
func TestPreflight(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	m := filepath.Join(dir, "model")
	// A model directory missing one file each (a copy without it).
	without := func(name string) string {
		to := filepath.Join(dir, "without-"+name)
		os.MkdirAll(to, 0o755)
		ents, _ := os.ReadDir(m)
		for _, e := range ents {
			if e.Name() != name {
				os.Link(filepath.Join(m, e.Name()), filepath.Join(to, e.Name()))
			}
		}
		return to
	}
	spOnly := filepath.Join(dir, "sentencepiece-only") // a SentencePiece checkpoint without its conversion
	os.CopyFS(spOnly, os.DirFS(without("tokenizer.json")))
	os.WriteFile(filepath.Join(spOnly, "tokenizer.model"), []byte("x"), 0o644)
	binOnly := filepath.Join(dir, "bin-only") // OPT as published: pytorch_model.bin, not yet converted
	os.CopyFS(binOnly, os.DirFS(without("model.safetensors")))
	os.WriteFile(filepath.Join(binOnly, "pytorch_model.bin"), []byte("PK"), 0o644)
	binSharded := filepath.Join(dir, "bin-sharded") // a larger OPT: shards and their index
	os.CopyFS(binSharded, os.DirFS(without("model.safetensors")))
	os.WriteFile(filepath.Join(binSharded, "pytorch_model.bin.index.json"), []byte(`{"weight_map":{}}`), 0o644)
	binNoTok := filepath.Join(dir, "bin-no-tokenizer")
	os.CopyFS(binNoTok, os.DirFS(binOnly))
	os.Remove(filepath.Join(binNoTok, "tokenizer.json"))
	// Files there but empty (a download cut off before its first byte).
	withEmpty := func(names ...string) string {
		to := filepath.Join(dir, "empty-"+strings.Join(names, "-"))
		os.CopyFS(to, os.DirFS(m))
		for _, n := range names {
			os.WriteFile(filepath.Join(to, n), nil, 0o644)
		}
		return to
	}
	empty := filepath.Join(dir, "empty.tsv")
	os.WriteFile(empty, nil, 0o644)
	aRun := filepath.Join(dir, "a-run") // a run directory taken for a model
	os.MkdirAll(filepath.Join(aRun, "best"), 0o755)
	anAdapter := filepath.Join(aRun, "best") // a LoRA run's best/ taken for a model
	os.WriteFile(filepath.Join(anAdapter, "adapter_config.json"), []byte(`{"peft_type": "LORA", "base_model_name_or_path": "org/base"}`), 0o644)
	// Runs that kept only best/, or no weights (output.keep_weights).
	prunedBest, prunedNone := filepath.Join(dir, "pruned-best"), filepath.Join(dir, "pruned-none")
	os.MkdirAll(filepath.Join(prunedBest, "best"), 0o755)
	os.MkdirAll(prunedNone, 0o755)
	for run, keep := range map[string]string{prunedBest: "best", prunedNone: "none"} {
		os.WriteFile(filepath.Join(run, "summary.json"), []byte(`{"optimizer": "meazo", "lr": 1e-5, "status": "done", "weights_kept": "`+keep+`"}`), 0o644)
	}
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"tokenizer.json", []string{"model.path=" + without("tokenizer.json")}, []string{"no tokenizer.json (or vocab.json and merges.txt) there"}},
		{"full-parameter, tokenizer.json", []string{"model.path=" + without("tokenizer.json"), "adapter.kind=full"}, []string{"no tokenizer.json (or vocab.json and merges.txt) there"}},
		{"tokenizer.model only", []string{"model.path=" + spOnly}, []string{"no tokenizer.json (only SentencePiece's tokenizer.model, from which transformers writes it: AutoTokenizer.from_pretrained(dir).save_pretrained(dir)) there"}},
		{"tokenizer_config.json", []string{"model.path=" + without("tokenizer_config.json")}, []string{"no tokenizer_config.json there"}},
		{"config.json", []string{"model.path=" + without("config.json")}, []string{"no config.json there"}},
		{"empty weights", []string{"model.path=" + withEmpty("model.safetensors")}, []string{": model.safetensors is there but empty (an interrupted download?)"}},
		{"empty weights and tokenizer_config.json", []string{"model.path=" + withEmpty("model.safetensors", "tokenizer_config.json")},
			[]string{": model.safetensors, tokenizer_config.json are there but empty (an interrupted download?)"}},
		{"empty tokenizer.json", []string{"model.path=" + withEmpty("tokenizer.json")}, []string{": tokenizer.json is there but empty (an interrupted download?)"}},
		{"empty config.json", []string{"model.path=" + withEmpty("config.json")}, []string{": config.json is there but empty (an interrupted download?)"}},
		{"weights", []string{"model.path=" + without("model.safetensors")}, []string{"no model.safetensors (or model.safetensors.index.json and its shards) there"}},
		// The weights are there, to convert: no "interrupted download?".
		{"pytorch_model.bin", []string{"model.path=" + binOnly}, []string{"model.path " + binOnly + ": no model.safetensors: the weights are PyTorch's pytorch_model.bin " +
			"(as OPT's are published), which a run does not read; convert it first: python3 scripts/bin_to_safetensors.py " + binOnly}},
		{"pytorch_model.bin.index.json", []string{"model.path=" + binSharded}, []string{"model.path " + binSharded + ": no model.safetensors: the weights are " +
			"PyTorch's pytorch_model.bin (as OPT's are published), which a run does not read; convert it first: python3 scripts/bin_to_safetensors.py " + binSharded}},
		{"pytorch_model.bin, tokenizer.json", []string{"model.path=" + binNoTok}, []string{"convert it first: python3 scripts/bin_to_safetensors.py " + binNoTok +
			"; no tokenizer.json (or vocab.json and merges.txt) there (an interrupted download?)"}},
		{"data", []string{"task.train=" + filepath.Join(dir, "data", "nope.tsv"), "task.test=" + filepath.Join(dir, "data", "gone.tsv")},
			[]string{"task.train " + filepath.Join(dir, "data", "nope.tsv") + ": no such file", "task.test " + filepath.Join(dir, "data", "gone.tsv") + ": no such file"}},
		{"adapter.init", []string{"adapter.init=" + dir}, []string{"adapter.init " + dir + ": no adapter_config.json there; want a saved adapter directory"}},
		{"a run directory as the model", []string{"model.path=" + aRun}, []string{"model.path " + aRun +
			": a run directory, not a model: a full-parameter run's models are " + filepath.Join(aRun, "best")}},
		{"a run that kept best/ as the model", []string{"model.path=" + prunedBest}, []string{"model.path " + prunedBest +
			": a run directory, not a model: a full-parameter run's models are its best/ and last/, and this one kept only " +
			filepath.Join(prunedBest, "best") + " (output.keep_weights: best)"}},
		{"a run that kept no weights as the model", []string{"model.path=" + prunedNone}, []string{"model.path " + prunedNone +
			": a run directory, not a model: a full-parameter run's models are its best/ and last/, and this one kept neither (output.keep_weights: none)"}},
		{"a saved adapter as the model", []string{"model.path=" + anAdapter}, []string{"model.path " + anAdapter +
			": a saved adapter (adapter_config.json, no config.json), not a model: the model is its base model (its adapter_config.json names \"org/base\"), " +
			"with --adapter " + anAdapter + " where the command takes one (meazo-train: adapter.init)"}},
		{"adapter.init, a model", []string{"adapter.init=" + m}, []string{"adapter.init " + m + ": a model directory", "load it as the model"}},
		{"a directory as the data", []string{"task.train=" + filepath.Join(dir, "data")}, []string{"task.train " + filepath.Join(dir, "data") +
			": a directory, not a file (name the data file in it: .parquet, .tsv, .json or .jsonl)"}},
		{"a directory as own data", []string{"task.name=classification", "task.labels=[terrible, great]", "task.train=" + filepath.Join(dir, "data")},
			[]string{"task.train " + filepath.Join(dir, "data") + ": a directory, not a file (name the data file in it: .jsonl)"}},
		{"an empty data file", []string{"task.train=" + empty}, []string{"task.train " + empty + ": the file is empty"}},
		{"the paper's model and data", []string{"model.path=" + filepath.Join(dir, "models", "Llama-3.2-1B"), "model.name=meta-llama/Llama-3.2-1B",
			"task.train=" + filepath.Join(dir, "data", "squad", "plain_text", "train-00000-of-00001.parquet")}, []string{
			"hf download meta-llama/Llama-3.2-1B --local-dir " + filepath.Join(dir, "models", "Llama-3.2-1B"),
			"accept its licence at https://huggingface.co/meta-llama/Llama-3.2-1B", "hf auth login",
			"hf download --repo-type dataset rajpurkar/squad --local-dir " + filepath.Join(dir, "data", "squad")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "run-"+strings.ReplaceAll(tc.name, " ", "_"))
			start := time.Now()
			_, err := Run(Options{ConfigPath: cfg, Overrides: append(tc.set, "output.dir="+out, "model.backend=cpu")})
			if took := time.Since(start); took > time.Second {
				t.Errorf("failed after %v, want under a second", took)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if tc.name == "pytorch_model.bin" && strings.Contains(err.Error(), "interrupted download") {
				t.Errorf("error %q\ntakes a checkpoint to convert for an interrupted download", err)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("a start that failed its checks made %s", out)
			}
		})
	}
}

// TestNoExamples: a data file that parses but holds no example (a header
// and no rows, or every row malformed) is named by its key, not blamed on
// the length filter.
func TestNoExamples(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	header := filepath.Join(dir, "header.tsv")
	os.WriteFile(header, []byte("sentence\tlabel\n"), 0o644)
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("sentence\tlabel\ngood movie\tseven\n"), 0o644)
	for _, tc := range []struct{ key, file, want string }{
		{"task.train", header, "task.train " + header + ": no examples in the file"},
		{"task.test", header, "task.test " + header + ": no examples in the file"},
		{"task.train", bad, "task.train " + bad + ": no usable example: every row is malformed (1;"},
	} {
		_, err := Run(Options{ConfigPath: cfg, Overrides: []string{tc.key + "=" + tc.file, "output.dir=" + filepath.Join(t.TempDir(), "run"), "model.backend=cpu"}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.key, tc.file, err, tc.want)
		}
	}
}

// TestDownloadHints: the hub repository comes from model.name, or the
// published model model.path is named after; a dataset's from where the
// README puts it; nothing is guessed for other names.
func TestDownloadHints(t *testing.T) {
	for _, tc := range []struct{ name, path, want string }{
		{"Qwen/Qwen3-0.6B", "models/Qwen3-0.6B", "hf download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B"},
		{"", "/big/models/Qwen3-8B", "hf download Qwen/Qwen3-8B --local-dir /big/models/Qwen3-8B"},
		{"someone/my-model", "m", "hf download someone/my-model --local-dir m"},
		{"", "models/my-model", ""},
		{"my model", "x", ""},
		// Only the files a run reads, and the conversion of OPT's weights.
		{"facebook/opt-1.3b", "models/opt-1.3b", `hf download facebook/opt-1.3b --include "*.json" "*.txt" pytorch_model.bin --local-dir models/opt-1.3b
  python3 scripts/bin_to_safetensors.py models/opt-1.3b`},
		// The FP8 repository, which does not load, leads to the BF16 one.
		{"mistralai/Ministral-3-14B-Instruct-2512", "m", "hf download mistralai/Ministral-3-14B-Instruct-2512-BF16 --local-dir m"},
	} {
		got := modelDownload(&Config{Model: ModelConfig{Name: tc.name, Path: tc.path}})
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("model %q at %q: %q, want %q", tc.name, tc.path, got, tc.want)
		}
		if strings.Contains(got, "gated") {
			t.Errorf("%q is not gated: %q", tc.name, got)
		}
	}
	for path, want := range map[string]string{
		"data/xsum/default/test/0000.parquet":        "hf download --repo-type dataset EdinburghNLP/xsum --revision refs/convert/parquet --local-dir data/xsum",
		"/w/data/sst2/data/train-00000-of-1.parquet": "--local-dir /w/data/sst2",
		"data/pets/data/test-00000-of-00001.parquet": "hf download --repo-type dataset timm/oxford-iiit-pet --local-dir data/pets",
		"mydata/train.tsv":                           "",
		"data/sst2.tsv":                              "",
		"data/sst2/train.tsv":                        "", // the Hub's copy holds Parquet files only
		"data/squad/train-v1.1.json":                 "",
	} {
		if got := datasetDownload(path); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
