package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIsLeftover(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		want         bool
	}{
		{".config.yaml.tmp303374055", "config.yaml", true},
		{".adapter_model.safetensors.tmp-1713690421", "adapter_model.safetensors", true},
		{".config.yaml.tmp", "config.yaml", false},        // no random part
		{".config.yaml.tmpx1", "config.yaml", false},      // not CreateTemp's digits
		{".config.yaml.tmp12.bak", "config.yaml", false},  // something else after the digits
		{"config.yaml.tmp12", "config.yaml", false},       // not hidden
		{".summary.json.tmp12", "config.yaml", false},     // another target
		{".config.yaml.tmp-", "config.yaml", false},       // a dash only
		{".notes.config.yaml.tmp1", "config.yaml", false}, // the user's
	} {
		if got := IsLeftover(tc.name, tc.target); got != tc.want {
			t.Errorf("IsLeftover(%q, %q) = %v, want %v", tc.name, tc.target, got, tc.want)
		}
	}
}

// TestRemoveLeftovers: what a write killed before its rename leaves goes,
// the files themselves and anything else stay.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"config.yaml", ".config.yaml.tmp123", ".summary.json.tmp-9", "notes.txt", ".config.yaml.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveLeftovers(dir, "config.yaml", "summary.json"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{".config.yaml.tmp", "config.yaml", "notes.txt"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if err := RemoveLeftovers(filepath.Join(dir, "missing"), "config.yaml"); err != nil {
		t.Fatalf("missing dir: %v", err)
	}
}

// TestSyncDir: a directory's entries can be synced; a missing one is an
// error naming it.
func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "a"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir(%s): %v", dir, err)
	}
	if err := SyncDir(filepath.Join(dir, "gone")); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("SyncDir of a missing directory: %v", err)
	}
}
