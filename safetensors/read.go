package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/meazo-go/meazo/internal/clip"
	"github.com/meazo-go/meazo/internal/inputfile"
)

// File is one .safetensors file, memory-mapped read-only (read into memory on
// platforms without mmap). Every accessor returns a fresh copy, so slices stay
// valid after Close. A File may be read from several goroutines at once, but
// Close must not run concurrently with reads. If another process truncates the
// file while it is mapped, reads may fault (SIGBUS): do not rewrite checkpoints
// in place (WriteFile never does: it renames a new file over the old one).
type File struct {
	path      string
	buf       []byte // the whole file; nil after Close
	dataStart int64  // offset of the data section in buf
	tensors   []TensorInfo
	index     map[string]int // name -> position in tensors
	metadata  map[string]string
}

// Open maps path and validates its header (see parseHeader for what is
// checked). Nothing is read from the data section until a tensor is asked for.
func Open(path string) (*File, error) {
	fd, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors %s: not a regular file", path)
	}
	if st.Size() < 8 { // also keeps mmap away from empty files
		return nil, fmt.Errorf("safetensors %s: file is %d bytes, shorter than the 8-byte header length", path, st.Size())
	}
	buf, err := mapFile(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: map: %w", path, err)
	}
	h, dataStart, err := parseFile(path, buf)
	if err != nil {
		unmapFile(buf)
		return nil, err
	}
	f := &File{path: path, buf: buf, dataStart: dataStart, tensors: h.tensors, metadata: h.metadata,
		index: make(map[string]int, len(h.tensors))}
	for i, t := range h.tensors {
		f.index[t.Name] = i
	}
	return f, nil
}

// Path is the path the file was opened with.
func (f *File) Path() string { return f.path }

// Metadata is a copy of the header's __metadata__ entry (nil if absent).
func (f *File) Metadata() map[string]string { return maps.Clone(f.metadata) }

// Tensors describes every tensor, in data-offset order.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.tensors))
	for i, t := range f.tensors {
		out[i] = t.clone()
	}
	return out
}

// Info describes the tensor called name.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i].clone(), true
}

func (t TensorInfo) clone() TensorInfo {
	t.Shape = slices.Clone(t.Shape)
	return t
}

// Close unmaps the file. Slices returned earlier stay valid; later reads fail.
func (f *File) Close() error {
	if f.buf == nil {
		return nil
	}
	err := unmapFile(f.buf)
	f.buf = nil
	if err != nil {
		return fmt.Errorf("safetensors %s: unmap: %w", f.path, err)
	}
	return nil
}

// raw returns the tensor's bytes inside the mapping (not a copy).
func (f *File) raw(name string) (TensorInfo, []byte, error) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, nil, fmt.Errorf("safetensors %s: no tensor %s", f.path, clip.Quote(name))
	}
	if f.buf == nil {
		return TensorInfo{}, nil, fmt.Errorf("safetensors %s: tensor %s: file is closed", f.path, clip.Quote(name))
	}
	t := f.tensors[i]
	return t, f.buf[f.dataStart+t.Begin : f.dataStart+t.End], nil
}

// Release drops the tensor's mapped pages from the process's resident set
// (after its values were copied out), so that loading a checkpoint does not
// hold the whole file in memory beside the converted weights. Reading the
// tensor again still works. Unknown names are ignored.
func (f *File) Release(name string) {
	i, ok := f.index[name]
	if !ok || f.buf == nil {
		return
	}
	t := f.tensors[i]
	releasePages(f.buf, f.dataStart+t.Begin, f.dataStart+t.End)
}

// Bytes is a copy of the tensor's raw little-endian bytes, whatever its dtype.
func (f *File) Bytes(name string) ([]byte, error) {
	_, b, err := f.raw(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(b), nil
}

// Float32 reads a floating-point tensor as float32 values, in row-major order.
// F32 is copied; BF16 (bits<<16) and F16 are converted exactly; F64 is
// rounded to nearest even. Other dtypes are an error naming the tensor.
func (f *File) Float32(name string) ([]float32, error) {
	t, b, err := f.raw(name)
	if err != nil {
		return nil, err
	}
	var out []float32
	switch t.Dtype {
	case F32:
		out = make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case BF16:
		out = make([]float32, len(b)/2)
		for i := range out {
			out[i] = bf16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F16:
		out = make([]float32, len(b)/2)
		for i := range out {
			out[i] = f16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F64:
		out = make([]float32, len(b)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	default:
		return nil, f.dtypeError(t, "Float32", "F32, BF16, F16, F64")
	}
	return out, nil
}

// Float64 reads a floating-point tensor as float64 values. F64 is copied;
// F32, BF16 and F16 are widened exactly.
func (f *File) Float64(name string) ([]float64, error) {
	t, b, err := f.raw(name)
	if err != nil {
		return nil, err
	}
	var out []float64
	switch t.Dtype {
	case F64:
		out = make([]float64, len(b)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case F32, BF16, F16:
		f32, err := f.Float32(name)
		if err != nil {
			return nil, err
		}
		out = make([]float64, len(f32))
		for i, v := range f32 {
			out[i] = float64(v)
		}
	default:
		return nil, f.dtypeError(t, "Float64", "F64, F32, BF16, F16")
	}
	return out, nil
}

// Int64 reads an integer tensor as int64 values. I64 is copied; I32, I16, I8,
// U32, U16 and U8 are widened. U64 is refused (it may not fit).
func (f *File) Int64(name string) ([]int64, error) {
	t, b, err := f.raw(name)
	if err != nil {
		return nil, err
	}
	read := intReader(t.Dtype)
	if read == nil {
		return nil, f.dtypeError(t, "Int64", "I64, I32, U32, I16, U16, I8, U8")
	}
	size := t.Dtype.Size()
	out := make([]int64, len(b)/size)
	for i := range out {
		out[i] = read(b[size*i:])
	}
	return out, nil
}

// intReader returns a decoder of one little-endian element of an integer
// dtype that fits in int64, or nil.
func intReader(d Dtype) func([]byte) int64 {
	switch d {
	case I64:
		return func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }
	case I32:
		return func(b []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(b))) }
	case U32:
		return func(b []byte) int64 { return int64(binary.LittleEndian.Uint32(b)) }
	case I16:
		return func(b []byte) int64 { return int64(int16(binary.LittleEndian.Uint16(b))) }
	case U16:
		return func(b []byte) int64 { return int64(binary.LittleEndian.Uint16(b)) }
	case I8:
		return func(b []byte) int64 { return int64(int8(b[0])) }
	case U8:
		return func(b []byte) int64 { return int64(b[0]) }
	}
	return nil
}

func (f *File) dtypeError(t TensorInfo, method, accepted string) error {
	return fmt.Errorf("safetensors %s: tensor %s has dtype %s; %s reads %s", f.path, clip.Quote(t.Name), t.Dtype, method, accepted)
}

// bf16ToFloat32 is exact: a bfloat16 is the top half of a float32.
func bf16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f16ToFloat32 converts an IEEE half exactly (every half is a float32).
func f16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // infinity or NaN (payload kept)
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case 0: // zero or subnormal: mant × 2^-24, exact in float32
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	default: // rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// Checkpoint is a model directory holding model.safetensors, or shards listed
// in model.safetensors.index.json ("weight_map": tensor name -> shard file).
// Like transformers, a single model.safetensors wins when both are present.
type Checkpoint struct {
	dir   string
	files []*File
	where map[string]*File // tensor name -> the file holding it
	names []string         // sorted
}

const (
	singleFileName = "model.safetensors"
	indexFileName  = "model.safetensors.index.json"
)

// OpenCheckpoint opens the checkpoint in dir and checks that the index (if
// any) and the shards agree: every listed shard exists, every listed tensor is
// in its shard, and every tensor of a shard is listed for that shard.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{dir: dir, where: map[string]*File{}}
	single := filepath.Join(dir, singleFileName)
	if _, err := os.Stat(single); err == nil {
		f, err := Open(single)
		if err != nil {
			return nil, err
		}
		c.files = []*File{f}
		for _, t := range f.tensors {
			c.where[t.Name] = f
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	} else if err := c.openShards(); err != nil {
		c.Close()
		return nil, err
	}
	c.names = slices.Sorted(maps.Keys(c.where))
	return c, nil
}

// CheckpointFiles lists the files OpenCheckpoint reads in dir: model.safetensors,
// or the index and the shards it names (sorted), for callers that check
// whether a checkpoint changed.
func CheckpointFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, singleFileName)
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	_, shards, err := readIndex(dir)
	if err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, indexFileName)}
	for _, s := range shards {
		files = append(files, filepath.Join(dir, s))
	}
	return files, nil
}

// danglingLink reports whether path is a symbolic link whose target does
// not exist, and the target: the HF cache's snapshots link to its blobs,
// and an interrupted or pruned download leaves the links without them.
func danglingLink(path string) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "", false
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "", false
	}
	return target, true
}

// maxPath is the longest path a shard's name may be (Linux's PATH_MAX).
const maxPath = 4096

// readIndex reads dir's model.safetensors.index.json: its weight_map
// (tensor name -> shard file) and the shard files it names, sorted, each
// checked to be a file of dir.
func readIndex(dir string) (weightMap map[string]string, shards []string, err error) {
	indexPath := filepath.Join(dir, indexFileName)
	js, err := inputfile.ReadFile(indexPath)
	if errors.Is(err, os.ErrNotExist) {
		for _, name := range []string{singleFileName, indexFileName} {
			if target, ok := danglingLink(filepath.Join(dir, name)); ok {
				return nil, nil, fmt.Errorf("checkpoint %s: %s is a symbolic link to %s, which does not exist (an incomplete or pruned download? download the model again)", dir, name, target)
			}
		}
		hint := ""
		for _, bin := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json"} {
			if _, err := os.Stat(filepath.Join(dir, bin)); err == nil {
				// facebook/opt-1.3b and other older checkpoints ship PyTorch's format only (the larger ones sharded).
				hint = ": it has PyTorch's " + bin + ", which scripts/bin_to_safetensors.py converts"
				break
			}
		}
		return nil, nil, fmt.Errorf("checkpoint %s: neither %s nor %s found%s", dir, singleFileName, indexFileName, hint)
	} else if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(js, &index); err != nil {
		return nil, nil, fmt.Errorf("checkpoint index %s: %v", indexPath, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("checkpoint index %s: weight_map is missing or empty", indexPath)
	}
	shards = slices.Compact(slices.Sorted(maps.Values(index.WeightMap)))
	for _, s := range shards {
		if !filepath.IsLocal(s) {
			return nil, nil, fmt.Errorf("checkpoint index %s: shard %s is not a file inside %s", indexPath, clip.Quote(s), dir)
		}
		if len(s) > maxPath { // the open's error would quote it whole
			return nil, nil, fmt.Errorf("checkpoint index %s: shard %s is no file's name (longer than a path can be)", indexPath, clip.Quote(s))
		}
	}
	return index.WeightMap, shards, nil
}

// openShards reads the index and opens every shard it names.
func (c *Checkpoint) openShards() error {
	indexPath := filepath.Join(c.dir, indexFileName)
	weightMap, shardNames, err := readIndex(c.dir)
	if err != nil {
		return err
	}

	// Open each shard once, in name order so that errors are deterministic.
	shards := map[string]*File{}
	for _, s := range shardNames {
		f, err := Open(filepath.Join(c.dir, s))
		if err != nil {
			return fmt.Errorf("checkpoint index %s: shard %s: %w", indexPath, clip.Quote(s), err)
		}
		shards[s] = f
		c.files = append(c.files, f)
	}

	for _, name := range slices.Sorted(maps.Keys(weightMap)) {
		s := weightMap[name]
		f := shards[s]
		if _, ok := f.index[name]; !ok {
			return fmt.Errorf("checkpoint index %s: tensor %s is listed in shard %s, but %s has no such tensor", indexPath, clip.Quote(name), clip.Quote(s), f.path)
		}
		c.where[name] = f
	}
	for _, s := range shardNames {
		f := shards[s]
		for _, t := range f.tensors {
			if listed, ok := weightMap[t.Name]; !ok || listed != s {
				return fmt.Errorf("checkpoint index %s: shard %s holds tensor %s, which the index does not list for that shard", indexPath, f.path, clip.Quote(t.Name))
			}
		}
	}
	return nil
}

// Dir is the directory the checkpoint was opened from.
func (c *Checkpoint) Dir() string { return c.dir }

// Names lists every tensor of the checkpoint, sorted.
func (c *Checkpoint) Names() []string { return slices.Clone(c.names) }

// Info describes the tensor called name.
func (c *Checkpoint) Info(name string) (TensorInfo, bool) {
	f, ok := c.where[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Info(name)
}

// file finds the file holding name, or an error naming the tensor and dir.
func (c *Checkpoint) file(name string) (*File, error) {
	f, ok := c.where[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: no tensor %s", c.dir, clip.Quote(name))
	}
	return f, nil
}

// Float32 reads a tensor as float32 (see File.Float32).
func (c *Checkpoint) Float32(name string) ([]float32, error) {
	f, err := c.file(name)
	if err != nil {
		return nil, err
	}
	return f.Float32(name)
}

// WriteTensorTo writes the tensor's raw little-endian bytes, whatever its dtype,
// to w straight from the mapping (no copy of the tensor is made), and
// then drops its pages from memory (Release): for copying tensors from one
// checkpoint into another unchanged.
func (c *Checkpoint) WriteTensorTo(w io.Writer, name string) error {
	f, err := c.file(name)
	if err != nil {
		return err
	}
	_, b, err := f.raw(name)
	if err != nil {
		return err
	}
	defer f.Release(name)
	_, err = w.Write(b)
	return err
}

// Copy is the checkpoint's tensor name, to be written under the name as
// with its bytes unchanged, in its dtype: read from the checkpoint only when
// the writer gets to it (WriteTensorTo), never widened or held.
func (c *Checkpoint) Copy(name, as string) Tensor {
	info, _ := c.Info(name)
	return Tensor{Name: as, Dtype: info.Dtype, Shape: info.Shape,
		Produce: func(w io.Writer) error { return c.WriteTensorTo(w, name) }}
}

// Release drops a tensor's mapped pages from memory (see File.Release).
func (c *Checkpoint) Release(name string) {
	if f, err := c.file(name); err == nil {
		f.Release(name)
	}
}

// Float64 reads a tensor as float64 (see File.Float64).
func (c *Checkpoint) Float64(name string) ([]float64, error) {
	f, err := c.file(name)
	if err != nil {
		return nil, err
	}
	return f.Float64(name)
}

// Int64 reads a tensor as int64 (see File.Int64).
func (c *Checkpoint) Int64(name string) ([]int64, error) {
	f, err := c.file(name)
	if err != nil {
		return nil, err
	}
	return f.Int64(name)
}

// Close closes every file of the checkpoint.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
