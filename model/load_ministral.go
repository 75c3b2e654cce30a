package model

import (
	"strings"

	"github.com/meazo-go/meazo/safetensors"
)

// multimodalNames maps the tensor names build asks for (a causal LM's:
// model.layers.…, lm_head.weight) to the checkpoint's. A
// Mistral3ForConditionalGeneration checkpoint keeps its language model
// under model.language_model.* with lm_head.weight at the top, as
// transformers 5 and convert_ministral3_weights_to_hf.py save it, or, as
// transformers 4.5x saved Mistral3 checkpoints, under
// language_model.model.* with language_model.lm_head.weight.
func multimodalNames(ck *safetensors.Checkpoint) func(string) string {
	model, head := "model.language_model.", "lm_head.weight"
	if _, ok := ck.Info("language_model.model.embed_tokens.weight"); ok {
		model, head = "language_model.model.", "language_model.lm_head.weight"
	}
	return func(n string) string {
		if n == "lm_head.weight" {
			return head
		}
		return model + strings.TrimPrefix(n, "model.")
	}
}

// notLanguageModel tells the multimodal checkpoint's tensors that are not
// the language model's (the vision tower, the multimodal projector), in
// either naming; the loader never reads their bytes.
func notLanguageModel(name string) bool {
	for _, p := range []string{"model.vision_tower.", "model.multi_modal_projector.", "vision_tower.", "multi_modal_projector."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
