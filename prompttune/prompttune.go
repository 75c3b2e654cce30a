// Package prompttune is PEFT prompt tuning: n trainable virtual-token
// embeddings put before every sequence, saved and loaded in PEFT's format.
// It is the adapter of a run with adapter.kind prompt: the ZO engine
// perturbs and updates the prompt, one parameter group of n×hidden values,
// while the model stays frozen. The files are PEFT's so that PEFT loads what
// a run trained, and a run can start from a prompt PEFT saved.
package prompttune

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/jsonkeys"
	"github.com/meazo-go/meazo/internal/peftweights"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/safetensors"
)

// Prompt holds the virtual-token embeddings [n][hidden] as one flat
// parameter group (the canonical order: row-major).
type Prompt struct {
	N, Hidden int
	InitText  string // the TEXT initialisation, if used
	Tokenizer string // tokenizer_name_or_path written to adapter_config.json
	BaseModel string // base_model_name_or_path
	params    [][]float32
}

// Encoder is what TEXT initialisation needs from a tokenizer.
type Encoder interface {
	Encode(text string, addSpecial bool) []int
}

// FromText initialises n virtual tokens from a text as PEFT's TEXT init does:
// the text is tokenized with special tokens, the ids are repeated until there
// are at least n, truncated to n, and their embedding rows copied in float32.
func FromText(m *model.Model, tok Encoder, n int, text string) (*Prompt, error) {
	if n <= 0 {
		return nil, fmt.Errorf("prompttune: number of virtual tokens must be positive, got %d", n)
	}
	if err := m.PromptTunable(); err != nil {
		return nil, fmt.Errorf("prompttune: %w", err)
	}
	ids := tok.Encode(text, true)
	if len(ids) == 0 {
		return nil, fmt.Errorf("prompttune: init text %q has no tokens", text)
	}
	p := &Prompt{N: n, Hidden: m.HiddenSize, InitText: text, params: [][]float32{make([]float32, n*m.HiddenSize)}}
	for i := 0; i < n; i++ {
		id := ids[i%len(ids)]
		if id < 0 || id >= m.VocabSize {
			return nil, fmt.Errorf("prompttune: init token id %d is outside the model's vocabulary (%d)", id, m.VocabSize)
		}
		m.EmbeddingRow(p.params[0][i*m.HiddenSize:(i+1)*m.HiddenSize], id)
	}
	return p, nil
}

// Random initialises n virtual tokens from a seeded N(0, 1), the
// distribution of PEFT's RANDOM init (torch's nn.Embedding default); the
// random stream is ours, not torch's.
func Random(m *model.Model, n int, seed uint64) (*Prompt, error) {
	if n <= 0 {
		return nil, fmt.Errorf("prompttune: number of virtual tokens must be positive, got %d", n)
	}
	if err := m.PromptTunable(); err != nil {
		return nil, fmt.Errorf("prompttune: %w", err)
	}
	r := rand.New(rand.NewPCG(seed, 0x9707))
	p := &Prompt{N: n, Hidden: m.HiddenSize, params: [][]float32{make([]float32, n*m.HiddenSize)}}
	for i := range p.params[0] {
		p.params[0][i] = float32(r.NormFloat64())
	}
	return p, nil
}

// Params returns the single parameter group (the prompt's own storage).
func (p *Prompt) Params() [][]float32 { return p.params }

// Count returns the number of trainable parameters.
func (p *Prompt) Count() int { return len(p.params[0]) }

// Attach makes m put the prompt before every sequence in Forward and Generate.
func (p *Prompt) Attach(m *model.Model) { m.Prompt = p.params[0] }

// Save writes adapter_model.safetensors (one tensor prompt_embeddings
// [n, hidden]) and adapter_config.json in PEFT's PROMPT_TUNING format.
func (p *Prompt) Save(dir string, m *model.Model) error { return p.SaveParams(dir, m, p.params) }

// SaveParams is Save for other embeddings of the same shape (one group).
func (p *Prompt) SaveParams(dir string, m *model.Model, params [][]float32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save prompt: %w", err)
	}
	t := safetensors.F32Tensor("prompt_embeddings", []int{p.N, p.Hidden}, params[0])
	if err := safetensors.WriteFile(filepath.Join(dir, peftweights.File), []safetensors.Tensor{t}, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	init := "RANDOM"
	if p.InitText != "" {
		init = "TEXT"
	}
	cfg := map[string]any{
		"peft_type":                  "PROMPT_TUNING",
		"task_type":                  "CAUSAL_LM",
		"num_virtual_tokens":         p.N,
		"token_dim":                  p.Hidden,
		"num_transformer_submodules": 1,
		"num_attention_heads":        m.NumHeads,
		"num_layers":                 m.NumLayers,
		"prompt_tuning_init":         init,
		"prompt_tuning_init_text":    nilIfEmpty(p.InitText),
		"tokenizer_name_or_path":     nilIfEmpty(p.Tokenizer),
		"base_model_name_or_path":    nilIfEmpty(p.BaseModel),
		"inference_mode":             true,
		// PEFT 0.15 writes these too, null for such an adapter.
		"auto_mapping":     nil,
		"revision":         nil,
		"tokenizer_kwargs": nil,
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "adapter_config.json"), b)
}

// configKeys are the keys of adapter_config.json that Load reads, and those
// of PEFT 0.15's PromptTuningConfig that do not change what a saved prompt
// computes (its initialisation, the base model's revision, the shape keys
// of prefix tuning). Any other key set to something is refused.
var configKeys = map[string]bool{
	"peft_type": true, "num_virtual_tokens": true, "token_dim": true, "prompt_tuning_init_text": true,
	"tokenizer_name_or_path": true, "base_model_name_or_path": true, "num_transformer_submodules": true,
	"task_type": true, "inference_mode": true, "revision": true, "auto_mapping": true, "num_attention_heads": true,
	"num_layers": true, "prompt_tuning_init": true, "tokenizer_kwargs": true,
}

// Load reads a PEFT PROMPT_TUNING adapter for m.
func Load(dir string, m *model.Model) (*Prompt, error) {
	if err := m.PromptTunable(); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", dir, err)
	}
	cfgPath := filepath.Join(dir, "adapter_config.json")
	b, err := inputfile.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("load prompt: %w", err)
	}
	var cfg struct {
		PeftType   string  `json:"peft_type"`
		N          int     `json:"num_virtual_tokens"`
		TokenDim   int     `json:"token_dim"`
		InitText   *string `json:"prompt_tuning_init_text"`
		Tokenizer  *string `json:"tokenizer_name_or_path"`
		BaseModel  *string `json:"base_model_name_or_path"`
		Submodules int     `json:"num_transformer_submodules"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("adapter config %s: invalid JSON: %w", cfgPath, err)
	}
	if key, v := jsonkeys.Unapplied(b, configKeys); key != "" {
		return nil, fmt.Errorf("adapter config %s: %s is %s, which this loader does not apply (the adapter would compute something else than its config says); remove the key if it was not meant to change anything", cfgPath, key, v)
	}
	switch {
	case cfg.PeftType != "PROMPT_TUNING":
		return nil, fmt.Errorf("adapter config %s: peft_type %q, want PROMPT_TUNING", cfgPath, cfg.PeftType)
	case cfg.TokenDim != m.HiddenSize:
		return nil, fmt.Errorf("adapter config %s: token_dim %d, the model's hidden size is %d", cfgPath, cfg.TokenDim, m.HiddenSize)
	case cfg.N <= 0:
		return nil, fmt.Errorf("adapter config %s: num_virtual_tokens must be positive", cfgPath)
	case cfg.Submodules > 1:
		return nil, fmt.Errorf("adapter config %s: num_transformer_submodules %d (encoder-decoder) is not supported", cfgPath, cfg.Submodules)
	}
	path := filepath.Join(dir, peftweights.File)
	f, err := peftweights.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("load prompt: %w", err)
	}
	defer f.Close()
	info, ok := f.Info("prompt_embeddings")
	switch {
	case !ok:
		return nil, fmt.Errorf("adapter %s: no tensor \"prompt_embeddings\" (a prompt-tuning adapter's one tensor, [num_virtual_tokens token_dim])", path)
	case len(info.Shape) != 2 || info.Shape[0] != cfg.N || info.Shape[1] != cfg.TokenDim:
		return nil, fmt.Errorf("adapter %s: tensor \"prompt_embeddings\" has shape %v, want [%d %d] (adapter_config.json's num_virtual_tokens and token_dim)", path, info.Shape, cfg.N, cfg.TokenDim)
	}
	v, err := f.Float32("prompt_embeddings")
	if err != nil {
		return nil, err
	}
	p := &Prompt{N: cfg.N, Hidden: cfg.TokenDim, params: [][]float32{v}}
	if cfg.InitText != nil {
		p.InitText = *cfg.InitText
	}
	if cfg.Tokenizer != nil {
		p.Tokenizer = *cfg.Tokenizer
	}
	if cfg.BaseModel != nil {
		p.BaseModel = *cfg.BaseModel
	}
	return p, nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
