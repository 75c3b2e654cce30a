package eval

import (
	"math/bits"
	"slices"
)

// Longest common subsequences for ROUGE-L and ROUGE-Lsum in memory linear in
// the sequences' lengths. rouge_score fills the whole (m+1)×(n+1) table,
// which takes gigabytes for texts of a few hundred kilobytes; the results
// here are the same, bit for bit:
//
//   - the LCS length (ROUGE-L) by the bit-parallel row recurrence of
//     Allison–Dix/Hyyrö: row i of the table is kept as a bit vector whose bit j
//     is 0 where t[i][j+1] = t[i][j]+1, so t[i][j] is the number of zeros
//     among its first j bits; a row costs n/64 word operations.
//   - the LCS that rouge_score's _backtrack_norec picks (ROUGE-Lsum needs its
//     token positions) by divide and conquer over rows, as in Hirschberg's
//     algorithm: the backtrack's decision at cell (i, j) reads only t[i][j-1]
//     and t[i-1][j], so the part of the path in rows (a, b] can be followed
//     knowing only row a: compute row mid = (a+b)/2 from row a, follow the
//     path from (b, J) down to row mid (recursively), then from where it
//     reached row mid down to row a. Memory: one bit row per level,
//     O(n/64 · log m) words, reused; time O(m·n/64 · log m).
//
// Small inputs use the plain table, which is faster there.

// lcsTableCells is the table size up to which the plain table is used (a
// variable so that tests can send everything through the linear path).
var lcsTableCells = 1 << 16

// intern maps tokens to small integers, shared through ids.
func intern(tokens []string, ids map[string]int32) []int32 {
	out := make([]int32, len(tokens))
	for i, t := range tokens {
		id, ok := ids[t]
		if !ok {
			id = int32(len(ids))
			ids[t] = id
		}
		out[i] = id
	}
	return out
}

// wordMask is the bits of one 64-column word of the sequence along the row
// where a symbol occurs.
type wordMask struct {
	k    int
	mask uint64
}

// occurrences lists, for each symbol of can, the words of a row where it
// occurs (sorted by word).
func occurrences(can []int32) map[int32][]wordMask {
	occ := map[int32][]wordMask{}
	for j, c := range can {
		l := occ[c]
		k := j / 64
		if n := len(l); n > 0 && l[n-1].k == k {
			l[n-1].mask |= 1 << (j % 64)
		} else {
			l = append(l, wordMask{k, 1 << (j % 64)})
		}
		occ[c] = l
	}
	return occ
}

// onesRow is row 0 of the table (all differences 0) over n columns.
func onesRow(n int) []uint64 {
	v := make([]uint64, (n+63)/64)
	for k := range v {
		v[k] = ^uint64(0)
	}
	return v
}

// advance turns row i-1 (v) into row i for a row symbol whose occurrences
// along the row are occ: V' = (V + (V & M)) | (V &^ M).
func advance(v []uint64, occ []wordMask) {
	if len(occ) == 0 {
		return // no match in this row: the row is unchanged
	}
	var carry uint64
	li := 0
	for k := range v {
		var m uint64
		if li < len(occ) && occ[li].k == k {
			m = occ[li].mask
			li++
		} else if carry == 0 && (li == len(occ) || occ[li].k >= len(v)) {
			return // nothing left to add: the remaining words are unchanged
		}
		u := v[k] & m
		var s uint64
		s, carry = bits.Add64(v[k], u, carry)
		v[k] = s | (v[k] &^ m)
	}
}

// zerosBefore is t for a bit row: the number of zero bits among the first j.
func zerosBefore(v []uint64, j int) int {
	ones := 0
	k := 0
	for ; k < j/64; k++ {
		ones += bits.OnesCount64(v[k])
	}
	if r := j % 64; r > 0 {
		ones += bits.OnesCount64(v[k] & (1<<r - 1))
	}
	return j - ones
}

// zeroAt is 1 if bit j of v is 0.
func zeroAt(v []uint64, j int) int {
	return int(^v[j/64]>>(j%64)) & 1
}

// lcsLength is the length of a longest common subsequence of a and b.
func lcsLength(a, b []int32) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(b) > len(a) {
		a, b = b, a // the row runs along the shorter sequence
	}
	occ := occurrences(b)
	v := onesRow(len(b))
	for _, x := range a {
		advance(v, occ[x])
	}
	return zerosBefore(v, len(b))
}

// lcsIndices returns the indices into ref of the LCS of ref and can that
// rouge_score's _backtrack_norec picks, in increasing order.
func lcsIndices(ref, can []int32) []int { return (&lcsCandidate{can: can}).indices(ref) }

// lcsCandidate is one candidate sentence, matched against many reference
// sentences: its occurrence lists and scratch rows are made once.
type lcsCandidate struct {
	can  []int32
	occ  map[int32][]wordMask
	rows [][]uint64
}

// indices is lcsIndices(ref, c.can).
func (c *lcsCandidate) indices(ref []int32) []int {
	can := c.can
	if len(ref) == 0 || len(can) == 0 {
		return nil
	}
	var idx []int
	if (len(ref)+1)*(len(can)+1) <= lcsTableCells {
		idx = backtrackTable(ref, can)
	} else {
		if c.occ == nil {
			c.occ = occurrences(can)
		}
		l := &lcsPath{ref: ref, can: can, occ: c.occ, rows: c.rows}
		l.follow(0, 0, len(ref), len(can), onesRow(len(can)))
		c.rows = l.rows
		idx = l.idx
	}
	slices.Reverse(idx) // collected back to front
	return idx
}

// backtrackTable is rouge_score's _backtrack_norec over the full table.
func backtrackTable(ref, can []int32) []int {
	m, n := len(ref), len(can)
	t := make([]int32, (m+1)*(n+1))
	at := func(i, j int) int32 { return t[i*(n+1)+j] }
	for i := 1; i <= m; i++ {
		for j := 1; j <= n; j++ {
			if ref[i-1] == can[j-1] {
				t[i*(n+1)+j] = at(i-1, j-1) + 1
			} else {
				t[i*(n+1)+j] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	var idx []int
	i, j := m, n
	for i > 0 && j > 0 {
		switch {
		case ref[i-1] == can[j-1]:
			idx = append(idx, i-1)
			i--
			j--
		case at(i, j-1) > at(i-1, j):
			j--
		default:
			i--
		}
	}
	return idx
}

// lcsPath follows the backtrack in linear memory.
type lcsPath struct {
	ref, can []int32
	occ      map[int32][]wordMask
	idx      []int      // matched ref indices, back to front
	rows     [][]uint64 // one scratch row per recursion depth
}

// row returns depth's scratch row holding a copy of the first J columns of src.
// A call at depth d writes only rows d and deeper, and reads rows above d.
func (l *lcsPath) row(depth, J int, src []uint64) []uint64 {
	for len(l.rows) <= depth {
		l.rows = append(l.rows, make([]uint64, (len(l.can)+63)/64))
	}
	r := l.rows[depth][:(J+63)/64]
	copy(r, src)
	return r
}

// follow continues the backtrack from cell (b, J) until it reaches row a or
// column 0, given row a's bits over at least J columns, and returns the
// column where it reached row a (0 when it ended).
func (l *lcsPath) follow(depth, a, b, J int, rowA []uint64) int {
	if J == 0 || a == b {
		return J
	}
	if b-a == 1 {
		return l.band(depth, b, J, rowA)
	}
	mid := (a + b) / 2
	row := l.row(depth, J, rowA)
	for i := a; i < mid; i++ {
		advance(row, l.occ[l.ref[i]])
	}
	jm := l.follow(depth+1, mid, b, J, row)
	return l.follow(depth+1, a, mid, jm, rowA)
}

// band follows the path along row b (from column J) until it steps up to
// row b-1, whose bits are rowA.
func (l *lcsPath) band(depth, b, J int, rowA []uint64) int {
	rowB := l.row(depth, J, rowA)
	advance(rowB, l.occ[l.ref[b-1]])
	ta, tb := zerosBefore(rowA, J), zerosBefore(rowB, J) // t[b-1][J], t[b][J]
	x := l.ref[b-1]
	for j := J; j > 0; j-- {
		if x == l.can[j-1] {
			l.idx = append(l.idx, b-1)
			return j - 1
		}
		left := tb - zeroAt(rowB, j-1) // t[b][j-1]
		if left <= ta {                // t[b][j-1] > t[b-1][j] is false: up
			return j
		}
		tb, ta = left, ta-zeroAt(rowA, j-1)
	}
	return 0
}
