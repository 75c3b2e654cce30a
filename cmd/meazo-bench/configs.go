package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/cli"
	"github.com/meazo-go/meazo/model"
)

// modelUsage documents -model of forward, zostep and fullstep.
var modelUsage = "a built-in published model, random weights: " + model.PublishedNames() +
	", or its hub id; or a config.json, or a model directory holding one"

// benchConfig resolves a -model flag: a built-in published model
// (model.LookupPublished: its name, hub id or short name), or a
// config.json, or a model directory holding one. A name that is none of
// them is a usage error that lists the built-in ones.
func benchConfig(name string) (*model.Config, error) {
	if p, ok := model.LookupPublished(name); ok {
		return p.Config()
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("-model %q is not built in (have %s) nor a config.json: %w", name, model.PublishedNames(), err))
	}
	if st.IsDir() {
		name = filepath.Join(name, "config.json")
	}
	return model.LoadConfig(name)
}
