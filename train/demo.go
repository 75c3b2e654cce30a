package train

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/model"
)

// The built-in demo: everything a real run needs, made on the spot so that
// it runs with no download: a tiny Qwen3-style model written in HF format, a
// word-level byte-level BPE tokenizer.json with a ChatML chat template, and
// an SST-2-style sentiment dataset in GLUE TSV.
//
// The model is random except for one planted feature (plantSentiment): its
// embeddings carry a sentiment direction, as a pretrained model's do, so that
// the labels can be learnt from the sentence at all. Nothing in the random
// attention reads that direction into the answer at the start (the base
// model's test accuracy is below chance); ZO training of the LoRA adapter has
// to learn it, which it does in a few hundred steps. README.md ("The demo")
// says what the demo shows and what it does not.

// DemoModelName is the demo model's model.name, which its runs' summaries
// carry: figures and tables know a demo run by it.
const DemoModelName = "meazo-demo-tiny"

// DemoTaskLabel names the demo's task where its runs are shown: it is
// scored as SST-2 (task.name sst2), but it is not SST-2.
const DemoTaskLabel = "synthetic sentiment"

// DemoSteps is the demo's default number of steps per optimizer.
const DemoSteps = 600

// demoPlantStrength is the length of the sentiment direction added to the
// sentiment words' embeddings (an embedding row's length is about 1.2).
const demoPlantStrength = 2.0

// DemoLR is each demo optimizer's learning rate, chosen by a sweep on this
// task (lr 0.005 to 0.1, 400 and 600 steps, run seeds 0 to 3; README.md).
var DemoLR = map[string]string{"meazo": "0.05", "zo-sgd": "0.05", "zo-adam": "0.005"}

// DemoOptimizers are the optimizers the demo trains with, in order.
var DemoOptimizers = []string{"meazo", "zo-sgd", "zo-adam"}

// demoSpecial are the tokenizer's special tokens, ids 256 on.
var demoSpecial = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// demoTemplate is ChatML without the system turn: the task's system prompt
// (forty words) would be most of what the tiny model reads, so the demo's
// conversation is the user's sentence and the assistant's answer only.
const demoTemplate = "{%- for message in messages %}{%- if message.role != 'system' %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

// WriteDemo writes the demo's model, tokenizer, data and config under dir
// and returns the config path.
func WriteDemo(dir string, steps int) (string, error) {
	modelDir := filepath.Join(dir, "model")
	vocab, _ := demoVocab()
	cfg := &model.Config{
		Architecture: "Qwen3ForCausalLM", VocabSize: (len(vocab) + 63) / 64 * 64, HiddenSize: 64, IntermediateSize: 128, NumLayers: 2,
		NumHeads: 4, NumKVHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6, TieEmbeddings: true, QKNorm: true,
		BOSTokenID: -1, EOSTokenIDs: []int{258},
	}
	if err := model.WriteRandom(modelDir, cfg, 1, 0.15); err != nil {
		return "", err
	}
	if err := plantSentiment(modelDir, vocab, demoPlantStrength); err != nil {
		return "", err
	}
	if err := WriteDemoTokenizer(modelDir); err != nil {
		return "", err
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(2024, 7))
	for _, f := range []struct {
		name string
		n    int
	}{{"train.tsv", 2000}, {"dev.tsv", 200}} {
		var b strings.Builder
		b.WriteString("sentence\tlabel\n")
		for range f.n {
			s, label := demoSentence(rng)
			fmt.Fprintf(&b, "%s \t%d\n", s, label)
		}
		if err := atomicfile.WriteFile(filepath.Join(dataDir, f.name), []byte(b.String())); err != nil {
			return "", err
		}
	}
	yaml := fmt.Sprintf(`# The built-in demo (meazo-train --demo): a tiny random model with a planted
# sentiment direction in its embeddings, LoRA trained by zeroth-order steps
# (README.md, "The demo"). meazo-train --demo sets optimizer.name and
# optimizer.lr per run (train.DemoLR: meazo 0.05, zo-sgd 0.05, zo-adam 0.005)
# and eval.validation_metrics: true. A run of this file as it stands is the
# demo's MEAZO run without the validation accuracy (add --set
# eval.validation_metrics=true); it writes into run/ beside it, which the
# demo leaves as it is.
model:
  path: %[1]s/model
  name: %[3]s
task:
  name: sst2
  train: %[1]s/data/train.tsv
  test: %[1]s/data/dev.tsv
  max_validation: 64
adapter:
  kind: lora
  r: 8
  alpha: 16
optimizer:
  name: meazo
  lr: %[4]s
  eps: 0.001
train:
  steps: %[2]d
  batch_size: 8
  seed: 0
  eval_every: 50
  checkpoint_every: 200
  log_every: 100
eval:
  batch_size: 16
  base: true
output:
  dir: %[1]s/run
`, dir, steps, DemoModelName, DemoLR["meazo"])
	path := filepath.Join(dir, "demo.yaml")
	return path, atomicfile.WriteFile(path, []byte(yaml))
}

var (
	demoPositive = []string{"great", "wonderful", "delightful", "moving", "brilliant", "charming", "funny", "superb"}
	demoNegative = []string{"awful", "boring", "dull", "terrible", "clumsy", "tedious", "bland", "painful"}
	demoNouns    = []string{"film", "movie", "story", "cast", "script", "ending", "performance", "soundtrack"}
	demoFrames   = []string{"the %s is %s", "a %s and %s %s", "what a %s %s", "this %s feels %s", "an utterly %s %s"}
)

// demoSentence makes one short labelled review.
func demoSentence(r *rand.Rand) (string, int) {
	label := r.IntN(2)
	words := demoNegative
	if label == 1 {
		words = demoPositive
	}
	adj, noun := words[r.IntN(len(words))], demoNouns[r.IntN(len(demoNouns))]
	switch frame := demoFrames[r.IntN(len(demoFrames))]; frame {
	case "the %s is %s", "this %s feels %s":
		return fmt.Sprintf(frame, noun, adj), label
	case "a %s and %s %s":
		return fmt.Sprintf(frame, adj, words[r.IntN(len(words))], noun), label
	default:
		return fmt.Sprintf(frame, adj, noun), label
	}
}

// WriteDemoTokenizer writes tokenizer.json (byte-level BPE with Qwen3's
// normalizer and pre-tokenizer, word merges: demoVocab) and tokenizer_config.json with a
// ChatML template. Byte-level, it encodes any text (words outside the demo's
// as several tokens), so meazo-inspect random-model gives it to a model of
// any size: meazo-train then runs on the result with no download.
func WriteDemoTokenizer(dir string) error {
	vocab, merges := demoVocab()
	var added []map[string]any
	for i, s := range demoSpecial {
		added = append(added, map[string]any{"id": 256 + i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	tok := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
				"behavior": "Isolated", "invert": false},
			byteLevel,
		}},
		"post_processor": byteLevel,
		"decoder":        byteLevel,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": merges},
	}
	b, err := json.Marshal(tok)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "tokenizer.json"), b); err != nil {
		return err
	}
	cfg := map[string]any{"add_bos_token": false, "bos_token": nil, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
		"clean_up_tokenization_spaces": false, "model_max_length": 4096, "tokenizer_class": "Qwen2Tokenizer",
		"chat_template": demoTemplate}
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b)
}

// DemoTokenizerVocab is the number of ids of WriteDemoTokenizer's
// tokenizer: a model needs at least that vocab_size to run with it.
func DemoTokenizerVocab() int {
	vocab, _ := demoVocab()
	return len(vocab)
}

// byteAlphabet is GPT-2's byte-to-character map: printable bytes stand for
// themselves, the others are shifted to code points from 256 on.
func byteAlphabet() [256]string {
	var out [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// demoVocab is the tokenizer's vocabulary and merges: the 256 byte tokens of
// the GPT-2 byte-level alphabet, the special tokens, then one token for every
// word of the demo's prompts and sentences (with and without a leading space),
// each built by merges from its first letter on. Words are then single tokens,
// so a sentence is a dozen tokens, the label (" great" or " terrible") is one
// token, and the tiny model has a short context to attend over.
func demoVocab() (map[string]int, []string) {
	alpha := byteAlphabet()
	vocab := map[string]int{}
	for b, s := range alpha {
		vocab[s] = b
	}
	for i, s := range demoSpecial {
		vocab[s] = 256 + i
	}
	var spaced []string // every word, as it follows a space
	for _, c := range append([]string{data.SST2LabelWords[0], data.SST2LabelWords[1]},
		slices.Concat(demoPositive, demoNegative, demoNouns, demoFrames)...) {
		spaced = append(spaced, strings.FieldsFunc(c, func(r rune) bool { return !unicode.IsLetter(r) })...)
	}
	slices.Sort(spaced)
	// The words that start a segment: the roles and the prompts' first words.
	bare := []string{"user", "assistant", "Sentence", "Sentiment"}
	var merges []string
	add := func(space string, words []string) {
		for _, w := range slices.Compact(words) {
			prefix := space
			for _, r := range w {
				c := alpha[byte(r)] // ASCII letters map to themselves
				if prefix != "" {
					if _, ok := vocab[prefix+c]; !ok {
						merges = append(merges, prefix+" "+c)
						vocab[prefix+c] = len(vocab)
					}
				}
				prefix += c
			}
		}
	}
	// The spaced words' merges rank first: within " word" the only pair a
	// spaced merge applies to is (prefix so far, next letter), so a spaced
	// word always ends as one token whatever the bare words' merges are
	// (and the six bare words share no pair that would split another).
	add(alpha[' '], spaced)
	add("", bare)
	return vocab, merges
}
