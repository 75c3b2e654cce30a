package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/meazo-go/meazo/internal/clip"
)

// sentencePieceStyle tells the two BPE layouts apart (spm.go): a byte-level
// tokenizer.json has a ByteLevel pre-tokenizer or decoder; any other is read
// as SentencePiece-style, and what it holds is then checked against that.
func sentencePieceStyle(f *tokenizerFile) bool {
	return !mentionsByteLevel(f.PreTokenizer) && !mentionsByteLevel(f.Decoder)
}

// mentionsByteLevel says whether a pre-tokenizer or decoder is ByteLevel or
// a Sequence holding one (false for what does not parse: the parser of the
// layout chosen reports it).
func mentionsByteLevel(raw json.RawMessage) bool {
	if isNull(raw) {
		return false
	}
	var c component
	if json.Unmarshal(raw, &c) != nil {
		return false
	}
	for _, sub := range append(c.Pretokenizers, c.Decoders...) {
		if mentionsByteLevel(sub) {
			return true
		}
	}
	return c.Type == "ByteLevel"
}

// parseSentencePiece reads what a SentencePiece-style tokenizer.json has
// besides the vocabulary, merges and normalizer: model.byte_fallback,
// unk_token and fuse_unk, the Metaspace pre-tokenizer (or none) and the
// decoder chain.
func (t *Tokenizer) parseSentencePiece(f *tokenizerFile) error {
	p := &spLayout{byteFallback: f.Model.ByteFallback, fuseUnk: f.Model.FuseUnk, unkID: -1}
	if err := p.parseModel(&f.Model); err != nil {
		return err
	}
	if err := p.parsePreTokenizer(f.PreTokenizer); err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	if isNull(f.Decoder) {
		return errors.New(`decoder: missing (a SentencePiece-style tokenizer needs one, such as Replace "▁"→" ", ByteFallback, Fuse, Strip)`)
	}
	if err := p.parseDecoder(f.Decoder); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	t.sp = p
	return nil
}

// parseModel finds the byte tokens and the unknown token. byte_fallback
// needs all 256 byte tokens: with some missing HF would fall back to <unk>
// for a character and emit it after the bytes of the next (its quirk), which
// no real vocabulary asks for.
func (p *spLayout) parseModel(m *bpeModel) error {
	if p.byteFallback {
		for b := 0; b < 256; b++ {
			name := fmt.Sprintf("<0x%02X>", b)
			id, ok := m.Vocab[name]
			if !ok {
				return fmt.Errorf("model.byte_fallback: true, but model.vocab lacks %q (byte fallback needs the 256 tokens <0x00>…<0xFF>)", name)
			}
			p.byteIDs[b] = int32(id)
		}
	}
	if m.UnkToken == nil || p.byteFallback {
		return nil // with byte fallback, no character is unknown
	}
	id, ok := m.Vocab[*m.UnkToken]
	if !ok {
		return fmt.Errorf("model.unk_token: %s is not in model.vocab", clip.Quote(*m.UnkToken))
	}
	p.unkID = int32(id)
	return nil
}

// parsePreTokenizer accepts a Metaspace pre-tokenizer, or none.
func (p *spLayout) parsePreTokenizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil // the legacy layout: the normalizer writes the "▁"s
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if c.Type != "Metaspace" {
		return fmt.Errorf("type %s is not supported (a SentencePiece-style tokenizer has a Metaspace pre-tokenizer or none; a byte-level one has Split and ByteLevel)", clip.Quote(c.Type))
	}
	m, err := c.metaspace()
	if err != nil {
		return err
	}
	p.metaspace = &m
	return nil
}

// metaspace reads a Metaspace pre-tokenizer or decoder as HF deserializes
// one: prepend_scheme defaults to "always" and split to true; the older
// add_prefix_space, when false, must come with prepend_scheme "never".
func (c *component) metaspace() (metaspace, error) {
	m := metaspace{prepend: prependAlways, split: true}
	if c.Replacement == nil || utf8.RuneCountInString(*c.Replacement) != 1 {
		return m, errors.New("replacement: want one character")
	}
	m.replacement = *c.Replacement
	if c.PrependScheme != nil {
		switch *c.PrependScheme {
		case "always":
		case "first":
			m.prepend = prependFirst
		case "never":
			m.prepend = prependNever
		default:
			return m, fmt.Errorf("prepend_scheme: %s is not one of always, first, never", clip.Quote(*c.PrependScheme))
		}
	}
	if c.AddPrefixSpace != nil && !*c.AddPrefixSpace && m.prepend != prependNever {
		return m, errors.New(`add_prefix_space: false needs prepend_scheme "never"`)
	}
	if c.Split != nil {
		m.split = *c.Split
	}
	return m, nil
}

// parseDecoder reads the decoder chain: Replace with a literal pattern,
// ByteFallback, Fuse, Strip and Metaspace, alone or in Sequences.
func (p *spLayout) parseDecoder(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "Sequence":
		for i, sub := range c.Decoders {
			if err := p.parseDecoder(sub); err != nil {
				return fmt.Errorf("decoders[%d]: %w", i, err)
			}
		}
		return nil
	case "Replace":
		pattern, content, err := c.literalReplace()
		if err != nil {
			return err
		}
		p.decoders = append(p.decoders, replaceDecoder(pattern, content))
	case "ByteFallback":
		p.decoders = append(p.decoders, byteFallbackDecoder)
	case "Fuse":
		p.decoders = append(p.decoders, fuseDecoder)
	case "Strip":
		step, err := c.strip()
		if err != nil {
			return err
		}
		p.decoders = append(p.decoders, step)
	case "Metaspace":
		m, err := c.metaspace()
		if err != nil {
			return err
		}
		p.decoders = append(p.decoders, metaspaceDecoder(m))
	default:
		return fmt.Errorf("type %s is not supported in a SentencePiece-style tokenizer (known: Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)", clip.Quote(c.Type))
	}
	return nil
}

// strip reads a Strip decoder: one character and two counts.
func (c *component) strip() (decodeStep, error) {
	if c.Content == nil || utf8.RuneCountInString(*c.Content) != 1 {
		return nil, errors.New("content: want one character")
	}
	if c.Start == nil || c.Stop == nil {
		return nil, errors.New("start/stop: missing")
	}
	start, stop := *c.Start, *c.Stop
	if start < 0 || stop < 0 {
		return nil, errors.New("start/stop: negative")
	}
	r, _ := utf8.DecodeRuneInString(*c.Content)
	return stripDecoder(r, start, stop), nil
}
