package main

// The example config of Qwen2.5 (README.md, "Qwen2.5"): Qwen2.5-0.5B-Instruct,
// a Qwen2ForCausalLM (q/k/v biases, no q/k norm, a tied head), with LoRA on
// q_proj/v_proj and MEAZO at the paper's settings on SST-2, in its own chat
// template (whose default system prompt the task's system turn replaces).

// qwen25 is Qwen2.5-0.5B-Instruct, built in by name (model/published.go).
var qwen25 = modelSpec{"qwen25-05b-instruct", "models/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"}

// qwen25Comment says what the example is and how to get its files.
const qwen25Comment = `# Qwen2.5-0.5B-Instruct (Qwen2ForCausalLM: q/k/v biases, no q/k norm, a tied LM head; docs/MODELS.md), not a
# model of the paper: LoRA with MEAZO at the paper's SST-2 settings, the conversation in Qwen2.5's chat template.
#   hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir models/Qwen2.5-0.5B-Instruct
#   hf download --repo-type dataset stanfordnlp/sst2 --local-dir data/sst2
`

// addQwen25 adds the example config.
func addQwen25(files map[string]string) {
	files[qwen25.short+"_sst2_lora_meazo.yaml"] = qwen25Comment + config(qwen25, "sst2", "lora", "meazo", false)
}
