package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/prompttune"
	"github.com/meazo-go/meazo/tokenizer"
)

// writeOPTDemo puts an OPT model in the demo's place: random weights of a
// tiny OPT config, and GPT-2's tokenizer files as OPT ships them (vocab.json
// and merges.txt, tokenizer_config.json with </s> as BOS and EOS, no chat
// template).
func writeOPTDemo(t *testing.T, dir string) {
	t.Helper()
	modelDir := filepath.Join(dir, "model")
	if err := os.RemoveAll(modelDir); err != nil {
		t.Fatal(err)
	}
	vocab, merges := demoVocab()
	vocab["</s>"], vocab["<pad>"] = len(vocab), len(vocab)+1
	cfg := &model.Config{Architecture: "OPTForCausalLM", VocabSize: (len(vocab) + 63) / 64 * 64, HiddenSize: 32, IntermediateSize: 64,
		NumLayers: 2, NumHeads: 4, NumKVHeads: 4, HeadDim: 8, MaxPositions: 128, WordEmbedDim: 32, LayerNormEps: 1e-5,
		TieEmbeddings: true, BOSTokenID: vocab["</s>"], EOSTokenIDs: []int{vocab["</s>"]}}
	if err := model.WriteRandom(modelDir, cfg, 1, 0.15); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(vocab)
	tc, _ := json.Marshal(map[string]any{"bos_token": "</s>", "eos_token": "</s>", "unk_token": "</s>", "pad_token": "<pad>", "add_bos_token": true})
	for name, b := range map[string][]byte{"vocab.json": v, "merges.txt": []byte("#version: 0.2\n" + strings.Join(merges, "\n") + "\n"),
		"tokenizer_config.json": tc} {
		if err := os.WriteFile(filepath.Join(modelDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOPTFullRun: full-parameter training of an OPT model (adapter.kind
// full) on SST-2 in MeZO's template (task.format mezo): the run trains,
// scores the test split, and saves a model directory that loads back as
// OPT with its tokenizer files; without task.format mezo the missing chat
// template is refused, naming the way out; model.bf16_weights, which keeps
// only BF16 weights in bfloat16, is noted as having no effect.
func TestOPTFullRun(t *testing.T) {
	dir, cfg := demoConfig(t, 4)
	writeOPTDemo(t, dir)
	out := filepath.Join(dir, "opt-run")
	set := []string{"adapter.kind=full", "task.format=mezo", "optimizer.name=fzoo", "optimizer.q=2", "optimizer.lr=1e-3",
		"train.eval_every=2", "task.max_train=64", "task.max_validation=16", "task.max_test=16", "output.dir=" + out}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set}); err != nil {
		t.Fatal(err)
	}
	s := readSummary(t, out)
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), "accuracy") {
		t.Errorf("summary without an accuracy: %s", b)
	}
	for _, l := range readLines(t, filepath.Join(out, "metrics.jsonl")) {
		if strings.Contains(l, `"kind":"train"`) != strings.Contains(l, `"sigma":[`) {
			t.Errorf("FZOO's training lines, and they alone, carry σ_t: %s", l)
		}
	}
	m, err := model.Load(filepath.Join(out, "last"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.IsOPT() {
		t.Errorf("last/ is a %s", m.Architecture)
	}
	if _, err := tokenizer.Load(filepath.Join(out, "last")); err != nil {
		t.Errorf("last/'s tokenizer: %v", err)
	}
	// model.bf16_weights on this float32 checkpoint keeps nothing in
	// bfloat16: the run says so.
	var log strings.Builder
	bf := []string{"task.format=mezo", "train.steps=1", "eval.skip=true", "model.bf16_weights=true", "output.dir=" + filepath.Join(dir, "bf16")}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: bf, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "model.bf16_weights: "+filepath.Join(dir, "model")+" stores no weight as BF16 (its weights are float32), so it has no effect") {
		t.Errorf("model.bf16_weights on a float32 checkpoint: no note in the run's log:\n%s", log.String())
	}
	_, err = Run(Options{ConfigPath: cfg, Overrides: []string{"adapter.kind=full", "output.dir=" + filepath.Join(dir, "chat")}})
	if err == nil || !strings.Contains(err.Error(), "task.format mezo") {
		t.Errorf("an OPT run in format chat: %v", err)
	}
}

// TestBF16WeightsNote: model.bf16_weights given a checkpoint that stores no
// weight as BF16 (OPT's float16 one, a float32 one) keeps nothing in
// bfloat16, and the run says so, naming what the checkpoint stores; a BF16
// checkpoint, or the option not given, gets no note.
func TestBF16WeightsNote(t *testing.T) {
	opt := filepath.Join("..", "model", "testdata", "opt", "opt-tiny")
	for _, c := range []struct {
		dir   string
		asked bool
		want  string // "" for no note
	}{
		{filepath.Join("..", "lora", "testdata", "merge", "opt-tiny-f16", "model"), true, "(its weights are float16), so it has no effect"},
		{opt, true, "(its weights are float32), so it has no effect"},
		{filepath.Join(opt, "bf16"), true, ""},
		{filepath.Join("..", "lora", "testdata", "merge", "opt-tiny-f16", "model"), false, ""},
	} {
		m, err := model.LoadWith(c.dir, model.LoadOptions{BF16Weights: c.asked})
		if err != nil {
			t.Fatal(err)
		}
		note := BF16WeightsNote(m, c.dir, c.asked, "model.bf16_weights")
		m.Free()
		if (note == "") != (c.want == "") || !strings.Contains(note, c.want) || c.want != "" && !strings.HasPrefix(note, "model.bf16_weights: "+c.dir) {
			t.Errorf("%s, bf16_weights %v: note %q, want one saying %q", c.dir, c.asked, note, c.want)
		}
	}
}

// TestWidenedNote: a BF16 checkpoint loaded without model.bf16_weights is
// held in float32 at twice the memory, and the run says so; with the
// option, or a float32 checkpoint, it says nothing.
func TestWidenedNote(t *testing.T) {
	opt := filepath.Join("..", "model", "testdata", "opt", "opt-tiny")
	for _, c := range []struct {
		dir   string
		asked bool
		want  bool
	}{{filepath.Join(opt, "bf16"), false, true}, {filepath.Join(opt, "bf16"), true, false}, {opt, false, false}} {
		m, err := model.LoadWith(c.dir, model.LoadOptions{BF16Weights: c.asked})
		if err != nil {
			t.Fatal(err)
		}
		note := widenedNote(m, c.dir, c.asked)
		m.Free()
		if (note != "") != c.want || c.want && !strings.Contains(note, "held in float32, twice their memory") {
			t.Errorf("%s, bf16_weights %v: note %q, want one: %v", c.dir, c.asked, note, c.want)
		}
	}
}

// TestOPTLearnedPositions: an OPT model's learned positions bound the
// length rule. With task.max_length (2,048) past this model's 128
// positions, a test example longer than 128 tokens is left out and the log
// says why, where its forward failed the run's test evaluation; so in
// meazo-eval's Evaluate (--max-length).
func TestOPTLearnedPositions(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	writeOPTDemo(t, dir)
	test := filepath.Join(dir, "long.tsv")
	long := strings.Repeat("a truly long and winding review ", 30)
	if err := os.WriteFile(test, []byte("sentence\tlabel\n"+long+"\t1\na fine film\t1\nawful\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	set := []string{"adapter.kind=full", "task.format=mezo", "optimizer.name=zo-sgd", "task.max_train=16", "task.max_validation=4",
		"task.test=" + test, "output.dir=" + filepath.Join(dir, "run")}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
		t.Fatal(err)
	}
	note := "would let a sequence past the model's 128 learned positions (max_position_embeddings): examples longer than 128 tokens are left out"
	if !strings.Contains(log.String(), "task.max_length 2048 "+note) || !strings.Contains(log.String(), "longer than max_position_embeddings 128 tokens") {
		t.Errorf("the run's log does not say the positions bind the length rule:\n%s", log.String())
	}

	modelDir := filepath.Join(dir, "model")
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	var evalLog strings.Builder
	res, err := Evaluate(m, tok, EvalOptions{Task: "sst2", Data: test, Format: "mezo", MaxLength: 2048, Log: &evalLog})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res["accuracy"]; !ok || !strings.Contains(evalLog.String(), "--max-length 2048 "+note) {
		t.Errorf("Evaluate: %v\n%s", res, evalLog.String())
	}

	// A prompt-tuning adapter's virtual tokens take positions too, in the
	// run and when its best/ is evaluated again.
	log.Reset()
	prompt := filepath.Join(dir, "prompt")
	set = append(set[1:len(set)-1], "adapter.kind=prompt", "adapter.virtual_tokens=20", "train.steps=2", "output.dir="+prompt)
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
		t.Fatal(err)
	}
	less := "(max_position_embeddings, less the 20 virtual tokens): examples longer than 108 tokens are left out"
	if !strings.Contains(log.String(), less) {
		t.Errorf("the prompt-tuning run's log does not count its virtual tokens:\n%s", log.String())
	}
	evalLog.Reset()
	if _, err := Evaluate(m, tok, EvalOptions{Task: "sst2", Data: test, Format: "mezo", MaxLength: 2048, Adapter: filepath.Join(prompt, "best"), Log: &evalLog}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(evalLog.String(), less) {
		t.Errorf("Evaluate with the prompt-tuning adapter does not count its virtual tokens:\n%s", evalLog.String())
	}
}

// TestOPTVirtualTokensFillPositions: prompt tuning whose virtual tokens take
// every one of an OPT model's learned positions is refused, by the run and
// by Evaluate, naming the count, where the length rule read the length left
// (zero or less) as no rule and every forward failed.
func TestOPTVirtualTokensFillPositions(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	writeOPTDemo(t, dir)
	for _, n := range []int{128, 129} {
		set := []string{"task.format=mezo", "adapter.kind=prompt", fmt.Sprintf("adapter.virtual_tokens=%d", n),
			"output.dir=" + filepath.Join(dir, fmt.Sprintf("run%d", n))}
		_, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: io.Discard})
		want := fmt.Sprintf("adapter.virtual_tokens %d: prompt tuning's %d virtual tokens take all of the model's 128 learned positions", n, n)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d virtual tokens on a model of 128 positions: %v, want an error saying %q", n, err, want)
		}
	}

	modelDir := filepath.Join(dir, "model")
	m, err := model.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prompttune.Random(m, 128, 1)
	if err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(dir, "prompt128")
	if err := p.Save(adapter, m); err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "test.tsv")
	if err := os.WriteFile(test, []byte("sentence\tlabel\na fine film\t1\nawful\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(m, tok, EvalOptions{Task: "sst2", Data: test, Format: "mezo", MaxLength: 2048, Adapter: adapter, Log: io.Discard})
	want := "adapter " + adapter + ": prompt tuning's 128 virtual tokens take all of the model's 128 learned positions"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Evaluate with 128 virtual tokens on a model of 128 positions: %v, want an error saying %q", err, want)
	}
}
