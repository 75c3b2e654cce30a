package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
)

// tokenizerFile is the part of HF's tokenizer.json this package understands.
type tokenizerFile struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         bpeModel         `json:"model"`
}

// bpeModel is tokenizer.json's "model": a BPE's.
type bpeModel struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ByteFallback            bool            `json:"byte_fallback"`
	UnkToken                *string         `json:"unk_token"`
	FuseUnk                 bool            `json:"fuse_unk"`
	Dropout                 *float64        `json:"dropout"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// component is the {"type": ...} shape shared by normalizers, pre-tokenizers,
// post-processors and decoders.
type component struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       struct {
		Regex  *string
		String *string
	} `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	AddPrefixSpace *bool           `json:"add_prefix_space"`
	UseRegex       bool            `json:"use_regex"`
	Single         []templatePiece `json:"single"`

	// Prepend, Replace, Metaspace and Strip (SentencePiece-style tokenizers)
	Prepend       *string `json:"prepend"`
	Content       *string `json:"content"`
	Replacement   *string `json:"replacement"`
	PrependScheme *string `json:"prepend_scheme"`
	Split         *bool   `json:"split"`
	Start         *int    `json:"start"`
	Stop          *int    `json:"stop"`
}

type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// configFile is the part of tokenizer_config.json this package reads.
type configFile struct {
	BOSToken                  json.RawMessage `json:"bos_token"`
	EOSToken                  json.RawMessage `json:"eos_token"`
	PadToken                  json.RawMessage `json:"pad_token"`
	CleanUpTokenizationSpaces *bool           `json:"clean_up_tokenization_spaces"`
	ChatTemplate              json.RawMessage `json:"chat_template"`
	TokenizerClass            string          `json:"tokenizer_class"`
	AddBOSToken               *bool           `json:"add_bos_token"`
	AddEOSToken               *bool           `json:"add_eos_token"`
}

// Load reads a model directory's tokenizer.json, tokenizer_config.json and,
// when present, chat_template.jinja (which takes precedence over a
// chat_template inside tokenizer_config.json, as in transformers). A
// directory without tokenizer.json but with GPT-2's vocab.json and
// merges.txt (OPT's) is read as transformers converts those (gpt2files.go).
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	raw, err := inputfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && hasGPT2Files(dir) {
		path = filepath.Join(dir, "vocab.json and merges.txt")
		raw, err = gpt2TokenizerJSON(dir)
	}
	if errors.Is(err, os.ErrNotExist) && regularFile(filepath.Join(dir, "vocab.json")) != regularFile(filepath.Join(dir, "merges.txt")) {
		have, lack := "vocab.json", "merges.txt"
		if !regularFile(filepath.Join(dir, have)) {
			have, lack = lack, have
		}
		return nil, fmt.Errorf("load tokenizer: %s has no tokenizer.json and GPT-2's %s without its %s: both are read together (or a tokenizer.json alone): %w", dir, have, lack, err)
	}
	if errors.Is(err, os.ErrNotExist) && regularFile(filepath.Join(dir, "tokenizer.model")) {
		return nil, fmt.Errorf("load tokenizer: %s has a SentencePiece tokenizer.model but no tokenizer.json, which is what is read: "+
			"transformers writes one (AutoTokenizer.from_pretrained(dir).save_pretrained(dir)): %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := parseTokenizerJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfgRaw, err := inputfile.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer config: %w", err)
	}
	templateSrc, err := t.applyConfig(cfgRaw)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", cfgPath, err)
	}
	tplPath := cfgPath
	jinjaPath := filepath.Join(dir, "chat_template.jinja")
	if b, err := inputfile.ReadFile(jinjaPath); err == nil {
		templateSrc, tplPath = string(b), jinjaPath
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load chat template: %w", err)
	}
	if templateSrc != "" {
		tpl, err := newChatTemplate(templateSrc)
		if err != nil {
			return nil, fmt.Errorf("load %s: chat_template: %w", tplPath, err)
		}
		tpl.name = tplPath
		t.template = tpl
	}
	return t, nil
}

// parseTokenizerJSON builds a Tokenizer from tokenizer.json's contents. Errors
// name the JSON field at fault; anything this package does not implement is
// refused rather than silently encoded differently from HF.
func parseTokenizerJSON(raw []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(raw, &f); err != nil {
		// Another model's vocab (Unigram's is a list) does not unmarshal as
		// BPE's map: "invalid JSON" would hide that the model is the reason.
		var head struct {
			Model struct {
				Type string `json:"type"`
			} `json:"model"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Model.Type != "BPE" {
			return nil, unsupportedModel(head.Model.Type)
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	m := &f.Model
	if err := m.check(); err != nil {
		return nil, err
	}
	spStyle := sentencePieceStyle(&f)
	if m.ByteFallback && !spStyle {
		return nil, errors.New("model.byte_fallback: true is supported only in a SentencePiece-style tokenizer (a Metaspace pre-tokenizer or none), not with ByteLevel")
	}
	t := &Tokenizer{ignoreMerges: m.IgnoreMerges, bosID: -1, eosID: -1, padID: -1}
	if err := t.parseVocab(m.Vocab, len(f.AddedTokens), spStyle); err != nil {
		return nil, err
	}
	if err := t.parseMerges(m.Merges, m.Vocab); err != nil {
		return nil, err
	}
	if err := t.parseAddedTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if err := t.parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if spStyle {
		if err := t.parseSentencePiece(&f); err != nil {
			return nil, err
		}
	} else {
		if err := t.parsePreTokenizer(f.PreTokenizer); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
		if err := t.parseDecoder(f.Decoder); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
	}
	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	return t, nil
}

// unsupportedModel is the error for a tokenizer model other than BPE.
func unsupportedModel(typ string) error {
	return fmt.Errorf("model.type: %s is not supported (want BPE)", clip.Quote(typ))
}

// check refuses a model this package does not implement, rather than
// encoding differently from HF.
func (m *bpeModel) check() error {
	if m.Type != "BPE" {
		return unsupportedModel(m.Type)
	}
	if len(m.Vocab) == 0 {
		return errors.New("model.vocab: missing or empty")
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return errors.New("model.dropout: BPE dropout is not supported")
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") ||
		(m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return errors.New("model.continuing_subword_prefix/end_of_word_suffix: not supported")
	}
	return nil
}

// parseVocab fills the id tables from model.vocab: ids to vocabulary
// spellings and to the bytes they stand for, and raw text to ids. added is
// the number of added tokens, whose ids may extend the vocabulary. spStyle
// says the vocabulary is spelled in plain text (SentencePiece-style) rather
// than in GPT-2's byte alphabet.
func (t *Tokenizer) parseVocab(vocab map[string]int, added int, spStyle bool) error {
	for tok, id := range vocab {
		if id < 0 || id >= maxTokenID {
			return fmt.Errorf("model.vocab[%s]: id %d outside [0, %d)", clip.Quote(tok), id, maxTokenID)
		}
		if id >= t.vocabSize {
			t.vocabSize = id + 1
		}
	}
	// The id tables are as long as the largest id: a few bytes of JSON
	// must not make them gigabytes.
	if n := len(vocab) + added + maxVocabHoles; t.vocabSize > n {
		return fmt.Errorf("model.vocab: ids run to %d for %d tokens (and %d added ones): ids must be nearly consecutive",
			t.vocabSize-1, len(vocab), added)
	}
	seen := make(map[int]string, len(vocab))
	for tok, id := range vocab {
		if other, dup := seen[id]; dup {
			a, b := min(tok, other), max(tok, other) // the same message whatever the map's order
			return fmt.Errorf("model.vocab: %s and %s both have id %d", clip.Quote(a), clip.Quote(b), id)
		}
		seen[id] = tok
	}
	t.idToToken = make([]string, t.vocabSize)
	t.idToBytes = make([][]byte, t.vocabSize)
	t.tokenToID = make(map[string]int, len(vocab)+added)
	t.rawToID = make(map[string]int32, len(vocab))
	for tok, id := range vocab {
		t.idToToken[id] = tok
		t.tokenToID[tok] = id
		if spStyle {
			t.idToBytes[id] = spTokenBytes(tok)
			t.rawToID[tok] = int32(id)
			continue
		}
		b := byteLevelDecode(tok)
		t.idToBytes[id] = b
		if byteLevelEncode(string(b)) == tok {
			t.rawToID[string(b)] = int32(id)
		}
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[string(byteToRune[b])]
		if !ok || spStyle {
			id = -1 // HF drops characters missing from the vocabulary when there is no unk_token.
		}
		t.byteIDs[b] = int32(id)
	}
	return nil
}

// parseMerges reads model.merges in either spelling ("a b" strings or
// ["a","b"] pairs). A merge's rank is its index; when a pair is listed twice
// the later entry wins, as in HF's map construction.
func (t *Tokenizer) parseMerges(raw json.RawMessage, vocab map[string]int) error {
	var pairs [][2]string
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return errors.New("model.merges: missing")
	}
	if inner := bytes.TrimLeft(trimmed[1:], " \t\r\n"); trimmed[0] == '[' && len(inner) > 0 && inner[0] == '"' {
		var lines []string
		if err := json.Unmarshal(raw, &lines); err != nil {
			return fmt.Errorf("model.merges: %w", err)
		}
		pairs = make([][2]string, len(lines))
		for i, l := range lines {
			a, b, ok := strings.Cut(l, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("model.merges[%d]: %s is not two tokens separated by one space", i, clip.Quote(l))
			}
			pairs[i] = [2]string{a, b}
		}
	} else if err := json.Unmarshal(raw, &pairs); err != nil {
		return fmt.Errorf("model.merges: %w", err)
	}
	t.merges = make(map[uint64]uint64, len(pairs))
	for i, p := range pairs {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		c, okC := vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return fmt.Errorf("model.merges[%d]: %s %s: token not in model.vocab", i, clip.Quote(p[0]), clip.Quote(p[1]))
		}
		t.merges[pairKey(int32(a), int32(b))] = uint64(i)<<32 | uint64(c)
	}
	return nil
}

// maxTokenID bounds token ids: far above any vocabulary (Llama 3: 128,256;
// Qwen3: 151,669), low enough that the id tables stay small.
const maxTokenID = 1 << 24

// maxVocabHoles is how many ids below model.vocab's largest may be unused
// (real vocabularies use them all; an added token may take one).
const maxVocabHoles = 1 << 16

func (t *Tokenizer) parseAddedTokens(list []addedTokenJSON) error {
	t.added = make(map[string]int, len(list))
	t.addedByID = make(map[int]addedToken, len(list))
	for i, a := range list {
		switch {
		case a.Content == "":
			return fmt.Errorf("added_tokens[%d]: empty content", i)
		case a.ID < 0 || a.ID >= maxTokenID:
			return fmt.Errorf("added_tokens[%d] (%s): id %d outside [0, %d)", i, clip.Quote(a.Content), a.ID, maxTokenID)
		case a.ID < len(t.idToToken) && t.idToToken[a.ID] != "" && string(byteLevelDecode(t.idToToken[a.ID])) != a.Content && t.idToToken[a.ID] != a.Content:
			return fmt.Errorf("added_tokens[%d] (%s): id %d is model.vocab's %s", i, clip.Quote(a.Content), a.ID, clip.Quote(t.idToToken[a.ID]))
		case a.SingleWord || a.Lstrip || a.Rstrip:
			return fmt.Errorf("added_tokens[%d] (%s): single_word/lstrip/rstrip are not supported", i, clip.Quote(a.Content))
		case a.Normalized && a.Special:
			// HF never normalizes special tokens; the flag has no effect.
		case a.Normalized:
			return fmt.Errorf("added_tokens[%d] (%s): normalized=true is not supported", i, clip.Quote(a.Content))
		}
		t.added[a.Content] = a.ID
		t.addedByID[a.ID] = addedToken{content: a.Content, special: a.Special}
		t.tokenToID[a.Content] = a.ID
		if a.ID >= t.vocabSize {
			t.vocabSize = a.ID + 1
		}
		t.addedFirstByte[a.Content[0]] = true
	}
	for content := range t.added {
		t.addedSorted = append(t.addedSorted, content)
	}
	sort.Strings(t.addedSorted)
	return nil
}

// normalizer is one step of tokenizer.json's normalizer.
type normalizer func(string) string

// parseNormalizer reads the normalizers the supported tokenizers use: NFC
// (Qwen3), and Prepend and Replace with a literal pattern (the legacy
// SentencePiece-style layout: "▁" before the segment, spaces as "▁").
func (t *Tokenizer) parseNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "NFC":
		t.normalizers = append(t.normalizers, nfc)
	case "Sequence":
		for i, sub := range c.Normalizers {
			if err := t.parseNormalizer(sub); err != nil {
				return fmt.Errorf("normalizers[%d]: %w", i, err)
			}
		}
	case "Prepend":
		if c.Prepend == nil {
			return errors.New("prepend: missing")
		}
		if len(*c.Prepend) > maxInsertBytes {
			return fmt.Errorf("prepend: longer than %d bytes", maxInsertBytes)
		}
		prefix := *c.Prepend
		t.normalizers = append(t.normalizers, func(s string) string {
			if s == "" {
				return s // HF prepends to non-empty text only
			}
			return prefix + s
		})
	case "Replace":
		pattern, content, err := c.literalReplace()
		if err != nil {
			return err
		}
		t.normalizers = append(t.normalizers, func(s string) string { return strings.ReplaceAll(s, pattern, content) })
	default:
		return fmt.Errorf("type %s is not supported (known: NFC, Prepend, Replace, Sequence)", clip.Quote(c.Type))
	}
	return nil
}

func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	return norm.NFC.String(s)
}

// literalReplace reads a Replace normalizer's or decoder's pattern (a String
// one; a Regex is not supported) and content.
func (c *component) literalReplace() (pattern, content string, err error) {
	switch {
	case c.Pattern.String == nil:
		return "", "", errors.New("pattern: only String patterns are supported")
	case *c.Pattern.String == "":
		return "", "", errors.New("pattern.String: empty")
	case c.Content == nil:
		return "", "", errors.New("content: missing")
	case len(*c.Content) > maxInsertBytes:
		return "", "", fmt.Errorf("content: longer than %d bytes", maxInsertBytes)
	}
	return *c.Pattern.String, *c.Content, nil
}

// maxInsertBytes bounds what a Prepend or Replace writes in (real
// tokenizers write one character, "▁"): each is written once per segment or
// match, and a long one would make a short text gigabytes.
const maxInsertBytes = 64

// parsePreTokenizer accepts what Llama-3 and Qwen2/3 use: Split with one of
// the two known regexes, then ByteLevel without its own regex; and GPT-2's
// (OPT's): ByteLevel alone, with its regex.
func (t *Tokenizer) parsePreTokenizer(raw json.RawMessage) error {
	if isNull(raw) {
		return errors.New("missing (a Split + ByteLevel pre-tokenizer is required)")
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	list := []json.RawMessage{raw}
	if c.Type == "Sequence" {
		list = c.Pretokenizers
	}
	var haveSplit, haveByteLevel bool
	for i, sub := range list {
		var p component
		if err := json.Unmarshal(sub, &p); err != nil {
			return fmt.Errorf("pretokenizers[%d]: %w", i, err)
		}
		switch p.Type {
		case "Split":
			if p.Pattern.Regex == nil {
				return fmt.Errorf("pretokenizers[%d].pattern: only Regex patterns are supported", i)
			}
			switch *p.Pattern.Regex {
			case llama3SplitRegex:
				t.split = splitter{maxDigits: 3}
			case qwen2SplitRegex:
				t.split = splitter{maxDigits: 1}
			case tekkenSplitRegex:
				t.split = splitter{tekken: true}
			default:
				return fmt.Errorf("pretokenizers[%d].pattern.Regex: unsupported pattern %s (known: the Llama-3, Qwen2/3 and Mistral tekken patterns)", i, clip.Quote(*p.Pattern.Regex))
			}
			if p.Behavior != "Isolated" || p.Invert {
				return fmt.Errorf("pretokenizers[%d].behavior: only Isolated without invert is supported", i)
			}
			haveSplit = true
		case "ByteLevel":
			if p.AddPrefixSpace != nil && *p.AddPrefixSpace {
				return fmt.Errorf("pretokenizers[%d]: ByteLevel with add_prefix_space is not supported", i)
			}
			if p.UseRegex { // GPT-2's pattern (OPT), instead of a Split
				if len(list) != 1 {
					return fmt.Errorf("pretokenizers[%d]: ByteLevel with use_regex is supported alone (GPT-2's pre-tokenizer)", i)
				}
				t.split, haveSplit = splitter{gpt2: true}, true
			}
			haveByteLevel = true
		default:
			return fmt.Errorf("pretokenizers[%d].type: %s is not supported", i, clip.Quote(p.Type))
		}
	}
	if !haveSplit || !haveByteLevel {
		return errors.New("need both a Split and a ByteLevel pre-tokenizer")
	}
	return nil
}

// parsePostProcessor reads the special tokens a single sequence gets when
// special tokens are added (TemplateProcessing's "single"); ByteLevel
// post-processing only moves offsets, which this package does not report.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for i, sub := range c.Processors {
			if err := t.parsePostProcessor(sub); err != nil {
				return fmt.Errorf("processors[%d]: %w", i, err)
			}
		}
		return nil
	case "TemplateProcessing":
		t.prefix, t.suffix = nil, nil
		seen := false
		for i, p := range c.Single {
			switch {
			case p.Sequence != nil:
				if p.Sequence.ID != "A" || seen {
					return fmt.Errorf("single[%d]: only one sequence A is supported", i)
				}
				seen = true
			case p.SpecialToken != nil:
				id, ok := t.tokenToID[p.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("single[%d].SpecialToken.id: %s is not a token", i, clip.Quote(p.SpecialToken.ID))
				}
				if seen {
					t.suffix = append(t.suffix, id)
				} else {
					t.prefix = append(t.prefix, id)
				}
			default:
				return fmt.Errorf("single[%d]: want SpecialToken or Sequence", i)
			}
		}
		if !seen {
			return errors.New("single: no Sequence A")
		}
		return nil
	}
	return fmt.Errorf("type %s is not supported", clip.Quote(c.Type))
}

func (t *Tokenizer) parseDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return errors.New("missing (ByteLevel is required)")
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("type %s is not supported (only ByteLevel)", clip.Quote(c.Type))
	}
	return nil
}

// applyConfig reads tokenizer_config.json: the special-token names and the
// clean-up flag. It returns the chat_template string found there, if any.
func (t *Tokenizer) applyConfig(raw []byte) (string, error) {
	var c configFile
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	lookup := func(field string, v json.RawMessage) (int, error) {
		name, err := tokenName(v)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", field, err)
		}
		if name == "" {
			return -1, nil
		}
		id, ok := t.tokenToID[name]
		if !ok {
			return -1, fmt.Errorf("%s: %s is not in tokenizer.json", field, clip.Quote(name))
		}
		return id, nil
	}
	var err error
	if t.bosID, err = lookup("bos_token", c.BOSToken); err != nil {
		return "", err
	}
	if t.eosID, err = lookup("eos_token", c.EOSToken); err != nil {
		return "", err
	}
	if t.eosID < 0 {
		return "", errors.New("eos_token: missing")
	}
	if t.padID, err = lookup("pad_token", c.PadToken); err != nil {
		return "", err
	}
	t.bosToken, _ = tokenName(c.BOSToken)
	t.eosToken, _ = tokenName(c.EOSToken)
	t.padToken, _ = tokenName(c.PadToken)
	if c.CleanUpTokenizationSpaces != nil {
		t.cleanUp = *c.CleanUpTokenizationSpaces
	}
	if err := t.llamaSpecials(&c); err != nil {
		return "", err
	}
	t.stopIDs = []int{t.eosID}
	for _, name := range endOfTurnTokens {
		if id, ok := t.added[name]; ok && id != t.eosID {
			t.stopIDs = append(t.stopIDs, id)
		}
	}
	sort.Ints(t.stopIDs)

	if isNull(c.ChatTemplate) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(c.ChatTemplate, &s); err != nil {
		return "", errors.New("chat_template: want a string (named template lists are not supported)")
	}
	return s, nil
}

// llamaSpecials does what transformers' LlamaTokenizerFast does when it
// loads (tokenizer_class LlamaTokenizer, as in Llama-2's, Mistral-7B's and
// TinyLlama's tokenizer_config.json): it rebuilds the post-processor from
// add_bos_token (default true) and add_eos_token (default false), whatever
// tokenizer.json's says (update_post_processor); a config without bos_token
// gets the class's default, "<s>".
func (t *Tokenizer) llamaSpecials(c *configFile) error {
	if c.TokenizerClass != "LlamaTokenizer" && c.TokenizerClass != "LlamaTokenizerFast" {
		return nil
	}
	if id, ok := t.tokenToID["<s>"]; ok && c.BOSToken == nil {
		t.bosID, t.bosToken = id, "<s>"
	}
	t.prefix, t.suffix = nil, nil
	if c.AddBOSToken == nil || *c.AddBOSToken {
		if t.bosID < 0 {
			return errors.New("add_bos_token: true (LlamaTokenizer's default), but there is no bos_token")
		}
		t.prefix = []int{t.bosID}
	}
	if c.AddEOSToken != nil && *c.AddEOSToken {
		t.suffix = []int{t.eosID}
	}
	return nil
}

// endOfTurnTokens are the added tokens that end a generation for the model
// families this package knows, besides eos_token (the ids in their
// generation_config.json: Llama-3.x 128001/128008/128009, Qwen3 151643/151645).
var endOfTurnTokens = []string{"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>"}

// tokenName reads a special-token field, which is a string, null, or an
// AddedToken object with a "content" field.
func tokenName(v json.RawMessage) (string, error) {
	if isNull(v) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(v, &obj); err != nil || obj.Content == "" {
		return "", errors.New("want a string, null or an object with content")
	}
	return obj.Content, nil
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || bytes.Equal(s, []byte("null"))
}
