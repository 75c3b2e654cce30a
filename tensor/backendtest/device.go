// Package backendtest is the conformance suite of tensor.Backend: every
// backend runs it. Ops checks each operation against the CPU backend on small
// random inputs and on the edge cases the interface's comments promise
// (masks, grouped-query heads, sliding windows, left padding, a query with no
// visible key, Argmax's tie and NaN rules, views at offsets, full float32
// precision in MatMul). The model-level half of the suite, the model package
// run on the backend against the HF references and the CPU, is
// model/modeltest's Models: this package imports nothing above tensor.
//
// Device is a backend made for testing the model and the suite itself: the
// CPU kernels behind buffers of its own type whose uploads and downloads copy,
// as a GPU backend's do, with accounting of what is alive.
package backendtest

import (
	"fmt"
	"slices"

	"github.com/meazo-go/meazo/tensor"
	"github.com/meazo-go/meazo/tensor/cpu"
)

// Counter is implemented by backends that count what they hold, so that the
// suite can check a call frees everything it made.
type Counter interface {
	// Live returns the number of buffers (Alloc, FromHost), weights (Pack)
	// and KV caches alive.
	Live() (bufs, weights, caches int)
}

// Device runs the CPU kernels behind the backend seam the way a GPU backend
// looks to the model: buffers and weights are its own types, FromHost and
// ToHost copy (an upload, a download), and it keeps account of downloads and
// of the buffers, caches and weights alive. A model that gives bit-identical
// results on it and on the CPU backend does all its arithmetic through the
// seam and relies on no sharing of memory between host and backend.
type Device struct {
	Downloads int // ToHost calls
	Misuse    []string
	cpu       *cpu.Backend
	live      map[*[]float32]bool
	weights   int
	caches    int
}

// NewDevice returns a Device on a CPU backend with default options.
func NewDevice() *Device {
	return &Device{cpu: cpu.New(cpu.Options{}), live: map[*[]float32]bool{}}
}

// devBuf is a view of a buffer; root identifies the buffer for Free.
type devBuf struct {
	h    cpu.HostBuf
	root *[]float32
}

func (b devBuf) Len() int                    { return len(b.h) }
func (b devBuf) Slice(lo, hi int) tensor.Buf { return devBuf{b.h[lo:hi], nil} }

type devWeight struct{ w tensor.Weight }

func (w devWeight) Shape() (int, int) { return w.w.Shape() }

func dh(b tensor.Buf) tensor.Buf { return b.(devBuf).h }

func (d *Device) newBuf(h []float32) tensor.Buf {
	root := &h
	d.live[root] = true
	return devBuf{h, root}
}

// Live implements Counter.
func (d *Device) Live() (bufs, weights, caches int) { return len(d.live), d.weights, d.caches }

func (d *Device) Name() string                    { return "device-test" }
func (d *Device) Describe() string                { return "test device (CPU kernels, copying uploads)" }
func (d *Device) Arithmetic() string              { return "device-test over " + d.cpu.Arithmetic() }
func (d *Device) Close() error                    { return nil }
func (d *Device) Alloc(n int) tensor.Buf          { return d.newBuf(make([]float32, n)) }
func (d *Device) FromHost(s []float32) tensor.Buf { return d.newBuf(slices.Clone(s)) }
func (d *Device) ToHost(b tensor.Buf) []float32 {
	return d.ToHostInto(b, make([]float32, b.Len()))
}

// ToHostInto implements tensor.HostReader: a download into the caller's
// dst, as a GPU backend's.
func (d *Device) ToHostInto(b tensor.Buf, dst []float32) []float32 {
	if len(dst) < b.Len() {
		panic(fmt.Sprintf("backendtest: ToHostInto: %d floats into %d", b.Len(), len(dst)))
	}
	d.Downloads++
	return dst[:copy(dst, b.(devBuf).h)]
}
func (d *Device) Free(bufs ...tensor.Buf) {
	for _, b := range bufs {
		r := b.(devBuf).root
		if r == nil || !d.live[r] {
			d.Misuse = append(d.Misuse, fmt.Sprintf("Free of a view or of a freed buffer (%d floats)", b.Len()))
			continue
		}
		delete(d.live, r)
	}
}
func (d *Device) FreeWeight(tensor.Weight)   { d.weights-- }
func (d *Device) FreeKVCache(tensor.KVCache) { d.caches-- }
func (d *Device) Pack(w []float32, n, k int, bf16 bool) tensor.Weight {
	d.weights++
	return devWeight{d.cpu.Pack(w, n, k, bf16)}
}
func (d *Device) Rows(dst tensor.Buf, w tensor.Weight, ids []int) {
	d.cpu.Rows(dh(dst), w.(devWeight).w, ids)
}
func (d *Device) Gather(dst, src tensor.Buf, width int, ids []int) {
	d.cpu.Gather(dh(dst), dh(src), width, ids)
}
func (d *Device) Copy(dst, src tensor.Buf) { d.cpu.Copy(dh(dst), dh(src)) }
func (d *Device) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	d.cpu.MatMul(dh(y), dh(x), rows, w.(devWeight).w)
}
func (d *Device) MatMulNT(y, x, b tensor.Buf, rows, n, k int) {
	d.cpu.MatMulNT(dh(y), dh(x), dh(b), rows, n, k)
}
func (d *Device) MatMulAdd(y, x tensor.Buf, rows int, w tensor.Weight) {
	d.cpu.MatMulAdd(dh(y), dh(x), rows, w.(devWeight).w)
}
func (d *Device) MatMulNTAdd(y, x, b tensor.Buf, rows, n, k int, s float32) {
	d.cpu.MatMulNTAdd(dh(y), dh(x), dh(b), rows, n, k, s)
}
func (d *Device) Add(y, x tensor.Buf)                  { d.cpu.Add(dh(y), dh(x)) }
func (d *Device) AddScaled(y, x tensor.Buf, s float32) { d.cpu.AddScaled(dh(y), dh(x), s) }
func (d *Device) RMSNorm(dst, x, w tensor.Buf, rows, n int, eps float32) {
	d.cpu.RMSNorm(dh(dst), dh(x), dh(w), rows, n, eps)
}
func (d *Device) SiLUMul(gate, up tensor.Buf) { d.cpu.SiLUMul(dh(gate), dh(up)) }
func (d *Device) LayerNorm(dst, x, w, bias tensor.Buf, rows, n int, eps float32) {
	d.cpu.LayerNorm(dh(dst), dh(x), dh(w), dh(bias), rows, n, eps)
}
func (d *Device) AddBias(y, bias tensor.Buf, rows, n int) { d.cpu.AddBias(dh(y), dh(bias), rows, n) }
func (d *Device) ReLU(x tensor.Buf)                       { d.cpu.ReLU(dh(x)) }
func (d *Device) GELU(x tensor.Buf)                       { d.cpu.GELU(dh(x)) }
func (d *Device) EncoderAttention(out, q, k, v tensor.Buf, seqs, tokens, heads, hd int, scale float32) {
	d.cpu.EncoderAttention(dh(out), dh(q), dh(k), dh(v), seqs, tokens, heads, hd, scale)
}
func (d *Device) RoPE(x tensor.Buf, rows, heads, hd int, cos, sin tensor.Buf, tableRows int) {
	d.cpu.RoPE(dh(x), rows, heads, hd, dh(cos), dh(sin), tableRows)
}
func (d *Device) NewKVCache(seqs, kvHeads, capacity, hd, layers int) tensor.KVCache {
	d.caches++
	return d.cpu.NewKVCache(seqs, kvHeads, capacity, hd, layers)
}
func (d *Device) Attention(out, q, k, v tensor.Buf, c tensor.KVCache, layer int, a tensor.AttentionArgs) {
	d.cpu.Attention(dh(out), dh(q), dh(k), dh(v), c, layer, a)
}
func (d *Device) CrossEntropy(logits tensor.Buf, width int, ids, targets []int) []float64 {
	return d.cpu.CrossEntropy(dh(logits), width, ids, targets)
}
func (d *Device) Argmax(x tensor.Buf, rows, width int) []int {
	return d.cpu.Argmax(dh(x), rows, width)
}
