package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meazo-go/meazo/internal/fuzzguard"
	"github.com/meazo-go/meazo/rundir"
)

// FuzzVerifyManifest: a checkpoint's manifest.json as a stranger's disk may
// hold it (damaged, hand-edited, from another version) over a checkpoint of
// three files: verifyManifest returns an error or nil, never a panic, a hang
// or gigabytes (fuzzguard), and nil only for a manifest that lists exactly
// the checkpoint's files at their sizes. The seeds are the manifest the
// checkpoint's own writeManifest writes and damaged copies of it. (Its
// seeds run in every go test; make fuzz fuzzes it.)
func FuzzVerifyManifest(f *testing.F) {
	dir := f.TempDir()
	files := map[string]string{"adapter_model.safetensors": "weights", "state.json": `{"step": 3}`, "sub/optimizer.bin": ""}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := writeManifest(dir); err != nil {
		f.Fatal(err)
	}
	mpath := filepath.Join(dir, rundir.ManifestFile)
	good, err := os.ReadFile(mpath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version": 2, "files": [{"path": "../state.json", "size": 11}]}`))
	f.Add([]byte(`{"version": 1, "files": [{"path": "state.json", "size": 11, "sha256": "00"}]}`))
	f.Add([]byte(`{"version": 2, "files": [{"path": "state.json", "size": -1, "crc32c": ["x"]}, {"path": "state.json"}]}`))
	f.Add([]byte(`{"version": 2, "files": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		if err := os.WriteFile(mpath, manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		fuzzguard.Run(func() {
			if verifyManifest(dir) != nil {
				return
			}
			var m struct {
				Files []struct {
					Path string
					Size int64
				}
			}
			if err := json.Unmarshal(manifest, &m); err != nil {
				t.Fatalf("verifyManifest accepted a manifest that is not JSON: %v", err)
			}
			var listed []string
			for _, e := range m.Files {
				if body, ok := files[e.Path]; !ok || int64(len(body)) != e.Size {
					t.Fatalf("verifyManifest accepted an entry %q of %d bytes that the checkpoint does not hold", e.Path, e.Size)
				}
				listed = append(listed, e.Path)
			}
			slices.Sort(listed)
			if len(listed) != len(files) {
				t.Fatalf("verifyManifest accepted a manifest listing %v of the checkpoint's %d files", listed, len(files))
			}
		})
	})
}
