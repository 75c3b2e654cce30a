package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/rundir"
)

// TestManifestChunks: a file of two chunks and a few bytes more gets each
// chunk's CRC-32C; a flipped byte in the second chunk is named with that
// chunk's byte range; an empty file has no chunks; a truncated file is
// named by its size.
func TestManifestChunks(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 2*chunkBytes+3)
	for i := range big {
		big[i] = byte(i*31 + i>>9)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("model.safetensors", big)
	write("empty.json", nil)
	if err := writeManifest(dir); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, dir)
	if m.Version != 2 || len(m.Files) != 2 {
		t.Fatalf("manifest %+v: want version 2 with 2 files", m)
	}
	for _, e := range m.Files {
		var want []string
		if e.Path == "model.safetensors" {
			for lo := 0; lo < len(big); lo += chunkBytes {
				want = append(want, fmt.Sprintf("%08x", crc32.Checksum(big[lo:min(lo+chunkBytes, len(big))], castagnoli)))
			}
		}
		if fmt.Sprint(e.CRC32C) != fmt.Sprint(want) || e.SHA256 != "" {
			t.Errorf("%s: crc32c %v, sha256 %q; want %v and none", e.Path, e.CRC32C, e.SHA256, want)
		}
	}
	if err := verifyManifest(dir); err != nil {
		t.Fatalf("the manifest just written does not verify: %v", err)
	}
	big[chunkBytes+5] ^= 1
	write("model.safetensors", big)
	want := fmt.Sprintf("at bytes %d-%d", chunkBytes, 2*chunkBytes-1)
	if err := verifyManifest(dir); err == nil || !strings.Contains(err.Error(), "CRC-32C") || !strings.Contains(err.Error(), want) {
		t.Errorf("a flipped byte in the second chunk: %v; want an error naming the CRC-32C %s", err, want)
	}
	write("model.safetensors", big[:len(big)-1])
	if err := verifyManifest(dir); err == nil || !strings.Contains(err.Error(), "the manifest says") {
		t.Errorf("a truncated file: %v; want an error naming its size", err)
	}
}

// TestManifestVersion1: a checkpoint written with version 1's manifest (one
// SHA-256 a file) still verifies, and a flipped byte in it is still found.
func TestManifestVersion1(t *testing.T) {
	dir := t.TempDir()
	content := []byte("state of an older run\n")
	path := filepath.Join(dir, "optimizer.bin")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	m := manifest{Version: 1, Files: []manifestEntry{{Path: "optimizer.bin", Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyManifest(dir); err != nil {
		t.Fatalf("a version 1 manifest: %v", err)
	}
	content[3] ^= 1
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verifyManifest(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a flipped byte under a version 1 manifest: %v; want an error naming its SHA-256", err)
	}
}

func readManifest(t *testing.T, dir string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundir.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkManifestChecksums times the checksums of a checkpoint file of
// 1 GiB (in the page cache): version 1's SHA-256 against version 2's CRC-32C
// chunks on GOMAXPROCS workers. docs/bench/2026-11-28-manifest-cpu/ has a run:
//
//	go test -run XXX -bench ManifestChecksums -benchtime 3x ./train
func BenchmarkManifestChecksums(b *testing.B) {
	path := filepath.Join(b.TempDir(), "model.safetensors")
	buf := make([]byte, 1<<30)
	for i := range buf {
		buf[i] = byte(i*31 + i>>9)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	size := int64(len(buf))
	buf = nil
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := sha256File(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("crc32c-chunks", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := crc32cChunks(path, size); err != nil {
				b.Fatal(err)
			}
		}
	})
}
