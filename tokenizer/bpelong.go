package tokenizer

import "container/heap"

// bpeLong is bpe for long words: a linked list of symbols and a heap of
// candidate merges ordered by (rank, position), so a word of n bytes costs
// O(n log n) instead of O(n²). It gives the same result as the simple loop.
func (t *Tokenizer) bpeLong(syms []int32) []int32 {
	n := len(syms)
	prev := make([]int, n)
	next := make([]int, n)
	alive := make([]bool, n)
	for i := range syms {
		prev[i], next[i], alive[i] = i-1, i+1, true
	}
	next[n-1] = -1
	h := &mergeHeap{}
	push := func(i int) {
		j := next[i]
		if j < 0 {
			return
		}
		if m, ok := t.merges[pairKey(syms[i], syms[j])]; ok {
			heap.Push(h, candidate{rank: m >> 32, pos: i, left: syms[i], right: syms[j], out: int32(uint32(m))})
		}
	}
	for i := 0; i < n-1; i++ {
		push(i)
	}
	for h.Len() > 0 {
		c := heap.Pop(h).(candidate)
		i := c.pos
		j := next[i]
		// Skip candidates made stale by an earlier merge.
		if !alive[i] || j < 0 || syms[i] != c.left || syms[j] != c.right {
			continue
		}
		syms[i] = c.out
		alive[j] = false
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		if prev[i] >= 0 {
			push(prev[i])
		}
		push(i)
	}
	out := make([]int32, 0, n)
	for i := 0; i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

type candidate struct {
	rank        uint64
	pos         int
	left, right int32
	out         int32
}

type mergeHeap []candidate

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].pos < h[b].pos
}
func (h mergeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
