package parallel

import (
	"fmt"
	"sync/atomic"
	"testing"
)

func TestForRunsEveryIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {7, 1}, {100, 3}, {1000, 0}, {5, 64}} {
		counts := make([]atomic.Int32, tc.n)
		For(tc.n, tc.workers, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Errorf("n=%d workers=%d: index %d ran %d times", tc.n, tc.workers, i, c)
			}
		}
	}
}

func ExampleFor() {
	squares := make([]int, 5)
	For(len(squares), 2, func(i int) { squares[i] = i * i })
	fmt.Println(squares) // the same whatever the number of workers
	// Output: [0 1 4 9 16]
}
