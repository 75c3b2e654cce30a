package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/meazo-go/meazo/tensor"
)

// opTimer is a tensor.Backend that times every compute call of the backend
// it wraps, by op class. It is only meaningful for a backend whose calls
// return when their work is done (the CPU backend); a GPU backend queues
// its kernels and returns at once (use ncu there).
type opTimer struct {
	tensor.Backend
	spent map[string]time.Duration
	calls map[string]int
}

func newOpTimer(b tensor.Backend) *opTimer {
	return &opTimer{Backend: b, spent: map[string]time.Duration{}, calls: map[string]int{}}
}

// time records the time since start under op.
func (o *opTimer) time(op string, start time.Time) {
	o.spent[op] += time.Since(start)
	o.calls[op]++
}

// reset forgets what was recorded.
func (o *opTimer) reset() { clear(o.spent); clear(o.calls) }

// report writes the recorded time per op class, largest first, as shares of
// total (the wall time of the timed region), per repetition.
func (o *opTimer) report(w io.Writer, total time.Duration, reps int) {
	ops := make([]string, 0, len(o.spent))
	var sum time.Duration
	for op, d := range o.spent {
		ops = append(ops, op)
		sum += d
	}
	slices.SortFunc(ops, func(a, b string) int { return int(o.spent[b] - o.spent[a]) })
	fmt.Fprintf(w, "#   %-12s %10s %7s %8s\n", "op", "ms/forward", "share", "calls")
	for _, op := range ops {
		fmt.Fprintf(w, "#   %-12s %10.1f %6.1f%% %8d\n", op, ms(o.spent[op])/float64(reps), 100*float64(o.spent[op])/float64(total), o.calls[op]/reps)
	}
	fmt.Fprintf(w, "#   %-12s %10.1f %6.1f%%\n", "(other)", ms(total-sum)/float64(reps), 100*float64(total-sum)/float64(total))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (o *opTimer) Alloc(n int) tensor.Buf {
	defer o.time("Alloc", time.Now())
	return o.Backend.Alloc(n)
}
func (o *opTimer) FromHost(src []float32) tensor.Buf {
	defer o.time("FromHost", time.Now())
	return o.Backend.FromHost(src)
}
func (o *opTimer) ToHost(b tensor.Buf) []float32 {
	defer o.time("ToHost", time.Now())
	return o.Backend.ToHost(b)
}
func (o *opTimer) Rows(dst tensor.Buf, w tensor.Weight, ids []int) {
	defer o.time("Rows", time.Now())
	o.Backend.Rows(dst, w, ids)
}
func (o *opTimer) Gather(dst, src tensor.Buf, width int, ids []int) {
	defer o.time("Gather", time.Now())
	o.Backend.Gather(dst, src, width, ids)
}
func (o *opTimer) Copy(dst, src tensor.Buf) {
	defer o.time("Copy", time.Now())
	o.Backend.Copy(dst, src)
}
func (o *opTimer) MatMul(y, x tensor.Buf, rows int, w tensor.Weight) {
	defer o.time("MatMul", time.Now())
	o.Backend.MatMul(y, x, rows, w)
}
func (o *opTimer) MatMulNT(y, x, b tensor.Buf, rows, n, k int) {
	defer o.time("MatMulNT", time.Now())
	o.Backend.MatMulNT(y, x, b, rows, n, k)
}
func (o *opTimer) MatMulAdd(y, x tensor.Buf, rows int, w tensor.Weight) {
	defer o.time("MatMulAdd", time.Now())
	o.Backend.MatMulAdd(y, x, rows, w)
}
func (o *opTimer) MatMulNTAdd(y, x, b tensor.Buf, rows, n, k int, s float32) {
	defer o.time("MatMulNTAdd", time.Now())
	o.Backend.MatMulNTAdd(y, x, b, rows, n, k, s)
}
func (o *opTimer) Add(y, x tensor.Buf) {
	defer o.time("Add", time.Now())
	o.Backend.Add(y, x)
}
func (o *opTimer) AddScaled(y, x tensor.Buf, s float32) {
	defer o.time("AddScaled", time.Now())
	o.Backend.AddScaled(y, x, s)
}
func (o *opTimer) RMSNorm(dst, x, weight tensor.Buf, rows, n int, eps float32) {
	defer o.time("RMSNorm", time.Now())
	o.Backend.RMSNorm(dst, x, weight, rows, n, eps)
}
func (o *opTimer) SiLUMul(gate, up tensor.Buf) {
	defer o.time("SiLUMul", time.Now())
	o.Backend.SiLUMul(gate, up)
}
func (o *opTimer) RoPE(x tensor.Buf, rows, heads, hd int, cos, sin tensor.Buf, tableRows int) {
	defer o.time("RoPE", time.Now())
	o.Backend.RoPE(x, rows, heads, hd, cos, sin, tableRows)
}
func (o *opTimer) NewKVCache(seqs, kvHeads, capacity, hd, layers int) tensor.KVCache {
	defer o.time("NewKVCache", time.Now())
	return o.Backend.NewKVCache(seqs, kvHeads, capacity, hd, layers)
}
func (o *opTimer) Attention(out, q, k, v tensor.Buf, c tensor.KVCache, layer int, a tensor.AttentionArgs) {
	defer o.time("Attention", time.Now())
	o.Backend.Attention(out, q, k, v, c, layer, a)
}
func (o *opTimer) CrossEntropy(logits tensor.Buf, width int, ids, targets []int) []float64 {
	defer o.time("CrossEntropy", time.Now())
	return o.Backend.CrossEntropy(logits, width, ids, targets)
}
func (o *opTimer) Argmax(x tensor.Buf, rows, width int) []int {
	defer o.time("Argmax", time.Now())
	return o.Backend.Argmax(x, rows, width)
}
