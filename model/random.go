package model

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/safetensors"
)

// randomLoader makes up weights: norms near 1 and matrices uniform with
// standard deviation std. Each tensor is cut into fixed chunks of
// randomChunk values, each with its own generator seeded by (seed, name,
// chunk), so that any subset of tensors is reproducible and the chunks can be
// filled in parallel with the same result for any number of threads. With
// keep, every tensor gets its own slice, which the caller may keep (to
// write out as a checkpoint).
//
// Without keep, the layers' matrices are made in one reused buffer: build
// packs each matrix (a copy) and drops its float32 values, so reusing the
// buffer saves the page faults and the resident memory of a fresh copy per
// matrix. The vocabulary-sized matrices get their own buffer, which the
// garbage collector frees: holding one that size through the build would
// raise the peak memory.
func randomLoader(seed uint64, std float64, keep bool) weightLoader {
	var reuse []float32
	return func(name string, shape []int) ([]float32, error) {
		n := numElements(shape)
		var v []float32
		if !keep && len(shape) == 2 && n <= maxReuse {
			if cap(reuse) < n {
				reuse = make([]float32, n)
			}
			v = reuse[:n]
		} else {
			v = make([]float32, n)
		}
		newRandomTensor(seed, std, name).fill(v, 0)
		return v, nil
	}
}

// randomTensor draws one tensor's random values, chunk by chunk.
type randomTensor struct {
	seed, stream uint64
	center, a    float32 // values uniform on [center−a, center+a)
}

// newRandomTensor is the named tensor's generator: norm weights 1 ± 0.1,
// matrices uniform on [-a, a] with standard deviation a/√3 = std.
func newRandomTensor(seed uint64, std float64, name string) randomTensor {
	h := fnv.New64a()
	h.Write([]byte(name))
	r := randomTensor{seed: seed, stream: h.Sum64(), a: float32(std * math.Sqrt(3))}
	if isNormWeight(name) {
		r.center, r.a = 1, 0.1
	}
	return r
}

// fill writes into v the values from element first·randomChunk on (a run
// of whole chunks, the last one maybe cut short), the chunks in parallel.
func (r randomTensor) fill(v []float32, first int) {
	parallel.For((len(v)+randomChunk-1)/randomChunk, 0, func(c int) {
		g := rand.NewPCG(r.seed+uint64(first+c)*0x9e3779b97f4a7c15, r.stream)
		chunk := v[c*randomChunk : min(len(v), (c+1)*randomChunk)]
		for i := 0; i < len(chunk); i += 2 {
			// Two uniform values in [-1, 1) from the top and bottom 24
			// bits of one 64-bit draw.
			u := g.Uint64()
			chunk[i] = r.center + r.a*(float32(u>>40)*0x1p-23-1)
			if i+1 < len(chunk) {
				chunk[i+1] = r.center + r.a*(float32(u&(1<<24-1))*0x1p-23-1)
			}
		}
	})
}

// write writes the tensor's n values to w as dtype (F32, or BF16 rounded
// as a BF16 checkpoint's are), a few chunks at a time: a model of any size
// is written in a few megabytes of memory.
func (r randomTensor) write(w io.Writer, n int, dtype safetensors.Dtype) error {
	v := make([]float32, min(n, writeChunks*randomChunk))
	b := make([]byte, dtype.Size()*len(v))
	for done := 0; done < n; done += len(v) {
		v = v[:min(len(v), n-done)]
		r.fill(v, done/randomChunk)
		m := safetensors.Encode(b, v, dtype)
		if _, err := w.Write(b[:m]); err != nil {
			return err
		}
	}
	return nil
}

// numElements is the number of elements of a shape.
func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// isNormWeight tells a normalisation's scale by its HF name: the decoders'
// "…norm.weight" ("input_layernorm.weight", OPT's "final_layer_norm.weight")
// and the ViT's "…layernorm_before.weight" and "…layernorm_after.weight".
func isNormWeight(name string) bool {
	return strings.HasSuffix(name, "norm.weight") ||
		strings.HasSuffix(name, "layernorm_before.weight") || strings.HasSuffix(name, "layernorm_after.weight")
}

const (
	randomChunk = 1 << 16 // values drawn from one generator
	writeChunks = 16      // chunks a random tensor is written in at a time
	maxReuse    = 1 << 25 // largest matrix made in the reused buffer (128 MiB)
)

// NewRandom builds a model with random weights from a config, for
// benchmarks at full size without downloading a checkpoint.
func NewRandom(c *Config, seed uint64, std float64) (*Model, error) {
	return NewRandomWith(c, seed, std, LoadOptions{})
}

// NewRandomWith is NewRandom on the backend the options name (the weights
// are drawn on the host and uploaded as a checkpoint's would be). With
// BF16Weights the values are rounded to bfloat16, as a BF16 checkpoint's
// are (the published Llama-3.2-1B and Qwen3-0.6B), and the matrices kept
// in bfloat16, as LoadWith keeps such a checkpoint's.
func NewRandomWith(c *Config, seed uint64, std float64, opts LoadOptions) (*Model, error) {
	load := randomLoader(seed, std, false)
	if opts.BF16Weights {
		load = bf16Loader(load) // every value rounded to bfloat16, as a BF16 checkpoint's
	}
	return FromValues(c, load, opts)
}

// bf16Loader rounds what load gives to bfloat16 as a BF16 checkpoint
// stores it, keeping the values in float32.
func bf16Loader(load weightLoader) weightLoader {
	return func(name string, shape []int) ([]float32, error) {
		v, err := load(name, shape)
		parallel.For((len(v)+randomChunk-1)/randomChunk, 0, func(c int) {
			for i := c * randomChunk; i < min(len(v), (c+1)*randomChunk); i++ {
				v[i] = safetensors.RoundBF16(v[i])
			}
		})
		return v, err
	}
}

// WriteRandom writes a random model in HF format (config.json and an F32
// model.safetensors without lm_head.weight when tied, as save_pretrained
// does) with the values NewRandom gives. It holds none of the model in
// memory: each tensor is drawn as it is written.
func WriteRandom(dir string, c *Config, seed uint64, std float64) error {
	return writeRandom(dir, c, seed, std, safetensors.F32)
}

// WriteRandomBF16 is WriteRandom with every tensor stored as BF16, as the
// published checkpoints are: NewRandomWith's values with BF16Weights.
func WriteRandomBF16(dir string, c *Config, seed uint64, std float64) error {
	return writeRandom(dir, c, seed, std, safetensors.BF16)
}

func writeRandom(dir string, c *Config, seed uint64, std float64, dtype safetensors.Dtype) error {
	var tensors []safetensors.Tensor
	err := listTensors(c, func(name string, shape []int) {
		r, n := newRandomTensor(seed, std, name), numElements(shape)
		tensors = append(tensors, safetensors.Tensor{Name: name, Dtype: dtype, Shape: shape,
			Produce: func(w io.Writer) error { return r.write(w, n, dtype) }})
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg, err := c.marshalHF(map[safetensors.Dtype]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16"}[dtype])
	if err != nil {
		return err
	}
	// The weights first, config.json last: a write stopped between them
	// (Ctrl-C) leaves no config.json, which would make the directory look
	// like a model and a second random-model refuse it.
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), tensors, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), cfg)
}

// MarshalHF renders the config as an HF config.json (of float32 weights).
func (c *Config) MarshalHF() ([]byte, error) { return c.marshalHF("float32") }

// pyFloat is x as Python's json writes a float: with a ".0" when it is
// whole (32.0, not 32), which transformers checks in some keys (a
// rope_scaling factor written 32 draws "must be a float").
func pyFloat(x float64) json.Number {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") { // not a fraction, an exponent, Inf or NaN
		s += ".0"
	}
	return json.Number(s)
}

// marshalHF renders the config as an HF config.json whose torch_dtype is dtype.
func (c *Config) marshalHF(dtype string) ([]byte, error) {
	if c.IsOPT() {
		return c.marshalOPT(dtype)
	}
	j := map[string]any{
		"architectures":           []string{c.Architecture},
		"vocab_size":              c.VocabSize,
		"hidden_size":             c.HiddenSize,
		"intermediate_size":       c.IntermediateSize,
		"num_hidden_layers":       c.NumLayers,
		"num_attention_heads":     c.NumHeads,
		"num_key_value_heads":     c.NumKVHeads,
		"head_dim":                c.HeadDim,
		"rms_norm_eps":            json.Number(strconv.FormatFloat(float64(c.RMSNormEps), 'g', -1, 32)),
		"rope_theta":              pyFloat(c.RopeTheta),
		"tie_word_embeddings":     c.TieEmbeddings,
		"hidden_act":              "silu",
		"attention_bias":          c.OBias,
		"torch_dtype":             dtype,
		"max_position_embeddings": 131072,
	}
	switch c.Architecture {
	case "LlamaForCausalLM":
		j["model_type"] = "llama"
		j["mlp_bias"] = c.MLPBias
	case "Qwen2ForCausalLM": // q/k/v biases always, and no attention_bias key (Qwen2Config has none)
		delete(j, "attention_bias")
		j["model_type"] = "qwen2"
		j["max_position_embeddings"] = 32768
		j["sliding_window"] = nil
		j["use_sliding_window"] = false
		j["max_window_layers"] = c.NumLayers
	case "MistralForCausalLM": // no bias keys (MistralConfig has none)
		delete(j, "attention_bias")
		j["model_type"] = "mistral"
		j["max_position_embeddings"] = 32768
		j["sliding_window"] = nil
	case "Qwen3ForCausalLM":
		j["model_type"] = "qwen3"
		j["max_position_embeddings"] = 40960
		j["sliding_window"] = nil
		j["use_sliding_window"] = false
	case "Ministral3ForCausalLM", "Mistral3ForConditionalGeneration":
		// The language model alone, as transformers' Ministral3ForCausalLM
		// (the weights under model.*: a random model has no vision tower);
		// its keys are set below.
	default:
		return nil, fmt.Errorf("unsupported architecture %q", c.Architecture)
	}
	if c.SlidingWindow > 0 {
		j["sliding_window"] = c.SlidingWindow
	}
	if c.BOSTokenID >= 0 {
		j["bos_token_id"] = c.BOSTokenID
	}
	switch len(c.EOSTokenIDs) {
	case 0:
	case 1:
		j["eos_token_id"] = c.EOSTokenIDs[0]
	default:
		j["eos_token_id"] = c.EOSTokenIDs
	}
	if s := c.RopeScaling; s != nil {
		j["rope_scaling"] = map[string]any{
			"rope_type": "llama3", "factor": pyFloat(s.Factor), "low_freq_factor": pyFloat(s.LowFreqFactor),
			"high_freq_factor": pyFloat(s.HighFreqFactor), "original_max_position_embeddings": s.OriginalMaxPositionEmbeddings,
		}
	} else {
		j["rope_scaling"] = nil
	}
	if c.Architecture == "Ministral3ForCausalLM" || c.Architecture == "Mistral3ForConditionalGeneration" {
		ministral3JSON(j, c)
	}
	return json.MarshalIndent(j, "", "  ")
}
