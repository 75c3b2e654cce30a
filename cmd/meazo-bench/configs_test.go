package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/meazo-go/meazo/model"
)

// TestPublishedConfigs checks each built-in config against the published
// config.json kept in the shared fixtures (fixtures/models/full-configs),
// field by field as the model reads them.
func TestPublishedConfigs(t *testing.T) {
	shared := os.Getenv("MEAZO_SHARED")
	if shared == "" {
		t.Skip("MEAZO_SHARED not set: no published config.json to compare the built-in ones with")
	}
	for short, p := range publishedConfigs {
		got, err := benchConfig(short)
		if err != nil {
			t.Fatalf("%s: %v", short, err)
		}
		dir := filepath.Base(p.name)
		want, err := model.LoadConfig(filepath.Join(shared, "fixtures", "models", "full-configs", dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: built-in config %+v\ndiffers from %s's published one %+v", short, *got, p.name, *want)
		}
	}
}
