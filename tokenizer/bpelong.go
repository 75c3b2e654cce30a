package tokenizer

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
	h := make(mergeHeap, 0, n)
	push := func(i int) {
		j := next[i]
		if j < 0 {
			return
		}
		if m, ok := t.merges[pairKey(syms[i], syms[j])]; ok {
			h.push(candidate{rank: m >> 32, pos: i, left: syms[i], right: syms[j], out: int32(uint32(m))})
		}
	}
	for i := 0; i < n-1; i++ {
		push(i)
	}
	for len(h) > 0 {
		c := h.pop()
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

// mergeHeap is a binary min-heap of candidates by (rank, position), typed
// (container/heap's interface boxes every candidate it is pushed: an
// allocation a merge, most of a SentencePiece-style encoding's time).
type mergeHeap []candidate

func (c candidate) before(d candidate) bool {
	if c.rank != d.rank {
		return c.rank < d.rank
	}
	return c.pos < d.pos
}

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *mergeHeap) pop() candidate {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q[l].before(q[m]) {
			m = l
		}
		if r < len(q) && q[r].before(q[m]) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
