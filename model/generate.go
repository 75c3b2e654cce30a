package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/tensor"
)

// GenerateOptions controls greedy generation.
type GenerateOptions struct {
	MaxNewTokens int
	StopIDs      []int // a row stops after producing one of these; nil means the config's eos ids
	// OnStep, if set, receives each step's logits [B][vocab] at the last
	// position of every row (rows that already stopped included), after the
	// step's tokens were chosen. The slice is only valid during the call and
	// must not be changed (on the CPU it is the model's own buffer).
	OnStep func(step int, logits []float32)
}

// Generate continues every row of a left-padded batch with greedy decoding
// (argmax, first index on ties) using a KV cache, as HF's generate with
// do_sample=False. Without in.Positions, positions are generate()'s
// cumsum(mask)-1. It returns each row's new tokens, up to and including the
// stop token that ended it.
func (m *Model) Generate(in Input, opts GenerateOptions) (out [][]int, err error) {
	defer tensor.Recover(&err) // a device failure (out of memory, …) is an error
	if err := m.checkGenerate(in, opts); err != nil {
		return nil, err
	}
	stop := opts.StopIDs
	if stop == nil {
		stop = m.StopIDs()
	}
	if m.Prompt != nil {
		nv, err := m.promptLength(m.Prompt)
		if err != nil {
			return nil, err
		}
		in = withVirtualSlots(in, nv)
	}
	b, t := in.B, in.T
	mask, positions, next := generationPositions(in)

	if err := m.checkGeneration(positions, t, next, opts.MaxNewTokens); err != nil {
		return nil, err
	}
	be := m.Backend
	cache := m.newCache(b, t+opts.MaxNewTokens, false)
	defer be.FreeKVCache(cache.store)
	spans := oneSpan(b, m.Adapter)
	lastRows := make([]int, b)
	for r := range lastRows {
		lastRows[r] = r*t + t - 1
	}
	// The hidden state that predicts each row's next token: the prompt's last
	// position (the last layer finishes only those rows).
	last := m.step(cache, in.Tokens, mask, positions, t, spans, nil, lastRows)
	defer func() { be.Free(last) }()

	out = make([][]int, b)
	done := make([]bool, b)
	logits := be.Alloc(b * m.VocabSize)
	defer be.Free(logits)
	tokens, stepMask, stepPos := make([]int, b), ones(b), make([]int, b)
	filler := 0
	if len(stop) > 0 {
		filler = stop[0]
	}
	for s := 0; s < opts.MaxNewTokens; s++ {
		be.MatMul(logits, last, b, m.LMHead)
		if s == 0 {
			if err := finiteLogits(be.ToHost(logits), m.VocabSize); err != nil {
				return nil, err
			}
		}
		best := be.Argmax(logits, b, m.VocabSize)
		if opts.OnStep != nil {
			opts.OnStep(s, be.ToHost(logits))
		}
		allDone := true
		for r := 0; r < b; r++ {
			tok := filler // a stopped row is fed a filler token; its output is ignored
			if !done[r] {
				tok = best[r]
				out[r] = append(out[r], tok)
				done[r] = slices.Contains(stop, tok)
			}
			allDone = allDone && done[r]
			tokens[r], stepPos[r] = tok, next[r]
			next[r]++
		}
		if allDone || s == opts.MaxNewTokens-1 {
			break
		}
		be.Free(last)
		last = m.step(cache, tokens, stepMask, stepPos, 1, spans, nil, nil)
	}
	return out, nil
}

// checkGenerate refuses what Generate cannot run before anything is
// computed: a malformed batch, a right-padded row, no new tokens, a stop
// id outside the vocabulary (the first is fed to rows that have stopped),
// an adapter of another shape.
func (m *Model) checkGenerate(in Input, opts GenerateOptions) error {
	if err := m.checkInput(in); err != nil {
		return err
	}
	for r := 0; in.Mask != nil && r < in.B; r++ {
		if in.Mask[r*in.T+in.T-1] == 0 {
			// HF's generate only warns, and continues from the padding.
			return fmt.Errorf("row %d ends in padding (attention_mask 0 at its last position): a row is continued from its last position, so pad on the left", r)
		}
	}
	if opts.MaxNewTokens <= 0 {
		return fmt.Errorf("max_new_tokens must be positive, got %d", opts.MaxNewTokens)
	}
	for _, id := range opts.StopIDs {
		if id < 0 || id >= m.VocabSize {
			return fmt.Errorf("stop token id %d is outside the vocabulary [0, %d)", id, m.VocabSize)
		}
	}
	return m.checkAdapter(m.Adapter)
}

// checkGeneration refuses a generation of maxNew tokens after the batch's
// t positions that the model's positions or the machine's memory cannot
// hold.
func (m *Model) checkGeneration(positions []int, t int, next []int, maxNew int) error {
	if err := m.checkGenerationPositions(positions, t, next, maxNew); err != nil {
		return err
	}
	return m.checkCacheMemory(len(next), t, maxNew, sysmem.Total())
}

// checkCacheMemory refuses a generation whose key/value cache, made for
// t + maxNew positions of b sequences before the first token, needs more
// than the machine's memory (total bytes; 0: unknown, nothing checked):
// the cache's mask is host memory, and so are its keys and values on the
// CPU backend, and Go dies on an allocation past the machine ("fatal
// error: runtime: out of memory") where an error would have said why (a
// max_new_tokens typed with three zeros too many). A GPU's keys and values
// are not counted: its allocator returns an error when they do not fit.
func (m *Model) checkCacheMemory(b, t, maxNew int, total uint64) error {
	need := m.CacheHostBytes(b, float64(t)+float64(maxNew))
	if total == 0 || need <= float64(total) {
		return nil
	}
	seqs := fmt.Sprintf("%d sequences", b)
	if b == 1 {
		seqs = "1 sequence"
	}
	return fmt.Errorf("max_new_tokens %d: the key/value cache of %s of %d prompt positions and %d new ones needs %s, more than this machine's %s of memory",
		maxNew, seqs, t, maxNew, bytesize.String(int64(min(need, 1<<62))), bytesize.String(int64(min(float64(total), 1<<62))))
}

// CacheHostBytes is the host memory a generation's key/value cache of b
// sequences of the given number of positions (prompt and new tokens)
// takes: its mask and, on the CPU backend, its keys and values, float32.
// In float64: a mistyped length may exceed any int.
func (m *Model) CacheHostBytes(b int, positions float64) float64 {
	need := 8 * float64(b) * positions // the mask, an int a slot
	if m.Backend.Name() == "cpu" {
		need += 2 * 4 * float64(len(m.Layers)) * float64(b) * positions * float64(m.NumKVHeads*m.HeadDim)
	}
	return need
}

// generationPositions returns a generation batch's mask (all ones without
// in.Mask), its positions (in.Positions, or generate()'s cumsum(mask)-1 with
// padded slots at 1, as HF fills them) and the position of each row's next
// token (its real-token count, or one after its last given position).
func generationPositions(in Input) (mask, positions, next []int) {
	b, t := in.B, in.T
	mask = in.Mask
	if mask == nil {
		mask = ones(b * t)
	}
	positions = in.Positions
	next = make([]int, b)
	if positions == nil {
		positions = make([]int, b*t)
	}
	for r := 0; r < b; r++ {
		count := 0
		for i := 0; i < t; i++ {
			if mask[r*t+i] == 1 {
				count++
			}
			if in.Positions == nil {
				positions[r*t+i] = max(count-1, 0)
				if mask[r*t+i] == 0 {
					positions[r*t+i] = 1 // HF fills padded slots with 1
				}
			}
		}
		next[r] = count
		if in.Positions != nil {
			next[r] = in.Positions[r*t+t-1] + 1
		}
	}
	return mask, positions, next
}

// withVirtualSlots puts nv prompt-tuning slots before every row of a
// generation batch, before any left padding, as PEFT does (mask 1; step
// fills their embeddings). Positions: given ones are shifted by nv behind
// 0..nv-1; otherwise generate()'s cumsum(mask)-1 over the extended mask
// applies. PEFT itself drops position_ids, giving 0..nv+T-1 with pads
// counted; the cumsum form equals that for unpadded rows and, unlike it,
// does not depend on how much padding a row got (a decision recorded here
// because HF has no single answer for left-padded prompt tuning).
func withVirtualSlots(in Input, nv int) Input {
	t := nv + in.T
	out := Input{B: in.B, T: t, Tokens: make([]int, in.B*t), Mask: make([]int, in.B*t)}
	if in.Positions != nil {
		out.Positions = make([]int, in.B*t)
	}
	for s := 0; s < in.B; s++ {
		for i := 0; i < t; i++ {
			r := s*t + i
			if i < nv {
				out.Mask[r] = 1
				if out.Positions != nil {
					out.Positions[r] = i
				}
				continue
			}
			src := s*in.T + i - nv
			out.Tokens[r], out.Mask[r] = in.Tokens[src], 1
			if in.Mask != nil {
				out.Mask[r] = in.Mask[src]
			}
			if out.Positions != nil {
				out.Positions[r] = in.Positions[src] + nv
			}
		}
	}
	return out
}

// finiteLogits refuses the logits of a generation's first step (one row of
// width per sequence) if any is NaN or infinite: the model's weights or
// config then make its arithmetic meaningless, and greedy decoding would
// pick tokens from nothing. Later steps are not read back (on a GPU that
// would cost a transfer per token); a model that is finite on its prompt
// has not been seen to turn non-finite while decoding.
func finiteLogits(logits []float32, width int) error {
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return &nonFiniteLogitsError{fmt.Sprintf("the logits of sequence %d are not finite (%v at vocabulary entry %d): the model's weights or config.json hold values that make its arithmetic meaningless", i/width, v, i%width)}
		}
	}
	return nil
}

// ErrNonFiniteLogits is what Generate's error matches (errors.Is) when the
// logits of its first step are NaN or infinite (finiteLogits): a trainer
// that generates with perturbed parameters (train.objective f1) reads it
// as a loss that is not finite, the run diverging, not as a failure.
var ErrNonFiniteLogits = errors.New("model: the logits are not finite")

type nonFiniteLogitsError struct{ msg string }

func (e *nonFiniteLogitsError) Error() string        { return e.msg }
func (e *nonFiniteLogitsError) Is(target error) bool { return target == ErrNonFiniteLogits }

// checkGenerationPositions refuses a generation whose positions run past
// an OPT model's learned positions: the prompt's, or the last new token
// fed back (at next[r] + maxNew − 2).
func (m *Model) checkGenerationPositions(positions []int, t int, next []int, maxNew int) error {
	if err := m.checkPositions(positions, t); err != nil {
		return err
	}
	for r, p := range next {
		if last := p + maxNew - 2; m.IsOPT() && last >= m.MaxPositions {
			return fmt.Errorf("sequence %d: %d new tokens after its %d would reach position %d, past the model's %d learned positions (max_position_embeddings)",
				r, maxNew, p, last, m.MaxPositions)
		}
	}
	return nil
}
