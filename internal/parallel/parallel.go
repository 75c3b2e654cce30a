// Package parallel runs independent pieces of work on a few goroutines. It
// is the module's one parallel loop outside the CPU backend (the noise, the
// ZO engine, a model's random weights, the synthetic experiments): the
// backend keeps its own loops and a GEMM pool whose goroutines live as long
// as the program (tensor/cpu's Workers says why).
package parallel

import (
	"runtime"
	"sync"
)

// For runs f(0), …, f(n−1) on up to workers goroutines (0 or less:
// runtime.GOMAXPROCS(0)), handing out the indices in increasing order. The
// calls must write disjoint outputs: which goroutine runs an index, and
// when, must not change a result. A single worker (or n ≤ 1) runs every call
// on the calling goroutine.
func For(n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		i := next
		next++
		return i
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := take(); i < n; i = take() {
				f(i)
			}
		}()
	}
	wg.Wait()
}
