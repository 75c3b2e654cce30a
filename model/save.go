package model

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/safetensors"
	"github.com/meazo-go/meazo/tensor"
)

// SaveOptions say how Save writes a model.
type SaveOptions struct {
	// Source is the HF model directory the model was loaded from: its
	// config.json (with torch_dtype set to what is saved) and its tokenizer
	// and generation files are copied, so that the result loads where the
	// source did.
	Source string
	// MaxShard is the most bytes of tensors per safetensors file (0:
	// transformers' default, 5 GB).
	MaxShard int64
	// Float16 writes the tensors the checkpoint stored as float16 (OPT's
	// published weights) as float16 again, each value rounded to nearest
	// (ties to even), as a float16 model's merge_and_unload leaves them.
	// Without it they are written in float32, which keeps what a
	// full-parameter run changed by less than float16 can hold.
	Float16 bool
}

// sourceFiles are the files of an HF model directory besides its weights
// that Save copies when the source has them.
var sourceFiles = []string{"generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"chat_template.jinja", "chat_template.json", "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json"}

// Save writes the model's weights as they are now into dir (made if
// missing) as an HF model directory that transformers' from_pretrained,
// meazo-eval and meazo-train load: every tensor of Tensors in the dtype it
// is held in (bfloat16 or float32; float16 where it was stored so, with
// opts.Float16), sharded as save_pretrained shards
// (safetensors.WriteSharded), with the source directory's other files.
// The weights are read back from the backend a few megabytes at a time.
func (m *Model) Save(dir string, opts SaveOptions) error {
	ts, err := m.Tensors()
	if err != nil {
		return err
	}
	maxShard := opts.MaxShard
	if maxShard <= 0 {
		maxShard = safetensors.DefaultMaxShard
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	sv := &saver{be: m.Backend}
	defer sv.free()
	out := make([]safetensors.Tensor, len(ts))
	for i, t := range ts {
		out[i] = sv.tensor(t, savedDtype(t, opts))
	}
	if m.Multimodal {
		// Ministral-3's multimodal checkpoint: the language model under
		// the source's names, and the vision tower and projector (never
		// read, never trained) copied from it unchanged, so that the
		// result is the whole Mistral3ForConditionalGeneration its
		// config.json says, which meazo and transformers load as the
		// source.
		ck, err := safetensors.OpenCheckpoint(opts.Source)
		if err != nil {
			return fmt.Errorf("save model: the multimodal source's vision tower: %w", err)
		}
		defer ck.Close()
		name := multimodalNames(ck)
		for i := range out {
			out[i].Name = name(out[i].Name)
		}
		for _, n := range ck.Names() {
			if notLanguageModel(n) {
				out = append(out, ck.Copy(n, n))
			}
		}
	}
	if err := safetensors.WriteSharded(dir, out, map[string]string{"format": "pt"}, maxShard); err != nil {
		return fmt.Errorf("save model in %s: %w", dir, err)
	}
	if err := writeConfig(dir, opts.Source, torchDtype(out)); err != nil {
		return fmt.Errorf("save model in %s: %w", dir, err)
	}
	if err := CheckSourceFiles(opts.Source); err != nil {
		return fmt.Errorf("save model in %s: %w", dir, err)
	}
	for _, name := range sourceFiles {
		if err := copyIfPresent(filepath.Join(opts.Source, name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("save model in %s: %w", dir, err)
		}
	}
	return nil
}

// CheckSourceFiles checks that the files Save copies from the model
// directory src (tokenizer files, generation_config.json, …) are in it: a
// symbolic link among them may only lead inside src or, in the Hugging Face
// cache's layout (models--org--name/snapshots/REV/FILE ->
// ../../blobs/HASH), inside the repository's cache directory. A stranger's
// repository (a git clone) may hold a link to a file of the user's (a
// token, a key), and the saved model, made to be shared, would hold its
// contents. A run that will save a model calls it before it trains, so
// that it refuses at the start rather than at its end.
func CheckSourceFiles(src string) error {
	root, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if snap := filepath.Dir(root); filepath.Base(snap) == "snapshots" {
		root = filepath.Dir(snap)
	}
	for _, name := range sourceFiles {
		p := filepath.Join(src, name)
		if st, err := os.Lstat(p); err != nil || st.Mode()&fs.ModeSymlink == 0 {
			continue // absent, or a file of the directory's own
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("%s is a symbolic link that leads nowhere: %w", p, err)
		}
		if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("%s is a symbolic link to %s, outside the model's directory: a saved model would carry that file's contents; "+
				"remove the link, or copy the file into the directory", p, real)
		}
	}
	return nil
}

// saveChunk is how many values Save reads back from the backend at once.
var saveChunk = 4 << 20 // a variable for the tests, which make it small

// saver reads a model's tensors back from the backend a chunk at a time as
// they are written, through one backend buffer, one host slice (where the
// backend's ToHost would make a new one: tensor.HostReader) and one byte
// buffer for the whole model: a buffer per chunk would be gigabytes of
// garbage per save, which the collector lets pile up to its headroom and
// the runtime keeps resident a while after (a full-parameter run's peak
// memory).
type saver struct {
	be    tensor.Backend
	chunk tensor.Buf // the rows read back (at most saveChunk values, or one row)
	host  []float32  // their values downloaded, for a tensor.HostReader
	bytes []byte     // their little-endian bytes
}

// savedDtype is the dtype Save writes t in.
func savedDtype(t Tensor, opts SaveOptions) safetensors.Dtype {
	switch {
	case t.BF16:
		return safetensors.BF16
	case t.F16 && opts.Float16:
		return safetensors.F16
	}
	return safetensors.F32
}

// torchDtype is config.json's torch_dtype for tensors: theirs when they
// share one, else float32 (transformers then loads every tensor in float32).
func torchDtype(ts []safetensors.Tensor) string {
	names := map[safetensors.Dtype]string{safetensors.BF16: "bfloat16", safetensors.F16: "float16"}
	if len(ts) == 0 || names[ts[0].Dtype] == "" {
		return "float32"
	}
	for _, t := range ts {
		if t.Dtype != ts[0].Dtype {
			return "float32"
		}
	}
	return names[ts[0].Dtype]
}

// tensor is t as Save writes it, in dtype: its bytes produced from the
// backend while the file is written (the files are written one tensor
// after another, so the buffers are shared).
func (sv *saver) tensor(t Tensor, dtype safetensors.Dtype) safetensors.Tensor {
	st := safetensors.Tensor{Name: t.Name, Dtype: dtype, Shape: []int{t.Rows, t.Cols}}
	if t.Vector != nil {
		st.Shape = []int{t.Cols}
	}
	st.Produce = func(w io.Writer) (err error) {
		defer tensor.Recover(&err)
		if t.Vector != nil {
			return sv.write(w, sv.toHost(t.Vector)[:t.Cols], dtype)
		}
		rows := max(1, saveChunk/max(1, t.Cols))
		ids := make([]int, 0, min(rows, t.Rows))
		for lo := 0; lo < t.Rows; lo += rows {
			hi := min(t.Rows, lo+rows)
			ids = ids[:0]
			for i := lo; i < hi; i++ {
				ids = append(ids, i)
			}
			dst := sv.rows(len(ids) * t.Cols)
			sv.be.Rows(dst, t.Weight, ids)
			if err := sv.write(w, sv.toHost(dst), dtype); err != nil {
				return err
			}
		}
		return nil
	}
	return st
}

// rows returns n values of the chunk buffer, made (or made larger) first.
func (sv *saver) rows(n int) tensor.Buf {
	if sv.chunk == nil || sv.chunk.Len() < n {
		sv.free()
		sv.chunk = sv.be.Alloc(n)
	}
	return sv.chunk.Slice(0, n)
}

// toHost returns b's values on the host until the next call: the
// backend's own memory (the CPU's ToHost), or the saver's host slice.
func (sv *saver) toHost(b tensor.Buf) []float32 {
	hr, ok := sv.be.(tensor.HostReader)
	if !ok {
		return sv.be.ToHost(b)
	}
	if cap(sv.host) < b.Len() {
		sv.host = make([]float32, b.Len())
	}
	return hr.ToHostInto(b, sv.host[:b.Len()])
}

// free returns the chunk buffer to the backend.
func (sv *saver) free() {
	if sv.chunk != nil {
		sv.be.Free(sv.chunk)
		sv.chunk = nil
	}
}

// write writes v little-endian as float32, as bfloat16 (the values are
// bfloat16 numbers: their top 16 bits) or as float16 (rounded to nearest),
// through the saver's byte buffer.
func (sv *saver) write(w io.Writer, v []float32, dtype safetensors.Dtype) error {
	size := dtype.Size()
	if cap(sv.bytes) < size*len(v) {
		sv.bytes = make([]byte, size*len(v))
	}
	b := sv.bytes[:size*len(v)]
	for i, x := range v {
		switch dtype {
		case safetensors.BF16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(x)>>16))
		case safetensors.F16:
			binary.LittleEndian.PutUint16(b[2*i:], safetensors.Float16Bits(x))
		default:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
	}
	_, err := w.Write(b)
	return err
}

// writeConfig writes the source's config.json into dir with its dtype keys
// (torch_dtype, and transformers 5's dtype) saying what the weights are.
func writeConfig(dir, src, dtype string) error {
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return err
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(src, "config.json"), err)
	}
	q, _ := json.Marshal(dtype)
	cfg["torch_dtype"] = q
	if _, ok := cfg["dtype"]; ok {
		cfg["dtype"] = q
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), append(out, '\n'))
}

// copyIfPresent copies the regular file src to dst, if src exists.
func copyIfPresent(src, dst string) error {
	b, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(dst, b)
}

// SavedFiles lists the files of the model directory dir that Save writes
// and that dir holds: config.json, the weights (model.safetensors, or the
// index and its shards) and the source files Save copies. A caller that
// keeps a second name for a saved model (a hard link) links these.
func SavedFiles(dir string) ([]string, error) {
	weights, err := safetensors.CheckpointFiles(dir)
	if err != nil {
		return nil, err
	}
	files := []string{"config.json"}
	for _, w := range weights {
		files = append(files, filepath.Base(w))
	}
	for _, name := range sourceFiles {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
			files = append(files, name)
		}
	}
	return files, nil
}
