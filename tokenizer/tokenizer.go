// Package tokenizer is a BPE tokenizer and chat-template renderer that
// reproduces HuggingFace's tokenizers library and apply_chat_template
// exactly. It follows the rules written in the model's own tokenizer.json:
// added tokens are split out first, the rest is normalized and
// pre-tokenized, and each piece is merged by merge rank. Two layouts of BPE
// are read: byte-level ones (Llama-3.x, Qwen3, Mistral's tekken, GPT-2's:
// the pre-tokenizer's regex splits the text, which is spelled in GPT-2's byte
// alphabet) and SentencePiece-style ones (Llama-2, Mistral-7B, TinyLlama:
// spaces become "▁", characters are the initial symbols and those missing
// from the vocabulary fall back to <0xNN> byte tokens; spm.go).
package tokenizer

import (
	"hash/maphash"
	"sort"
	"strings"
	"sync"
)

// Tokenizer encodes and decodes text for one model. It is immutable after
// Load except for an internal cache, and safe for concurrent use.
type Tokenizer struct {
	vocabSize    int
	idToToken    []string         // model vocabulary, byte-level spelling
	idToBytes    [][]byte         // model vocabulary, raw bytes (HF ByteLevel decoding)
	tokenToID    map[string]int   // byte-level spelling (and added-token content) to id
	rawToID      map[string]int32 // raw bytes to id, for whole-word lookups
	byteIDs      [256]int32       // id of each single byte, -1 if absent
	merges       map[uint64]uint64
	ignoreMerges bool

	added          map[string]int // added-token content to id
	addedByID      map[int]addedToken
	addedSorted    []string // added-token contents, sorted (longestAdded)
	addedFirstByte [256]bool

	normalizers    []normalizer // tokenizer.json's normalizer, in order
	split          splitter     // byte-level layout: the pre-tokenizer's regex
	sp             *spLayout    // SentencePiece-style layout (spm.go); nil for byte-level
	prefix, suffix []int        // special tokens the post-processor adds around a sequence

	bosID, eosID, padID          int
	bosToken, eosToken, padToken string
	stopIDs                      []int
	cleanUp                      bool

	template *chatTemplate

	cache wordCache
}

type addedToken struct {
	content string
	special bool
}

// MaxTokenBytes is the most bytes one token stands for (the longest
// vocabulary entry or added token): text of n bytes encodes to at least
// n/MaxTokenBytes tokens, before normalization. (A SentencePiece-style
// tokenizer that fuses unknown characters into one <unk> has no such bound:
// it returns 1<<20.)
func (t *Tokenizer) MaxTokenBytes() int {
	if t.sp != nil && t.sp.fusesUnknowns() {
		return unboundedTokenBytes
	}
	n := 1
	for _, b := range t.idToBytes {
		n = max(n, len(b))
	}
	for content := range t.added {
		n = max(n, len(content))
	}
	return n
}

// VocabSize is the number of token ids (model vocabulary plus added tokens);
// the model's embedding table may be larger.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// BOS is the beginning-of-sequence id; ok is false when the model has none.
func (t *Tokenizer) BOS() (int, bool) { return t.bosID, t.bosID >= 0 }

// EOS is tokenizer_config.json's eos_token (Llama-3.2: <|eot_id|>, Qwen3: <|im_end|>).
func (t *Tokenizer) EOS() int { return t.eosID }

// PadID is pad_token when the config names one, otherwise EOS (Llama-3 has
// no pad token; padded positions are masked, so any id works).
func (t *Tokenizer) PadID() int {
	if t.padID >= 0 {
		return t.padID
	}
	return t.eosID
}

// StopIDs are the ids that end a generated turn: EOS plus the model family's
// other end-of-text/end-of-turn tokens present in the vocabulary, ascending.
func (t *Tokenizer) StopIDs() []int { return append([]int(nil), t.stopIDs...) }

// CleanUpSpaces reports tokenizer_config.json's clean_up_tokenization_spaces.
func (t *Tokenizer) CleanUpSpaces() bool { return t.cleanUp }

// TokenID looks up a token by its vocabulary spelling (byte-level form such as
// "Ġthe", or an added token's content such as "<|eot_id|>").
func (t *Tokenizer) TokenID(tok string) (int, bool) {
	id, ok := t.tokenToID[tok]
	return id, ok
}

// Token is the vocabulary spelling of id ("" when id is unknown).
func (t *Tokenizer) Token(id int) string {
	if a, ok := t.addedByID[id]; ok {
		return a.content
	}
	if id >= 0 && id < len(t.idToToken) {
		return t.idToToken[id]
	}
	return ""
}

// IsSpecial reports whether id is an added token marked special (the ones
// Decode with skipSpecial drops; Qwen3's <think> is not special).
func (t *Tokenizer) IsSpecial(id int) bool {
	a, ok := t.addedByID[id]
	return ok && a.special
}

// Encode turns text into token ids as HF's tokenizer.encode(text,
// add_special_tokens=addSpecial) does.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	ids := make([]int, 0, len(text)/4+4)
	if addSpecial {
		ids = append(ids, t.prefix...)
	}
	ids = t.AppendEncode(ids, text)
	if addSpecial {
		ids = append(ids, t.suffix...)
	}
	return ids
}

// AppendEncode appends the ids of text (no special tokens added) to dst.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	start := 0 // where the text after the last added token starts
	for i := 0; i < len(text); i++ {
		if !t.addedFirstByte[text[i]] {
			continue
		}
		// Leftmost-longest: the first position where any added token
		// starts, and the longest one there.
		if n := t.longestAdded(text[i:]); n > 0 {
			dst = t.appendSegment(dst, text[start:i], start == 0)
			dst = append(dst, t.added[text[i:i+n]])
			start = i + n
			i = start - 1
		}
	}
	return t.appendSegment(dst, text[start:], start == 0)
}

// longestAdded is the length of the longest added token that s begins with
// (0 if none). It narrows the sorted contents one byte of s at a time, so it
// costs O(L log n) for a match walk of L bytes, whatever the number and
// lengths of the added tokens (trying every distinct length instead hashed
// the sum of those lengths at every position: a tokenizer.json with
// thousands of long added tokens made encoding quadratic).
func (t *Tokenizer) longestAdded(s string) int {
	a := t.addedSorted
	lo, hi, best := 0, len(a), 0
	for d := 0; d < len(s) && lo < hi; d++ {
		// a[lo:hi] all begin with s[:d] and are longer than d bytes.
		c := s[d]
		lo += sort.Search(hi-lo, func(k int) bool { return a[lo+k][d] >= c })
		hi = lo + sort.Search(hi-lo, func(k int) bool { return a[lo+k][d] > c })
		if lo < hi && len(a[lo]) == d+1 { // the shortest sorts first
			best = d + 1
			lo++
		}
	}
	return best
}

// appendSegment encodes text that contains no added token; atStart says
// whether it begins the text (Metaspace's prepend_scheme "first" prepends
// "▁" to that segment only).
func (t *Tokenizer) appendSegment(dst []int, s string, atStart bool) []int {
	if s == "" {
		return dst
	}
	s = t.normalize(s)
	if t.sp != nil {
		return t.sp.appendSegment(t, dst, s, atStart)
	}
	for i := 0; i < len(s); {
		j := t.split.next(s, i)
		dst = t.appendWord(dst, s[i:j])
		i = j
	}
	return dst
}

// normalize applies tokenizer.json's normalizers to a segment.
func (t *Tokenizer) normalize(s string) string {
	for _, n := range t.normalizers {
		s = n(s)
	}
	return s
}

// appendWord runs BPE on one pre-tokenized piece.
func (t *Tokenizer) appendWord(dst []int, w string) []int {
	if len(w) == 1 && t.sp == nil {
		if id := t.byteIDs[w[0]]; id >= 0 {
			dst = append(dst, int(id))
		}
		return dst
	}
	if t.ignoreMerges {
		if id, ok := t.rawToID[w]; ok {
			return append(dst, int(id))
		}
	}
	if ids, ok := t.cache.get(w); ok {
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		return dst
	}
	ids := t.bpe(w)
	t.cache.put(w, ids)
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpe spells w as its initial symbols (bytes in the byte-level layout,
// characters in the SentencePiece-style one) and merges them.
func (t *Tokenizer) bpe(w string) []int32 {
	if t.sp != nil {
		return t.merge(t.sp.symbols(t, w))
	}
	syms := make([]int32, 0, len(w))
	for i := 0; i < len(w); i++ {
		if id := t.byteIDs[w[i]]; id >= 0 {
			syms = append(syms, id)
		}
	}
	return t.merge(syms)
}

// merge merges symbols, always applying the lowest-ranked merge present
// (the leftmost among equals) until none applies, as HF's BPE model does.
func (t *Tokenizer) merge(syms []int32) []int32 {
	if len(syms) > 256 {
		return t.bpeLong(syms)
	}
	for len(syms) > 1 {
		best, bestAt := uint64(1<<64-1), -1
		for i := 0; i+1 < len(syms); i++ {
			if m, ok := t.merges[pairKey(syms[i], syms[i+1])]; ok && m < best {
				best, bestAt = m, i
			}
		}
		if bestAt < 0 {
			break
		}
		syms[bestAt] = int32(uint32(best))
		syms = append(syms[:bestAt+1], syms[bestAt+2:]...)
	}
	return syms
}

// wordCache remembers BPE results per word. It is split into shards, each
// with its own lock, and a shard is emptied when it fills up, which bounds
// memory on adversarial input.
type wordCache struct {
	seed   maphash.Seed
	once   sync.Once
	shards [64]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	cacheShardCap  = 4096
	cacheMaxKeyLen = 128
)

func (c *wordCache) shard(w string) *cacheShard {
	c.once.Do(func() { c.seed = maphash.MakeSeed() })
	return &c.shards[maphash.String(c.seed, w)%uint64(len(c.shards))]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	if len(w) > cacheMaxKeyLen {
		return nil, false
	}
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[w]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) > cacheMaxKeyLen {
		return
	}
	s := c.shard(w)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardCap {
		s.m = make(map[string][]int32, 256)
	}
	s.m[strings.Clone(w)] = ids
	s.mu.Unlock()
}

// Decode turns ids back into text as HF's tokenizers library does
// (Tokenizer.decode): added tokens are written as their content (special ones
// dropped when skipSpecial), the runs between them go through the ByteLevel
// decoder (a SentencePiece-style tokenizer's decoder chain: spm.go), and
// unknown ids are skipped. It does not apply clean_up_tokenization_spaces;
// DecodeHF does.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	if t.sp != nil {
		return t.sp.decode(t, ids, skipSpecial)
	}
	out := make([]byte, 0, 4*len(ids))
	var chunk []byte
	for _, id := range ids {
		if a, ok := t.addedByID[id]; ok {
			if skipSpecial && a.special {
				continue
			}
			out = appendLossy(out, chunk)
			chunk = chunk[:0]
			out = append(out, a.content...)
			continue
		}
		if id >= 0 && id < len(t.idToBytes) && t.idToBytes[id] != nil {
			chunk = append(chunk, t.idToBytes[id]...)
		}
	}
	out = appendLossy(out, chunk)
	return string(out)
}

// DecodeHF is transformers' tokenizer.decode(ids, skip_special_tokens=skipSpecial):
// Decode, then clean_up_tokenization_spaces when tokenizer_config.json asks for it.
func (t *Tokenizer) DecodeHF(ids []int, skipSpecial bool) string {
	s := t.Decode(ids, skipSpecial)
	if t.cleanUp {
		s = CleanUpTokenizationSpaces(s)
	}
	return s
}

// CleanUpTokenizationSpaces is transformers' clean_up_tokenization: it removes
// the space before some punctuation and English contractions, in this order.
func CleanUpTokenizationSpaces(s string) string {
	for _, r := range [][2]string{
		{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}
