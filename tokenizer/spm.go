package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE: the tokenizer.json that transformers'
// LlamaConverter writes from a SentencePiece model (Llama-2, Mistral-7B
// v0.1–v0.3, TinyLlama, Vicuna and most Llama-architecture checkpoints).
// Its vocabulary is plain text with "▁" for a space; a word's initial
// symbols are its characters, and a character missing from the vocabulary
// becomes the <0xNN> tokens of its UTF-8 bytes (model.byte_fallback) or
// <unk>. Spaces become "▁" in one of two ways:
//
//   - older conversions ("legacy"): a normalizer Sequence of Prepend "▁" and
//     Replace " "→"▁", and no pre-tokenizer: every segment between added
//     tokens gets a "▁" of its own in front;
//   - newer ones: no normalizer and a Metaspace pre-tokenizer (replacement
//     "▁", prepend_scheme "first", split false), which prepends "▁" only to
//     the segment that starts the text, and only when that segment does not
//     start with a space.
//
// Either way, with split false a whole segment is one BPE word. The decoder
// chain turns "▁" back into spaces, runs of <0xNN> tokens into UTF-8, joins
// the tokens and strips the one leading space (Replace, ByteFallback, Fuse,
// Strip). The semantics are those of HF's tokenizers (models/bpe,
// normalizers/prepend.rs and replace.rs, pre_tokenizers/metaspace.rs,
// decoders/byte_fallback.rs, fuse.rs and strip.rs).

// spLayout is what a SentencePiece-style tokenizer has besides the vocabulary
// and merges the byte-level one shares.
type spLayout struct {
	metaspace    *metaspace // nil: no pre-tokenizer, a segment is one word
	byteFallback bool
	byteIDs      [256]int32 // the ids of <0x00>..<0xFF>, when byteFallback
	unkID        int32      // model.unk_token's id, -1 when there is none
	fuseUnk      bool       // a run of unknown characters is one <unk>
	decoders     []decodeStep
}

// prependScheme is Metaspace's prepend_scheme.
type prependScheme int

const (
	prependAlways prependScheme = iota
	prependFirst
	prependNever
)

// metaspace is HF's Metaspace pre-tokenizer: spaces become the replacement
// character, which is also prepended per the scheme; with split, the text is
// cut before every replacement character.
type metaspace struct {
	replacement string // one character, "▁"
	prepend     prependScheme
	split       bool
}

// appendSegment encodes a normalized segment that holds no added token.
func (p *spLayout) appendSegment(t *Tokenizer, dst []int, s string, atStart bool) []int {
	m := p.metaspace
	if m == nil {
		return t.appendWord(dst, s)
	}
	s = strings.ReplaceAll(s, " ", m.replacement)
	if (m.prepend == prependAlways || m.prepend == prependFirst && atStart) && !strings.HasPrefix(s, m.replacement) {
		s = m.replacement + s
	}
	if !m.split {
		return t.appendWord(dst, s)
	}
	// MergedWithNext: each replacement character starts a new word.
	for s != "" {
		// The first character of s starts the word, whether or not it is
		// the replacement ("a▁b", with no "▁" prepended, is "a" and "▁b").
		_, w := utf8.DecodeRuneInString(s)
		j := strings.Index(s[w:], m.replacement)
		if j < 0 {
			return t.appendWord(dst, s)
		}
		j += w
		dst = t.appendWord(dst, s[:j])
		s = s[j:]
	}
	return dst
}

// symbols spells a word as HF's BPE model starts one: each character as its
// own token; a character the vocabulary lacks as the <0xNN> tokens of its
// UTF-8 bytes (byte_fallback), or else as <unk> (one <unk> for a run of
// them with fuse_unk), or dropped when there is no unk_token. A byte that is
// not UTF-8 (text HF cannot be given) counts as a missing character of one
// byte.
func (p *spLayout) symbols(t *Tokenizer, w string) []int32 {
	syms := make([]int32, 0, len(w))
	lastUnk := false // the last symbol is an <unk> the next unknown character fuses with
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		c := w[i : i+n]
		i += n
		if id, ok := t.rawToID[c]; ok {
			syms = append(syms, id)
			lastUnk = false
			continue
		}
		switch {
		case p.byteFallback:
			for j := 0; j < len(c); j++ {
				syms = append(syms, p.byteIDs[c[j]])
			}
			lastUnk = false
		case p.unkID >= 0:
			if !(lastUnk && p.fuseUnk) {
				syms = append(syms, p.unkID)
			}
			lastUnk = true
		}
	}
	return syms
}

// unboundedTokenBytes is MaxTokenBytes when one token may stand for any
// number of bytes (a fused <unk>).
const unboundedTokenBytes = 1 << 20

// fusesUnknowns says whether one <unk> may stand for a run of characters.
func (p *spLayout) fusesUnknowns() bool { return !p.byteFallback && p.unkID >= 0 && p.fuseUnk }

// decode is HF's Tokenizer.decode for this layout: every id's token (an
// added token's content, special ones left out when skipSpecial; unknown
// ids skipped) goes through the decoder chain, whose outputs are joined.
func (p *spLayout) decode(t *Tokenizer, ids []int, skipSpecial bool) string {
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		if a, ok := t.addedByID[id]; ok {
			if !skipSpecial || !a.special {
				tokens = append(tokens, a.content)
			}
			continue
		}
		if id >= 0 && id < len(t.idToBytes) && t.idToBytes[id] != nil {
			tokens = append(tokens, t.idToToken[id])
		}
	}
	for _, d := range p.decoders {
		tokens = d(tokens)
	}
	return strings.Join(tokens, "")
}

// spTokenBytes is the text a vocabulary entry stands for: "<0xNN>" one byte,
// any other entry itself with "▁" read as a space (never nil: Decode tells
// vocabulary entries from holes by it).
func spTokenBytes(tok string) []byte {
	if b, ok := byteToken(tok); ok {
		return []byte{b}
	}
	return append(make([]byte, 0, len(tok)), strings.ReplaceAll(tok, "▁", " ")...)
}

// decodeStep is one decoder of the chain: tokens in, tokens out.
type decodeStep func(tokens []string) []string

// replaceDecoder is the Replace decoder: pattern, a literal, becomes content
// in every token.
func replaceDecoder(pattern, content string) decodeStep {
	return func(tokens []string) []string {
		for i, tok := range tokens {
			tokens[i] = strings.ReplaceAll(tok, pattern, content)
		}
		return tokens
	}
}

// byteFallbackDecoder is the ByteFallback decoder: each run of <0xNN> tokens
// becomes the text of its bytes, or, when they are not UTF-8, one U+FFFD per
// byte (HF's rule, unlike from_utf8_lossy's).
func byteFallbackDecoder(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, tok := range tokens {
		if b, ok := byteToken(tok); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// byteToken reads a byte token: six bytes, "<0x", two hex digits and ">".
// The digits are read as Rust's u8::from_str_radix reads them, which also
// takes a plus sign and one digit.
func byteToken(tok string) (byte, bool) {
	if len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return 0, false
	}
	hi, okHi := hexDigit(tok[3])
	lo, okLo := hexDigit(tok[4])
	switch {
	case okHi && okLo:
		return hi<<4 | lo, true
	case tok[3] == '+' && okLo:
		return lo, true
	}
	return 0, false
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// fuseDecoder is the Fuse decoder: all tokens joined into one.
func fuseDecoder(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder is the Strip decoder: from every token, up to start leading
// and up to stop trailing copies of content.
func stripDecoder(content rune, start, stop int) decodeStep {
	return func(tokens []string) []string {
		for i, tok := range tokens {
			r := []rune(tok)
			lo := 0
			for lo < start && lo < len(r) && r[lo] == content {
				lo++
			}
			hi := len(r)
			for len(r)-hi < stop && hi > lo && r[hi-1] == content {
				hi--
			}
			tokens[i] = string(r[lo:hi])
		}
		return tokens
	}
}

// metaspaceDecoder is the Metaspace decoder: the replacement character
// becomes a space, except in the first token, where it is dropped unless
// the scheme is never.
func metaspaceDecoder(m metaspace) decodeStep {
	return func(tokens []string) []string {
		for i, tok := range tokens {
			with := " "
			if i == 0 && m.prepend != prependNever {
				with = ""
			}
			tokens[i] = strings.ReplaceAll(tok, m.replacement, with)
		}
		return tokens
	}
}
