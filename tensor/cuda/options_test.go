package cuda

import (
	"strings"
	"testing"

	"github.com/meazo-go/meazo/tensor"
)

// TestOptions checks how Options set the backend's choice of attention
// kernel, its chunks and stacking, and that the description (and with it
// Arithmetic) names every setting that changes the bits.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		name           string
		o              Options
		minHD, minKeys int
		chunk          int
		stack          bool
		desc           string // "": the description names no setting
	}{
		{"default", Options{}, 128, 256, defaultAttnChunk, false, ""},
		{"auto", Options{Attention: "auto"}, 128, 256, defaultAttnChunk, false, ""},
		{"rows", Options{Attention: "rows"}, 0, 0, defaultAttnChunk, false, "; attention kernel: rows (MEAZO_CUDA_ATTENTION)"},
		{"tiled", Options{Attention: "tiled"}, 1, 0, defaultAttnChunk, false, "; attention kernel: tiled (MEAZO_CUDA_ATTENTION)"},
		{"gemm", Options{Attention: "gemm"}, 128, 1, defaultAttnChunk, false, "; attention kernel: gemm (MEAZO_CUDA_ATTENTION)"},
		{"chunks of 64", Options{AttentionChunk: 64}, 128, 256, 64, false, "; attention chunks of 64 queries (MEAZO_CUDA_ATTN_CHUNK)"},
		{"all queries", Options{AttentionChunk: tensor.AllQueries}, 128, 256, 0, false, "; attention chunks of 0 queries (MEAZO_CUDA_ATTN_CHUNK)"},
		{"stacked", Options{StackProjections: true}, 128, 256, defaultAttnChunk, true, "; projections stacked (MEAZO_CUDA_STACK)"},
		{"synchronous uploads: the GPU's description", Options{SyncUploads: true}, 128, 256, defaultAttnChunk, false, ""},
		{"bfloat16 products", Options{BF16Products: true}, 128, 256, defaultAttnChunk, false,
			"; bfloat16 weights multiplied in bfloat16 on the tensor cores (MEAZO_CUDA_BF16_PRODUCTS)"},
		{"paired products", Options{PairedProducts: true}, 128, 256, defaultAttnChunk, false,
			"; a direction's perturbed products paired (MEAZO_CUDA_PAIRED)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := newBackend(nil, "gpu", 48<<10, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if b.tiledMinHD != c.minHD || b.gemmMinKeys != c.minKeys || b.attnChunk != c.chunk || b.StackProjections() != c.stack {
				t.Errorf("tiledMinHD %d, gemmMinKeys %d, attnChunk %d, stacked %v; want %d, %d, %d, %v",
					b.tiledMinHD, b.gemmMinKeys, b.attnChunk, b.StackProjections(), c.minHD, c.minKeys, c.chunk, c.stack)
			}
			if b.Describe() != "gpu"+c.desc || b.Arithmetic() != c.desc {
				t.Errorf("description %q, arithmetic %q; want %q and %q", b.Describe(), b.Arithmetic(), "gpu"+c.desc, c.desc)
			}
		})
	}
	for _, o := range []Options{{Attention: "fast"}, {AttentionChunk: -2}} {
		_, err := newBackend(nil, "gpu", 48<<10, o)
		if _, openErr := Open(o); err == nil || openErr == nil || !strings.HasPrefix(openErr.Error(), "cuda: attention") {
			t.Errorf("options %+v: newBackend's error %v, Open's %v; want both to refuse them", o, err, openErr)
		}
	}
}

// TestOptionsOf checks that every setting of tensor.Options that is the
// CUDA backend's reaches its Options (a backend opened by name).
func TestOptionsOf(t *testing.T) {
	o := tensor.Options{Threads: 3, Device: 2, StackProjections: true, GEMMPath: "avx2", GEMMTile: 8,
		Attention: "gemm", AttentionChunk: 64, SyncUploads: true, BF16Products: true, PairedProducts: true}
	want := Options{Device: 2, StackProjections: true, Attention: "gemm", AttentionChunk: 64, SyncUploads: true,
		BF16Products: true, PairedProducts: true}
	if got := optionsOf(o); got != want {
		t.Errorf("optionsOf(%+v) = %+v, want %+v", o, got, want)
	}
}
