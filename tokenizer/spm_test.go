package tokenizer

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meazo-go/meazo/internal/fixture"
)

// spmDir holds a real SentencePiece-style tokenizer (Mistral-7B-Instruct-v0.3's
// tokenizer.json, tokenizer.model and tokenizer_config.json, gzipped), the
// ids Google's SentencePiece gives a corpus with that tokenizer.model
// (sp.jsonl, scripts/make_spm_fixture.py), and what HF's tokenizers makes of
// the same texts and of id sequences aimed at the decoder (hf.jsonl,
// hf_decode.jsonl, scripts/spm_reference.js). Its README says where the
// files come from.
const spmDir = "testdata/spm"

// spmMetaspace is the pre-tokenizer block of Mistral's tokenizer.json; the
// variants put another in its place, as scripts/spm_reference.js does.
const spmMetaspace = `  "normalizer": null,
  "pre_tokenizer": {
    "type": "Metaspace",
    "replacement": "▁",
    "prepend_scheme": "first",
    "split": false
  },`

var spmVariants = map[string]string{
	// the older conversions' layout (Llama-2's, TinyLlama's tokenizer.json)
	"legacy": `  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,`,
	"always_split": `  "normalizer": null,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},`,
}

var (
	spmMu     sync.Mutex
	spmLoaded = map[string]*Tokenizer{}
)

// spmTokenizer loads Mistral-7B-Instruct-v0.3's tokenizer, or a variant of
// it ("" for the file as it is), once per test binary.
func spmTokenizer(t testing.TB, variant string) *Tokenizer {
	t.Helper()
	spmMu.Lock()
	defer spmMu.Unlock()
	if tk, ok := spmLoaded[variant]; ok {
		return tk
	}
	dir := spmFiles(t, variant, "")
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	spmLoaded[variant] = tk
	return tk
}

// spmFiles writes Mistral's tokenizer files, unzipped, to a new directory:
// tokenizer.json with the variant's pre-tokenizer, and chatTemplate as
// chat_template.jinja when it is not "".
func spmFiles(t testing.TB, variant, chatTemplate string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b := gunzipFile(t, filepath.Join(spmDir, "mistral-v0.3", name+".gz"))
		if name == "tokenizer.json" && variant != "" {
			if strings.Count(string(b), spmMetaspace) != 1 {
				t.Fatal("tokenizer.json has no Metaspace block to replace")
			}
			b = []byte(strings.Replace(string(b), spmMetaspace, spmVariants[variant], 1))
		}
		writeFile(t, filepath.Join(dir, name), b)
	}
	if chatTemplate != "" {
		writeFile(t, filepath.Join(dir, "chat_template.jinja"), []byte(chatTemplate))
	}
	return dir
}

func gunzipFile(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readJSONLGz is fixture.ReadJSONL of a gzipped file.
func readJSONLGz[T any](t testing.TB, path string) []T {
	t.Helper()
	plain := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	writeFile(t, plain, gunzipFile(t, path))
	return fixture.ReadJSONL[T](t, plain)
}

type spmEncoding struct {
	IDs            []int `json:"ids"`
	IDsWithSpecial []int `json:"ids_with_special"`
}

type spmRecord struct {
	Text string `json:"text"`
	spmEncoding
	Decoded            string      `json:"decoded"`
	DecodedSkipSpecial string      `json:"decoded_skip_special"`
	Legacy             spmEncoding `json:"legacy"`
	AlwaysSplit        spmEncoding `json:"always_split"`
}

type spRecord struct {
	Cat       string `json:"cat"`
	Text      string `json:"text"`
	IDs       []int  `json:"sp_ids"`
	SPDiffers string `json:"sp_differs"` // why HF's ids are not sentencepiece's, or ""
}

// spmCorpus reads the corpus with both references, line by line.
func spmCorpus(t *testing.T) ([]spRecord, []spmRecord) {
	sp := readJSONLGz[spRecord](t, filepath.Join(spmDir, "sp.jsonl.gz"))
	hf := readJSONLGz[spmRecord](t, filepath.Join(spmDir, "hf.jsonl.gz"))
	if len(sp) != len(hf) || len(sp) < 600 {
		t.Fatalf("%d sentencepiece and %d HF records, want the same 600 or more", len(sp), len(hf))
	}
	for i := range sp {
		if sp[i].Text != hf[i].Text {
			t.Fatalf("record %d: the two references are of different texts", i+1)
		}
	}
	return sp, hf
}

// TestSentencePieceMatchesHF encodes the corpus (the shared public corpus,
// SST-2, SQuAD and XSum texts and the trainer's prompts of them, hand-made
// strings about spaces, byte fallback and added tokens, random mixes) with
// Mistral-7B-Instruct-v0.3's tokenizer.json and its two variants, with and
// without <s>, and decodes the ids, as HF's tokenizers does.
func TestSentencePieceMatchesHF(t *testing.T) {
	_, recs := spmCorpus(t)
	for _, v := range []struct {
		name string
		want func(spmRecord) spmEncoding
	}{
		{"", func(r spmRecord) spmEncoding { return r.spmEncoding }},
		{"legacy", func(r spmRecord) spmEncoding { return r.Legacy }},
		{"always_split", func(r spmRecord) spmEncoding { return r.AlwaysSplit }},
	} {
		t.Run("variant="+v.name, func(t *testing.T) {
			tk := spmTokenizer(t, v.name)
			bad := 0
			for i, r := range recs {
				what := fmt.Sprintf("record %d %q", i+1, trunc(r.Text))
				want := v.want(r)
				checkIDs(t, what+" ids", tk.Encode(r.Text, false), want.IDs, &bad)
				checkIDs(t, what+" ids_with_special", tk.Encode(r.Text, true), want.IDsWithSpecial, &bad)
				if v.name != "" {
					continue // the variants' decoder is the file's
				}
				if got := tk.Decode(r.IDs, false); got != r.Decoded {
					bad++
					t.Errorf("%s: decoded %q, want %q", what, trunc(got), trunc(r.Decoded))
				}
				if got := tk.Decode(r.IDs, true); got != r.DecodedSkipSpecial {
					bad++
					t.Errorf("%s: decoded skipping special tokens %q, want %q", what, trunc(got), trunc(r.DecodedSkipSpecial))
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d texts differ from HF's tokenizers", bad, len(recs))
			}
		})
	}
}

// TestSentencePieceMatchesSentencePiece compares with what Google's
// SentencePiece library gives with the checkpoint's tokenizer.model, of
// which tokenizer.json is a conversion. The two differ where HF's pipeline
// does something SentencePiece does not (sp_differs says which): HF splits
// added tokens such as [INST] or </s> out of the text, where SentencePiece
// reads them as text; and the Metaspace pre-tokenizer (prepend_scheme
// "first") prepends no "▁" to a text that starts with a space, where
// SentencePiece's dummy prefix always adds one. The legacy layout's Prepend
// normalizer adds one always, so it agrees with SentencePiece there too.
func TestSentencePieceMatchesSentencePiece(t *testing.T) {
	recs, _ := spmCorpus(t)
	for _, variant := range []string{"", "legacy"} {
		t.Run("variant="+variant, func(t *testing.T) {
			tk := spmTokenizer(t, variant)
			bad, compared := 0, 0
			for i, r := range recs {
				if r.SPDiffers == "added token in text" || r.SPDiffers != "" && variant == "" {
					continue
				}
				compared++
				checkIDs(t, fmt.Sprintf("record %d (%s) %q", i+1, r.Cat, trunc(r.Text)), tk.Encode(r.Text, false), r.IDs, &bad)
			}
			t.Logf("%d of %d texts compared with SentencePiece, %d differ", compared, len(recs), bad)
			if compared < 500 {
				t.Errorf("only %d texts compared", compared)
			}
		})
	}
}

type spmDecodeRecord struct {
	IDs                []int  `json:"ids"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
	MetaspaceDecoder   string `json:"metaspace_decoder"`
}

// TestSentencePieceDecodeMatchesHF decodes id sequences aimed at the
// decoder chain (byte runs that are UTF-8 and that are not, runs cut by
// other tokens, special tokens, leading "▁"s, unknown ids) and 300 random
// ones, as HF's tokenizers does; and again with a Metaspace decoder in the
// chain's place.
func TestSentencePieceDecodeMatchesHF(t *testing.T) {
	tk := spmTokenizer(t, "")
	dir := spmFiles(t, "", "")
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	start, end := strings.Index(string(raw), "\n  \"decoder\": {"), strings.Index(string(raw), "\n  \"model\": {")
	if start < 0 || end < start {
		t.Fatal("tokenizer.json: no decoder block")
	}
	ms := string(raw[:start]) + "\n  \"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"▁\", \"prepend_scheme\": \"first\", \"split\": false}," + string(raw[end:])
	writeFile(t, filepath.Join(dir, "tokenizer.json"), []byte(ms))
	msTok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs := fixture.ReadJSONL[spmDecodeRecord](t, filepath.Join(spmDir, "hf_decode.jsonl"))
	bad := 0
	for _, r := range recs {
		for _, c := range []struct {
			what, got, want string
		}{
			{"decoded", tk.Decode(r.IDs, false), r.Decoded},
			{"decoded skipping special tokens", tk.Decode(r.IDs, true), r.DecodedSkipSpecial},
			{"decoded by Metaspace", msTok.Decode(r.IDs, false), r.MetaspaceDecoder},
		} {
			if c.got != c.want {
				bad++
				if bad <= 10 {
					t.Errorf("%v %s: %q, want %q", r.IDs, c.what, c.got, c.want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d decodings differ from HF's tokenizers", bad, 3*len(recs))
	}
}

// TestSentencePieceTokenizer checks what Load reads from the real files:
// the special tokens of tokenizer_config.json and the post-processor's <s>.
func TestSentencePieceTokenizer(t *testing.T) {
	tk := spmTokenizer(t, "")
	bos, ok := tk.BOS()
	if !ok || bos != 1 || tk.EOS() != 2 || tk.PadID() != 2 || tk.VocabSize() != 32768 {
		t.Errorf("BOS %d (%v), EOS %d, pad %d, vocabulary %d; want 1, 2, 2 (none: EOS), 32768", bos, ok, tk.EOS(), tk.PadID(), tk.VocabSize())
	}
	if !slices.Equal(tk.StopIDs(), []int{2}) || !tk.IsSpecial(3) || tk.Token(3) != "[INST]" {
		t.Errorf("stop ids %v, [INST] %q special %v", tk.StopIDs(), tk.Token(3), tk.IsSpecial(3))
	}
	// "▁▁▁▁" stands for four spaces: the longest entry is a word of 16 letters.
	if n := tk.MaxTokenBytes(); n < 16 || n > 32 {
		t.Errorf("MaxTokenBytes %d", n)
	}
}

// TestSentencePieceLongWord encodes 1 MB with no break for the BPE (a
// Metaspace pre-tokenizer with split false makes a whole segment one word):
// the merges must not take time quadratic in its length (bpelong.go), and
// the text must come back.
func TestSentencePieceLongWord(t *testing.T) {
	tk := spmTokenizer(t, "")
	for _, text := range []string{
		strings.Repeat("abcdefghij", 100_000),
		strings.Repeat("the quick brown fox 🤗 jumps over 日本 ", 25_000)[:1_000_000],
	} {
		begin := time.Now()
		ids := tk.Encode(text, false)
		took := time.Since(begin)
		if took > 30*time.Second {
			t.Errorf("encoding 1 MB took %v", took)
		}
		if got := tk.Decode(ids, false); got != text {
			t.Errorf("1 MB does not round-trip (%d ids)", len(ids))
		}
		t.Logf("%d bytes → %d ids in %v", len(text), len(ids), took)
	}
}

type spmChatRecord struct {
	Template            string    `json:"template"`
	Name                string    `json:"name"`
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	Rendered            *string   `json:"rendered"`
	Error               string    `json:"error"`
}

// TestSentencePieceChatTemplates renders Mistral-7B-Instruct-v0.3's chat
// template (its tokenizer_config.json's) and TinyLlama-1.1B-Chat-v1.0's as
// transformers 4.51's Jinja environment does (scripts/make_spm_fixture.py):
// the trainer's SST-2 and SQuAD conversations with and without the answer,
// no system turn, several turns, template-like text, and the templates' own
// errors.
func TestSentencePieceChatTemplates(t *testing.T) {
	tinyllama, err := os.ReadFile(filepath.Join(spmDir, "tinyllama_chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]*Tokenizer{"mistral-v0.3": spmTokenizer(t, "")}
	if toks["tinyllama"], err = Load(spmFiles(t, "legacy", string(tinyllama))); err != nil {
		t.Fatal(err)
	}
	for _, r := range fixture.ReadJSONL[spmChatRecord](t, filepath.Join(spmDir, "chat.jsonl")) {
		t.Run(r.Template+"/"+r.Name, func(t *testing.T) {
			got, err := toks[r.Template].RenderChat(r.Messages, ChatOptions{AddGenerationPrompt: r.AddGenerationPrompt})
			switch {
			case r.Rendered == nil && err == nil:
				t.Fatalf("rendered %q, want the template's error %q", got, r.Error)
			case r.Rendered == nil && !strings.Contains(err.Error(), r.Error):
				t.Fatalf("error %v, want one saying %q", err, r.Error)
			case r.Rendered != nil && err != nil:
				t.Fatal(err)
			case r.Rendered != nil && got != *r.Rendered:
				t.Fatalf("rendered\n%q\nwant\n%q", got, *r.Rendered)
			}
		})
	}
}

// TestSentencePieceOtherCheckpoints runs the corpus and decode checks on
// other checkpoints' tokenizers, whose files are not shipped here: each
// directory of MEAZO_SPM_DIRS (a path list) holds a checkpoint's
// tokenizer.json, tokenizer_config.json and tokenizer.model, and the
// references the two scripts write there:
//
//	PYTHONPATH=../shared/pylib MEAZO_SHARED=../shared /usr/bin/python3 scripts/make_spm_fixture.py DIR DIR
//	NODE_PATH=… node scripts/spm_reference.js DIR DIR/tokenizer.json
func TestSentencePieceOtherCheckpoints(t *testing.T) {
	dirs := filepath.SplitList(os.Getenv("MEAZO_SPM_DIRS"))
	if len(dirs) == 0 {
		t.Skip("MEAZO_SPM_DIRS is not set: no other checkpoint's tokenizer to check (testdata/spm/README.md says which were checked)")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tk, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			sp := readJSONLGz[spRecord](t, filepath.Join(dir, "sp.jsonl.gz"))
			hf := readJSONLGz[spmRecord](t, filepath.Join(dir, "hf.jsonl.gz"))
			bad, spBad, compared := 0, 0, 0
			for i, r := range hf {
				what := fmt.Sprintf("record %d %q", i+1, trunc(r.Text))
				ids := tk.Encode(r.Text, false)
				checkIDs(t, what+" ids", ids, r.IDs, &bad)
				checkIDs(t, what+" ids_with_special", tk.Encode(r.Text, true), r.IDsWithSpecial, &bad)
				if tk.Decode(r.IDs, false) != r.Decoded || tk.Decode(r.IDs, true) != r.DecodedSkipSpecial {
					bad++
					t.Errorf("%s: decoded %q, want %q", what, trunc(tk.Decode(r.IDs, false)), trunc(r.Decoded))
				}
				if sp[i].SPDiffers == "" {
					compared++
					checkIDs(t, what+" (SentencePiece)", ids, sp[i].IDs, &spBad)
				}
			}
			for _, r := range fixture.ReadJSONL[spmDecodeRecord](t, filepath.Join(dir, "hf_decode.jsonl")) {
				if tk.Decode(r.IDs, false) != r.Decoded || tk.Decode(r.IDs, true) != r.DecodedSkipSpecial {
					bad++
					t.Errorf("%v: decoded %q, want %q", r.IDs, tk.Decode(r.IDs, false), r.Decoded)
				}
			}
			t.Logf("%d texts: %d differ from HF's tokenizers; %d compared with SentencePiece, %d differ", len(hf), bad, compared, spBad)
		})
	}
}

type spmTinyRecord struct {
	Text   string `json:"text"`
	Fuse   spmTiny
	NoFuse spmTiny `json:"no_fuse"`
	NoUnk  spmTiny `json:"no_unk"`
}

type spmTiny struct {
	IDs     []int  `json:"ids"`
	Decoded string `json:"decoded"`
}

// TestSentencePieceUnknown checks a tokenizer without byte fallback
// (testdata/spm/tiny.json): characters missing from the vocabulary become
// <unk>, one for a run of them with fuse_unk, or are dropped when there is
// no unk_token, as HF's tokenizers does (hf_tiny.jsonl,
// scripts/spm_reference.js).
func TestSentencePieceUnknown(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(spmDir, "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	load := func(from, to string) *Tokenizer {
		t.Helper()
		if strings.Count(string(raw), from) != 1 {
			t.Fatalf("tiny.json: no %s", from)
		}
		tk, err := parseTokenizerJSON([]byte(strings.Replace(string(raw), from, to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	fuse, noFuse := load(`"fuse_unk": true`, `"fuse_unk": true`), load(`"fuse_unk": true`, `"fuse_unk": false`)
	noUnk := load(`"unk_token": "<unk>"`, `"unk_token": null`)
	if fuse.MaxTokenBytes() != unboundedTokenBytes || noFuse.MaxTokenBytes() > 8 {
		t.Errorf("MaxTokenBytes %d fusing <unk>, %d not", fuse.MaxTokenBytes(), noFuse.MaxTokenBytes())
	}
	recs := fixture.ReadJSONL[spmTinyRecord](t, filepath.Join(spmDir, "hf_tiny.jsonl"))
	for _, r := range recs {
		for _, c := range []struct {
			name string
			tk   *Tokenizer
			want spmTiny
		}{{"fuse_unk", fuse, r.Fuse}, {"no fuse_unk", noFuse, r.NoFuse}, {"no unk_token", noUnk, r.NoUnk}} {
			ids := c.tk.Encode(r.Text, false)
			if got := c.tk.Decode(ids, false); !slices.Equal(ids, c.want.IDs) || got != c.want.Decoded {
				t.Errorf("%s: %q: %v %q, want %v %q", c.name, r.Text, ids, got, c.want.IDs, c.want.Decoded)
			}
		}
	}
}

// TestSentencePieceMalformed checks that what this package does not
// implement, or what cannot work, in a SentencePiece-style tokenizer.json is
// an error naming the file and the key.
func TestSentencePieceMalformed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(spmDir, "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	metaspace := `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}`
	// each case: its name, the error it must give, and edits of tiny.json (find, replace, …)
	for _, c := range []struct {
		name, want string
		edits      []string
	}{
		{"byte fallback without byte tokens", `model.byte_fallback: true, but model.vocab lacks "<0x00>"`, []string{`"byte_fallback": false`, `"byte_fallback": true`}},
		{"byte fallback in a byte-level BPE", "model.byte_fallback: true is supported only in a SentencePiece-style tokenizer", []string{metaspace, `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}`, `"byte_fallback": false`, `"byte_fallback": true`}},
		{"unknown normalizer", `normalizer: type "NFKC" is not supported`, []string{`"normalizer": null`, `"normalizer": {"type": "NFKC"}`}},
		{"regex Replace", "normalizer: normalizers[0]: pattern: only String patterns", []string{`"normalizer": null`, `"normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"Regex": " +"}, "content": "▁"}]}`}},
		{"empty Replace", "normalizer: pattern.String: empty", []string{`"normalizer": null`, `"normalizer": {"type": "Replace", "pattern": {"String": ""}, "content": "▁"}`}},
		{"Prepend without prepend", "normalizer: prepend: missing", []string{`"normalizer": null`, `"normalizer": {"type": "Prepend"}`}},
		{"long Replace", "decoder: decoders[0]: content: longer than 64 bytes", []string{`"content": " "}, {"type": "Fuse"}`, `"content": "` + strings.Repeat("x", 65) + `"}, {"type": "Fuse"}`}},
		{"unknown pre-tokenizer", `pre_tokenizer: type "Whitespace" is not supported`, []string{metaspace, `{"type": "Whitespace"}`}},
		{"two-character replacement", "pre_tokenizer: replacement: want one character", []string{`"replacement": "▁", "prepend_scheme"`, `"replacement": "▁▁", "prepend_scheme"`}},
		{"unknown prepend scheme", `pre_tokenizer: prepend_scheme: "sometimes" is not one of`, []string{`"prepend_scheme": "first"`, `"prepend_scheme": "sometimes"`}},
		{"add_prefix_space against prepend_scheme", `pre_tokenizer: add_prefix_space: false needs prepend_scheme "never"`, []string{`"prepend_scheme": "first"`, `"prepend_scheme": "first", "add_prefix_space": false`}},
		{"no decoder", "decoder: missing", []string{`"decoder": {"type": "Sequence"`, `"decoder": null, "x": {"type": "Sequence"`}},
		{"unknown decoder", `decoder: decoders[1]: type "CTC" is not supported`, []string{`{"type": "Fuse"}`, `{"type": "CTC"}`}},
		{"Strip without start", "decoder: decoders[2]: start/stop: missing", []string{`"start": 1, `, ``}},
		{"unk_token not in the vocabulary", `model.unk_token: "[UNK]" is not in model.vocab`, []string{`"unk_token": "<unk>"`, `"unk_token": "[UNK]"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := string(raw)
			for i := 0; i+1 < len(c.edits); i += 2 {
				if strings.Count(text, c.edits[i]) != 1 {
					t.Fatalf("test setup: %q not once in tiny.json", c.edits[i])
				}
				text = strings.Replace(text, c.edits[i], c.edits[i+1], 1)
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "tokenizer.json"), []byte(text))
			writeFile(t, filepath.Join(dir, "tokenizer_config.json"), []byte(`{"bos_token": "<s>", "eos_token": "</s>"}`))
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming tokenizer.json and saying %q", err, c.want)
			}
		})
	}
}

// TestLlamaAddBOSEOS checks that tokenizer_config.json's add_bos_token and
// add_eos_token decide the special tokens Encode adds for a LlamaTokenizer,
// as transformers' LlamaTokenizerFast.update_post_processor does when it
// loads (its code, transformers 4.51: not run here, whose Python lacks the
// tokenizers library).
func TestLlamaAddBOSEOS(t *testing.T) {
	for _, c := range []struct {
		find, replace string
		want          []int
	}{
		{`"add_bos_token": true,`, `"add_bos_token": true,`, []int{1, 23325}},
		{`"add_eos_token": false,`, `"add_eos_token": true,`, []int{1, 23325, 2}},
		{`"add_bos_token": true,`, `"add_bos_token": false,`, []int{23325}},
		{`"add_bos_token": true,`, ``, []int{1, 23325}}, // LlamaTokenizerFast's default
		{`"tokenizer_class": "LlamaTokenizer",`, `"tokenizer_class": "LlamaTokenizerFast",`, []int{1, 23325}},
		{`"bos_token": "<s>",`, ``, []int{1, 23325}},                  // the class's default bos_token
		{`"tokenizer_class": "LlamaTokenizer",`, ``, []int{1, 23325}}, // tokenizer.json's post-processor
	} {
		dir := spmFiles(t, "", "")
		cfg := gunzipFile(t, filepath.Join(spmDir, "mistral-v0.3", "tokenizer_config.json.gz"))
		if strings.Count(string(cfg), c.find) != 1 {
			t.Fatalf("tokenizer_config.json: no %s", c.find)
		}
		writeFile(t, filepath.Join(dir, "tokenizer_config.json"), []byte(strings.Replace(string(cfg), c.find, c.replace, 1)))
		tk, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.Encode("Hello", true); !slices.Equal(got, c.want) {
			t.Errorf("%s → %s: %v, want %v", c.find, c.replace, got, c.want)
		}
	}
}

// TestOnlyTokenizerModel: a checkpoint with a SentencePiece tokenizer.model
// and no tokenizer.json (some Vicuna repositories have only that) is refused saying how to
// make the tokenizer.json that is read.
func TestOnlyTokenizerModel(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tokenizer.model"), gunzipFile(t, filepath.Join(spmDir, "mistral-v0.3", "tokenizer.model.gz")))
	writeFile(t, filepath.Join(dir, "tokenizer_config.json"), []byte(`{"bos_token": "<s>", "eos_token": "</s>"}`))
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "tokenizer.model but no tokenizer.json") || !strings.Contains(err.Error(), "save_pretrained") {
		t.Errorf("error %v, want one saying to write tokenizer.json", err)
	}
}

// HF's Metaspace with split: true cuts before every "▁" (MergedWithNext),
// the first character included: "a b" with prepend_scheme never is the
// words "a" and "▁b", never the merge "a▁".
func TestMetaspaceSplitFirstWord(t *testing.T) {
	raw := `{"added_tokens":[],"normalizer":null,
	"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true},
	"decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true},
	"model":{"type":"BPE","unk_token":"<unk>","vocab":{"<unk>":0,"a":1,"▁":2,"b":3,"▁b":4,"a▁":5},"merges":["a ▁","▁ b"]}}`
	tok, err := parseTokenizerJSON([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("a b", false), []int{1, 4}; !slices.Equal(got, want) {
		t.Errorf("Encode(%q) = %v, want %v", "a b", got, want)
	}
}
