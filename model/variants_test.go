package model

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/sysmem"
)

// testModels returns the two fixture models when MEAZO_SHARED is set, and
// always random tiny Llama and Qwen3 models, one with every projection
// bias, and the committed OPT fixtures (pre- and post-norm).
func testModels(t *testing.T) map[string]*Model {
	t.Helper()
	out := map[string]*Model{}
	configs := map[string]*Config{"random-llama-attention-mlp-bias": biasConfigs()["llama-attention-mlp-bias"]}
	for _, arch := range []string{"LlamaForCausalLM", "Qwen3ForCausalLM"} {
		configs["random-"+arch] = tinyConfig(arch)
	}
	for name, c := range configs {
		m, err := NewRandom(c, 3, 0.3)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	for _, name := range []string{"opt-tiny", "opt-tiny-postnorm"} {
		m, err := Load(filepath.Join("testdata", "opt", name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	if root := os.Getenv("MEAZO_SHARED"); root != "" {
		for _, name := range tinyModels {
			m, err := Load(filepath.Join(root, "fixtures", "models", name))
			if err != nil {
				t.Fatal(err)
			}
			out[name] = m
		}
	}
	return out
}

// skipNarrowEmbeddings skips a prompt-tuning test on a model whose
// embeddings are narrower than its hidden size (OPT-350m's shape), which
// prompt tuning refuses.
func skipNarrowEmbeddings(t *testing.T, m *Model) {
	if m.WordEmbedDim != 0 && m.WordEmbedDim != m.HiddenSize {
		t.Skip("prompt tuning needs embeddings as wide as the hidden size")
	}
}

// randomAdapter makes a LoRA adapter of rank r on every projection of m's
// layers (the paper's q_proj and v_proj, and the rest: o_proj and
// down_proj change how a layer's output reaches the residual stream).
func randomAdapter(m *Model, r int, rng *rand.Rand) *Adapter {
	mk := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.2)
		}
		return v
	}
	a := &Adapter{Layers: make([]LayerAdapter, m.NumLayers)}
	for l := range a.Layers {
		for _, p := range m.Projections() {
			*a.Layers[l].Slot(p.Proj) = &LoRA{R: r, A: mk(r * p.In), B: mk(p.Out * r), Scale: 2}
		}
	}
	return a
}

// testBatch is a right-padded batch of 3 sequences with some labels masked.
func testBatch(m *Model, rng *rand.Rand) (Input, []int) {
	b, t := 3, 9
	lengths := []int{9, 6, 4}
	in := Input{B: b, T: t, Tokens: make([]int, b*t), Mask: make([]int, b*t)}
	labels := make([]int, b*t)
	for s := 0; s < b; s++ {
		for i := 0; i < t; i++ {
			r := s*t + i
			labels[r] = -100
			if i < lengths[s] {
				in.Tokens[r], in.Mask[r] = rng.IntN(m.VocabSize), 1
				if i >= 2 {
					labels[r] = in.Tokens[r]
				}
			}
		}
	}
	return in, labels
}

// alone computes one variant's loss by the plain Forward path.
func alone(t *testing.T, m *Model, in Input, labels []int, a *Adapter) float64 {
	t.Helper()
	saved := m.Adapter
	m.Adapter = a
	defer func() { m.Adapter = saved }()
	out, err := m.Forward(in, Options{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return out.Loss
}

func TestLossesEqualSeparateForwards(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			in, labels := testBatch(m, rng)
			for _, k := range []int{2, 8} { // q = 1 and q = 4 central differences
				var variants []Variant
				for range k {
					variants = append(variants, Variant{Adapter: randomAdapter(m, 4, rng)})
				}
				got, stats, err := m.Losses(in, labels, Variant{}, variants)
				if err != nil {
					t.Fatal(err)
				}
				if stats.LayerEvals != k*m.NumLayers {
					t.Errorf("%d layer evaluations, want %d", stats.LayerEvals, k*m.NumLayers)
				}
				for i, v := range variants {
					if want := alone(t, m, in, labels, v.Adapter); got[i] != want {
						t.Errorf("K=%d variant %d: batched loss %.17g, alone %.17g", k, i, got[i], want)
					}
				}
			}
		})
	}
}

// TestPrefixCaching perturbs one layer's adapter per variant and checks
// that starting the variant at that layer from the base pass's hidden state
// gives exactly the loss of the full computation, with the layer count of
// the paper's formula.
func TestPrefixCaching(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			in, labels := testBatch(m, rng)
			base := randomAdapter(m, 4, rng)
			q := 2
			var cached, full []Variant
			for l := 0; l < m.NumLayers; l++ {
				for range 2 * q {
					pert := &Adapter{Layers: append([]LayerAdapter(nil), base.Layers...)}
					pert.Layers[l] = randomAdapter(m, 4, rng).Layers[l]
					cached = append(cached, Variant{Adapter: pert, From: l})
					full = append(full, Variant{Adapter: pert})
				}
			}
			got, stats, err := m.Losses(in, labels, Variant{Adapter: base}, cached)
			if err != nil {
				t.Fatal(err)
			}
			want, fullStats, err := m.Losses(in, labels, Variant{Adapter: base}, full)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("variant %d (layer %d): cached %.17g, uncached %.17g", i, cached[i].From, got[i], want[i])
				}
			}
			// Paper (docs/ALGORITHMS.md): (p-1) + q·Σ_j 2(p-j) = pq(p+1) + p - 1, against 2qp² uncached.
			p := m.NumLayers
			if wantEvals := p*q*(p+1) + p - 1; stats.LayerEvals != wantEvals {
				t.Errorf("cached: %d layer evaluations, formula says %d", stats.LayerEvals, wantEvals)
			}
			if fullStats.LayerEvals != 2*q*p*p {
				t.Errorf("uncached: %d layer evaluations, want 2qp² = %d", fullStats.LayerEvals, 2*q*p*p)
			}
			// A variant identical to the base (From = NumLayers) gets the base loss.
			clean, _, err := m.Losses(in, labels, Variant{Adapter: base}, []Variant{{Adapter: base, From: p}})
			if err != nil {
				t.Fatal(err)
			}
			if w := alone(t, m, in, labels, base); clean[0] != w {
				t.Errorf("clean variant: %.17g, plain forward %.17g", clean[0], w)
			}
		})
	}
}

// TestPromptVariants checks prompt tuning's virtual tokens against the plain
// forward of a batch whose first tokens are real tokens with those embeddings.
func TestPromptVariants(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			skipNarrowEmbeddings(t, m)
			rng := rand.New(rand.NewPCG(7, 8))
			in, labels := testBatch(m, rng)
			nv := 3
			var variants []Variant
			var prefixes [][]int
			for range 4 {
				ids := []int{rng.IntN(m.VocabSize), rng.IntN(m.VocabSize), rng.IntN(m.VocabSize)}
				prompt := make([]float32, nv*m.HiddenSize)
				for i, id := range ids {
					m.EmbeddingRow(prompt[i*m.HiddenSize:(i+1)*m.HiddenSize], id)
				}
				variants = append(variants, Variant{Prompt: prompt})
				prefixes = append(prefixes, ids)
			}
			got, _, err := m.Losses(in, labels, Variant{Prompt: variants[0].Prompt}, variants)
			if err != nil {
				t.Fatal(err)
			}
			for k, ids := range prefixes {
				// The same sequences with the virtual tokens as real tokens in front.
				t2 := in.T + nv
				ex := Input{B: in.B, T: t2, Tokens: make([]int, in.B*t2), Mask: make([]int, in.B*t2)}
				exLabels := make([]int, in.B*t2)
				for s := 0; s < in.B; s++ {
					for i := 0; i < t2; i++ {
						r := s*t2 + i
						if i < nv {
							ex.Tokens[r], ex.Mask[r], exLabels[r] = ids[i], 1, -100
						} else {
							src := s*in.T + i - nv
							ex.Tokens[r], ex.Mask[r], exLabels[r] = in.Tokens[src], in.Mask[src], labels[src]
						}
					}
				}
				want := alone(t, m, ex, exLabels, nil)
				if math.Abs(got[k]-want) > 1e-12 {
					t.Errorf("prompt variant %d: %.17g, forward with real prefix tokens %.17g", k, got[k], want)
				}
			}
		})
	}
}

// TestGenerateWithPrompt checks that prompt-tuning virtual tokens go before
// every row in generation: with the prompt set to the embeddings of real
// tokens, generation equals generating from those tokens put in front, for a
// plain batch and a left-padded one.
func TestGenerateWithPrompt(t *testing.T) {
	for name, m := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			skipNarrowEmbeddings(t, m)
			rng := rand.New(rand.NewPCG(9, 10))
			ids := []int{rng.IntN(m.VocabSize), rng.IntN(m.VocabSize), rng.IntN(m.VocabSize)}
			prompt := make([]float32, len(ids)*m.HiddenSize)
			for i, id := range ids {
				m.EmbeddingRow(prompt[i*m.HiddenSize:(i+1)*m.HiddenSize], id)
			}
			// Row 0 has 4 tokens, row 1 has 2 (left-padded with 2 pads).
			rows := [][]int{{5, 7, 11, 13}, {0, 0, 17, 19}}
			masks := [][]int{{1, 1, 1, 1}, {0, 0, 1, 1}}
			var in, ex Input
			in = Input{B: 2, T: 4}
			ex = Input{B: 2, T: 7}
			for r := range rows {
				in.Tokens = append(in.Tokens, rows[r]...)
				in.Mask = append(in.Mask, masks[r]...)
				ex.Tokens = append(append(ex.Tokens, ids...), rows[r]...)
				ex.Mask = append(append(ex.Mask, 1, 1, 1), masks[r]...)
			}
			opts := GenerateOptions{MaxNewTokens: 6, StopIDs: []int{}}
			want, err := m.Generate(ex, opts)
			if err != nil {
				t.Fatal(err)
			}
			m.Prompt = prompt
			defer func() { m.Prompt = nil }()
			got, err := m.Generate(in, opts)
			if err != nil {
				t.Fatal(err)
			}
			for r := range want {
				if !slices.Equal(got[r], want[r]) {
					t.Errorf("row %d: with prompt %v, with the tokens in front %v", r, got[r], want[r])
				}
			}
		})
	}
}

// TestGenerateRefusesACacheBeyondMemory: a generation length whose
// key/value cache cannot fit in the machine is an error that says so, not
// a process killed by the runtime ("fatal error: runtime: out of memory").
func TestGenerateRefusesACacheBeyondMemory(t *testing.T) {
	m, err := NewRandom(tinyConfig("Qwen3ForCausalLM"), 3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	// 2 sequences × 10 positions: the mask 160 bytes, the CPU's keys and
	// values 2·4·layers·2·10·kvHeads·headDim.
	kv := 2 * 4 * len(m.Layers) * 2 * 10 * m.NumKVHeads * m.HeadDim
	for _, c := range []struct {
		total uint64
		ok    bool
	}{{0, true}, {uint64(160 + kv), true}, {uint64(160 + kv - 1), false}} {
		err := m.checkCacheMemory(2, 4, 6, c.total)
		if (err == nil) != c.ok {
			t.Errorf("total %d: %v, want ok %v", c.total, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "max_new_tokens 6: the key/value cache of 2 sequences of 4 prompt positions and 6 new ones needs") {
			t.Errorf("total %d: %v", c.total, err)
		}
	}
	if sysmem.Total() == 0 {
		t.Skip("the machine's memory cannot be read here")
	}
	in := Input{B: 1, T: 2, Tokens: []int{1, 2}}
	for _, n := range []int{1 << 40, math.MaxInt} {
		if _, err := m.Generate(in, GenerateOptions{MaxNewTokens: n}); err == nil || !strings.Contains(err.Error(), "more than this machine's") {
			t.Errorf("MaxNewTokens %d: %v, want it refused", n, err)
		}
	}
}
