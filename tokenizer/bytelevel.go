package tokenizer

import "unicode/utf8"

// byteToRune is GPT-2's bytes_to_unicode table, which byte-level BPE uses to
// spell every byte as a printable character: printable Latin-1 bytes stand for
// themselves, the other 68 bytes are moved to U+0100 and up, in byte order.
var byteToRune [256]rune

// runeToByte inverts byteToRune; ok is false for runes outside the table.
var runeToByte = map[rune]byte{}

func init() {
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = next
			next++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode turns a vocabulary entry back into raw bytes the way HF's
// ByteLevel decoder does: every character through the inverse byte map, or,
// when one character is not in the map, the entry's own UTF-8 bytes unchanged.
func byteLevelDecode(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(tok)
		}
		out = append(out, b)
	}
	return out
}

// byteLevelEncode spells raw bytes in the byte-level alphabet (the form the
// vocabulary and merges are written in).
func byteLevelEncode(raw string) string {
	out := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		out = utf8.AppendRune(out, byteToRune[raw[i]])
	}
	return string(out)
}

// appendLossy appends b to dst as valid UTF-8 the way Rust's
// String::from_utf8_lossy does: each maximal ill-formed subpart (the longest
// prefix of a would-be valid sequence, or one bad byte) becomes one U+FFFD.
// Go's own conversions differ: they replace every bad byte separately.
func appendLossy(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || w > 1 {
			dst = append(dst, b[i:i+w]...)
			i += w
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += maximalSubpart(b[i:])
	}
	return dst
}

// maximalSubpart is the length of the ill-formed prefix of b that Unicode's
// "maximal subpart" rule replaces by a single U+FFFD (at least 1).
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the second byte
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}
