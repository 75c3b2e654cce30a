package main

import "github.com/meazo-go/meazo/model"

// benchConfig resolves a -model flag: a built-in published model
// (model.LookupPublished: llama1b, qwen06b, Qwen3-8B, …), or a path to a
// config.json.
func benchConfig(name string) (*model.Config, error) {
	if p, ok := model.LookupPublished(name); ok {
		return p.Config()
	}
	return model.LoadConfig(name)
}
