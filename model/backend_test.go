package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/tensor"
)

// deviceBackend runs the CPU kernels behind the backend seam the way a GPU
// backend would look to the model: buffers and weights are its own types,
// FromHost and ToHost copy (an upload, a download), and it keeps account of
// the downloads and of the buffers, caches and weights alive. A model that
// gives bit-identical results on it and on tensor.CPU does all its
// arithmetic through the seam and relies on no sharing of memory between
// host and backend; one that leaves the live counts where they were frees
// what it allocates.
type deviceBackend struct {
	downloads int // ToHost calls
	live      map[*[]float32]bool
	weights   int // packed and not freed
	caches    int // KV caches not freed
	misuse    []string
}

func newDeviceBackend() *deviceBackend { return &deviceBackend{live: map[*[]float32]bool{}} }

// devBuf is a view of a buffer; root identifies the buffer for Free.
type devBuf struct {
	h    tensor.HostBuf
	root *[]float32
}

func (b devBuf) Len() int                    { return len(b.h) }
func (b devBuf) Slice(lo, hi int) tensor.Buf { return devBuf{b.h[lo:hi], nil} }

type devWeight struct{ w tensor.Weight }

func (w devWeight) Shape() (int, int) { return w.w.Shape() }

func dh(b tensor.Buf) tensor.Buf { return b.(devBuf).h }

var cpu = tensor.CPU

func (d *deviceBackend) newBuf(h []float32) tensor.Buf {
	root := &h
	d.live[root] = true
	return devBuf{h, root}
}

func (d *deviceBackend) Name() string                    { return "device-test" }
func (d *deviceBackend) Alloc(n int) tensor.Buf          { return d.newBuf(make([]float32, n)) }
func (d *deviceBackend) FromHost(s []float32) tensor.Buf { return d.newBuf(slices.Clone(s)) }
func (d *deviceBackend) ToHost(b tensor.Buf) []float32 {
	d.downloads++
	return slices.Clone(b.(devBuf).h)
}
func (d *deviceBackend) Free(bufs ...tensor.Buf) {
	for _, b := range bufs {
		r := b.(devBuf).root
		if r == nil || !d.live[r] {
			d.misuse = append(d.misuse, fmt.Sprintf("Free of a view or of a freed buffer (%d floats)", b.Len()))
			continue
		}
		delete(d.live, r)
	}
}
func (d *deviceBackend) FreeWeight(tensor.Weight) { d.weights-- }
func (d *deviceBackend) FreeKVCache(c tensor.KVCache) {
	d.caches--
}
func (d *deviceBackend) Pack(w []float32, n, k int, bf16 bool) tensor.Weight {
	d.weights++
	return devWeight{cpu.Pack(w, n, k, bf16)}
}
func (d *deviceBackend) Rows(dst tensor.Buf, w tensor.Weight, ids []int) {
	cpu.Rows(dh(dst), w.(devWeight).w, ids)
}
func (d *deviceBackend) Gather(dst, src tensor.Buf, width int, ids []int) {
	cpu.Gather(dh(dst), dh(src), width, ids)
}
func (d *deviceBackend) Copy(dst, src tensor.Buf) { cpu.Copy(dh(dst), dh(src)) }
func (d *deviceBackend) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	cpu.MatMul(dh(y), dh(x), rows, w.(devWeight).w)
}
func (d *deviceBackend) MatMulNT(y, x, b tensor.Buf, rows, n, k int) {
	cpu.MatMulNT(dh(y), dh(x), dh(b), rows, n, k)
}
func (d *deviceBackend) Add(y, x tensor.Buf)                  { cpu.Add(dh(y), dh(x)) }
func (d *deviceBackend) AddScaled(y, x tensor.Buf, s float32) { cpu.AddScaled(dh(y), dh(x), s) }
func (d *deviceBackend) RMSNorm(dst, x, w tensor.Buf, rows, n int, eps float32) {
	cpu.RMSNorm(dh(dst), dh(x), dh(w), rows, n, eps)
}
func (d *deviceBackend) SiLUMul(gate, up tensor.Buf) { cpu.SiLUMul(dh(gate), dh(up)) }
func (d *deviceBackend) RoPE(x tensor.Buf, rows, heads, hd int, cos, sin tensor.Buf, tableRows int) {
	cpu.RoPE(dh(x), rows, heads, hd, dh(cos), dh(sin), tableRows)
}
func (d *deviceBackend) NewKVCache(seqs, kvHeads, capacity, hd, layers int) tensor.KVCache {
	d.caches++
	return cpu.NewKVCache(seqs, kvHeads, capacity, hd, layers)
}
func (d *deviceBackend) Attention(out, q, k, v tensor.Buf, c tensor.KVCache, layer int, a tensor.AttentionArgs) {
	cpu.Attention(dh(out), dh(q), dh(k), dh(v), c, layer, a)
}
func (d *deviceBackend) CrossEntropy(logits tensor.Buf, width int, ids, targets []int) []float64 {
	return cpu.CrossEntropy(dh(logits), width, ids, targets)
}
func (d *deviceBackend) Argmax(x tensor.Buf, rows, width int) []int {
	return cpu.Argmax(dh(x), rows, width)
}

// TestBackendSeam runs forward, generation and batched variants on
// deviceBackend and on tensor.CPU: every number must be bit-identical,
// scoring (Losses, a loss-only Forward) must download nothing, and every call
// must free what it allocated.
func TestBackendSeam(t *testing.T) {
	dirs := map[string]string{}
	untied := tinyConfig("Qwen3ForCausalLM") // an untied LM head and a sliding window shorter than the batch
	untied.TieEmbeddings, untied.SlidingWindow = false, 4
	for name, c := range map[string]*Config{
		"random-llama": tinyConfig("LlamaForCausalLM"), "random-qwen3": tinyConfig("Qwen3ForCausalLM"), "random-qwen3-untied-window": untied,
	} {
		dir := t.TempDir()
		if _, err := WriteRandom(dir, c, 5, 0.3); err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
	}
	if root := os.Getenv("MEAZO_SHARED"); root != "" {
		for _, name := range tinyModels {
			dirs[name] = filepath.Join(root, "fixtures", "models", name)
		}
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			host, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			dev := newDeviceBackend()
			seam, err := LoadWith(dir, LoadOptions{Backend: dev})
			if err != nil {
				t.Fatal(err)
			}
			if seam.Backend.Name() != "device-test" || host.Backend.Name() != "cpu" {
				t.Fatalf("backends %q and %q", seam.Backend.Name(), host.Backend.Name())
			}
			if name == "random-qwen3-untied-window" && (seam.LMHead == seam.Embed || seam.SlidingWindow != 4) {
				t.Fatalf("the untied model loaded tied (%v) or with window %d", seam.LMHead == seam.Embed, seam.SlidingWindow)
			}
			// After load only the norms are alive; every call must leave it so.
			baseBufs, baseWeights := len(dev.live), dev.weights
			checkFreed := func(what string) {
				t.Helper()
				if len(dev.live) != baseBufs || dev.weights != baseWeights || dev.caches != 0 || len(dev.misuse) > 0 {
					t.Errorf("%s: %d buffers, %d weights, %d KV caches left alive (want %d, %d, 0); misuse: %v",
						what, len(dev.live), dev.weights, dev.caches, baseBufs, baseWeights, dev.misuse)
				}
			}
			rng := rand.New(rand.NewPCG(7, 8))
			in, labels := testBatch(host, rng)
			adapter := randomAdapter(host, 4, rng)
			prompt := make([]float32, 3*host.HiddenSize)
			for i := range prompt {
				prompt[i] = float32(rng.NormFloat64())
			}
			gen := Input{B: 2, T: 5, Tokens: make([]int, 10), Mask: []int{0, 0, 1, 1, 1, 1, 1, 1, 1, 1}}
			for i := range gen.Tokens {
				gen.Tokens[i] = rng.IntN(host.VocabSize)
			}

			// Plain forward with everything asked for, and greedy generation
			// of a left-padded batch, with an adapter and with prompt tuning.
			for _, c := range []struct {
				what    string
				adapter *Adapter
				prompt  []float32
			}{{"plain", nil, nil}, {"lora", adapter, nil}, {"prompt", nil, prompt}} {
				host.Adapter, seam.Adapter = c.adapter, c.adapter
				host.Prompt, seam.Prompt = c.prompt, c.prompt
				opts := Options{Logits: true, HiddenStates: true, Labels: labels}
				want, err := host.Forward(in, opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := seam.Forward(in, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Logits, want.Logits) || got.Loss != want.Loss || !slices.Equal(got.LossPerSeq, want.LossPerSeq) {
					t.Errorf("%s forward: logits or losses differ (loss %.17g vs %.17g)", c.what, got.Loss, want.Loss)
				}
				for i := range want.HiddenStates {
					if !slices.Equal(got.HiddenStates[i], want.HiddenStates[i]) {
						t.Errorf("%s forward: hidden state %d differs", c.what, i)
					}
				}
				checkFreed(c.what + " forward")
				before := dev.downloads
				if _, err := seam.Forward(in, Options{Labels: labels}); err != nil {
					t.Fatal(err)
				}
				if n := dev.downloads - before; n != 0 {
					t.Errorf("%s loss-only forward downloaded %d buffers, want 0", c.what, n)
				}
				checkFreed(c.what + " loss-only forward")

				var wantSteps, gotSteps []float32
				wantGen, err := host.Generate(gen, GenerateOptions{MaxNewTokens: 6, StopIDs: []int{}, OnStep: func(_ int, l []float32) { wantSteps = append(wantSteps, l...) }})
				if err != nil {
					t.Fatal(err)
				}
				gotGen, err := seam.Generate(gen, GenerateOptions{MaxNewTokens: 6, StopIDs: []int{}, OnStep: func(_ int, l []float32) { gotSteps = append(gotSteps, l...) }})
				if err != nil {
					t.Fatal(err)
				}
				for r := range wantGen {
					if !slices.Equal(gotGen[r], wantGen[r]) {
						t.Errorf("%s generation row %d: %v on the seam, %v on the CPU", c.what, r, gotGen[r], wantGen[r])
					}
				}
				if !slices.Equal(gotSteps, wantSteps) {
					t.Errorf("%s generation: step logits differ", c.what)
				}
				checkFreed(c.what + " generation")
			}
			host.Adapter, seam.Adapter, host.Prompt, seam.Prompt = nil, nil, nil, nil

			row, want := make([]float32, host.HiddenSize), make([]float32, host.HiddenSize)
			seam.EmbeddingRow(row, 5)
			host.EmbeddingRow(want, 5)
			if !slices.Equal(row, want) {
				t.Errorf("EmbeddingRow differs")
			}
			checkFreed("EmbeddingRow")

			// Batched variants with prefix caching: each variant perturbs one
			// layer's adapter and starts from the base pass at that layer.
			base := Variant{Adapter: randomAdapter(host, 4, rng)}
			var variants []Variant
			for l := range host.NumLayers {
				v := Variant{Adapter: &Adapter{Layers: slices.Clone(base.Adapter.Layers)}, From: l}
				v.Adapter.Layers[l] = randomAdapter(host, 4, rng).Layers[l]
				variants = append(variants, v)
			}
			variants = append(variants, Variant{Adapter: base.Adapter, From: host.NumLayers})
			wantL, _, err := host.Losses(in, labels, base, variants)
			if err != nil {
				t.Fatal(err)
			}
			before := dev.downloads
			gotL, _, err := seam.Losses(in, labels, base, variants)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gotL, wantL) {
				t.Errorf("Losses: %v on the seam, %v on the CPU", gotL, wantL)
			}
			if n := dev.downloads - before; n != 0 {
				t.Errorf("Losses downloaded %d buffers, want 0", n)
			}
			checkFreed("Losses")
		})
	}
}
