package tensor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEnvOptions checks what each variable sets, that an empty one is
// unset, and that a value a variable does not take is an error naming it.
func TestEnvOptions(t *testing.T) {
	base := Options{Threads: 2, Device: 1, Attention: "rows", AttentionChunk: 32}
	for _, c := range []struct {
		env  map[string]string
		want Options
		err  string // a substring of the error; "": none
	}{
		{map[string]string{}, base, ""},
		{map[string]string{"MEAZO_CUDA_ATTENTION": ""}, base, ""},
		{map[string]string{"MEAZO_GEMM": "portable", "MEAZO_GEMM_TILE": "8"}, with(base, func(o *Options) { o.GEMMPath, o.GEMMTile = "portable", 8 }), ""},
		{map[string]string{"MEAZO_GEMM_TILE": "auto"}, base, ""},
		{map[string]string{"MEAZO_CUDA_STACK": "1"}, with(base, func(o *Options) { o.StackProjections = true }), ""},
		{map[string]string{"MEAZO_CUDA_STACK": "0"}, base, ""},
		{map[string]string{"MEAZO_CUDA_ATTENTION": "gemm"}, with(base, func(o *Options) { o.Attention = "gemm" }), ""},
		{map[string]string{"MEAZO_CUDA_ATTN_CHUNK": "64"}, with(base, func(o *Options) { o.AttentionChunk = 64 }), ""},
		{map[string]string{"MEAZO_CUDA_ATTN_CHUNK": "0"}, with(base, func(o *Options) { o.AttentionChunk = AllQueries }), ""},
		{map[string]string{"MEAZO_CUDA_UPLOADS": "sync"}, with(base, func(o *Options) { o.SyncUploads = true }), ""},
		{map[string]string{"MEAZO_CUDA_UPLOADS": "async"}, base, ""},
		{map[string]string{"MEAZO_CUDA_BF16_PRODUCTS": "1"}, with(base, func(o *Options) { o.BF16Products = true }), ""},
		{map[string]string{"MEAZO_CUDA_BF16_PRODUCTS": "0"}, base, ""},
		{map[string]string{"MEAZO_CUDA_BF16_PRODUCTS": "yes"}, base, `$MEAZO_CUDA_BF16_PRODUCTS="yes"`},
		{map[string]string{"MEAZO_CUDA_PAIRED": "1"}, with(base, func(o *Options) { o.PairedProducts = true }), ""},
		{map[string]string{"MEAZO_CUDA_3XTF32": "1"}, with(base, func(o *Options) { o.TF32x3 = true }), ""},
		{map[string]string{"MEAZO_CUDA_3XTF32": "all"}, with(base, func(o *Options) { o.TF32x3, o.TF32x3AllShapes = true, true }), ""},
		{map[string]string{"MEAZO_CUDA_3XTF32": "auto"}, with(base, func(o *Options) { o.TF32x3Auto = true }), ""},
		{map[string]string{"MEAZO_CUDA_3XTF32": "0"}, base, ""},
		{map[string]string{"MEAZO_CUDA_3XTF32": "on"}, base, `$MEAZO_CUDA_3XTF32="on": want one of 1, auto, all, 0`},
		{map[string]string{"MEAZO_CUDA_PAIRED": "0"}, base, ""},
		{map[string]string{"MEAZO_CUDA_PAIRED": "on"}, base, `$MEAZO_CUDA_PAIRED="on"`},
		{map[string]string{"MEAZO_GEMM_TILE": "tall"}, base, `$MEAZO_GEMM_TILE="tall"`},
		{map[string]string{"MEAZO_CUDA_STACK": "yes"}, base, `$MEAZO_CUDA_STACK="yes"`},
		{map[string]string{"MEAZO_CUDA_ATTN_CHUNK": "-1"}, base, `$MEAZO_CUDA_ATTN_CHUNK="-1"`},
		{map[string]string{"MEAZO_CUDA_UPLOADS": "on"}, base, `$MEAZO_CUDA_UPLOADS="on"`},
		{map[string]string{"MEAZO_CUDA_ATTENTION": "fast"}, base, `$MEAZO_CUDA_ATTENTION="fast": want one of rows, tiled, gemm, auto`},
		{map[string]string{"MEAZO_GEMM": "sse"}, base, `$MEAZO_GEMM="sse"`},
	} {
		for _, v := range envOptions {
			t.Setenv(v.name, c.env[v.name])
		}
		got, err := EnvOptions(base)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one saying %s", c.env, err, c.err)
		case c.err == "" && got != c.want:
			t.Errorf("%v: %+v, want %+v", c.env, got, c.want)
		}
	}
}

func with(o Options, f func(*Options)) Options {
	f(&o)
	return o
}

// TestEnvListedOnce checks that the environment variables are listed in
// one place: no Go file of the module outside tests reads a MEAZO_ variable
// that EnvOptions' list (its doc comment) does not name, and
// docs/BACKENDS.md lists every one of them; and that under tensor/ only
// env.go and the CUDA backend's library loader (MEAZO_CUDA_LIB_PATH) read
// the environment at all. (Tests may use variables of their own to talk to
// the processes they start.)
func TestEnvListedOnce(t *testing.T) {
	src, err := os.ReadFile("env.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:strings.Index(string(src), "func EnvOptions")])
	docs, err := os.ReadFile(filepath.Join("..", "docs", "BACKENDS.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`MEAZO_[A-Z0-9_]+[A-Z0-9]`)
	listed := map[string]bool{}
	for _, n := range name.FindAllString(doc, -1) {
		listed[n] = true
		if !strings.Contains(string(docs), "`"+n) {
			t.Errorf("%s is in EnvOptions' list but not in docs/BACKENDS.md", n)
		}
	}
	for _, v := range envOptions {
		if !listed[v.name] {
			t.Errorf("EnvOptions reads %s, which its doc comment does not list", v.name)
		}
	}
	reads := regexp.MustCompile(`(Getenv|LookupEnv)\("(MEAZO_[A-Z0-9_]+)"`)
	root := filepath.Join("..")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range reads.FindAllStringSubmatch(string(b), -1) {
			if !listed[m[2]] {
				t.Errorf("%s reads %s, which EnvOptions' list does not name", path, m[2])
			}
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(rel, "tensor"+string(filepath.Separator)) &&
			rel != filepath.Join("tensor", "env.go") && rel != filepath.Join("tensor", "cuda", "dlopen_linux.go") &&
			regexp.MustCompile(`os\.(Getenv|LookupEnv|Environ)\(`).Match(b) {
			t.Errorf("%s reads the environment; only tensor/env.go does (and tensor/cuda/dlopen_linux.go, MEAZO_CUDA_LIB_PATH)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
