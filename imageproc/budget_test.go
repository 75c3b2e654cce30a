package imageproc

import (
	"bytes"
	"image"
	"image/png"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBudgetBoundsPixelsInFlight: concurrent holders of a Budget never hold
// more pixels than it has, images of the largest size go through it two at
// a time, and a file whose header is not read takes nothing.
func TestBudgetBoundsPixelsInFlight(t *testing.T) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1<<13, 1<<12))); err != nil { // maxPixels
		t.Fatal(err)
	}
	big := buf.Bytes()
	if got := headerPixels(big); got != maxPixels {
		t.Fatalf("header pixels %d, want %d", got, maxPixels)
	}
	b := NewBudget()
	var held, most atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release := b.Acquire(big)
			now := held.Add(maxPixels)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond) // the others try meanwhile
			held.Add(-maxPixels)
			release()
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 2*maxPixels {
		t.Errorf("at most %d pixels held at once, want the budget's %d", m, 2*maxPixels)
	}
	for _, bad := range [][]byte{nil, []byte("GIF89a"), big[:20]} {
		release := b.Acquire(bad)
		release()
	}
	if b.free != b.size {
		t.Errorf("%d pixels free after every release, want %d", b.free, b.size)
	}
}

// TestProgressiveJPEGCountsTwice: a progressive JPEG takes twice its
// pixels of a budget (its coefficients stay through its scans: 12-16
// bytes a pixel where the other files take at most 8).
func TestProgressiveJPEGCountsTwice(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int
	}{
		{"scene_97x61.jpg", 97 * 61},
		{"pilprog_97x61.jpg", 2 * 97 * 61},
		{"pilproggray_97x61.jpg", 2 * 97 * 61},
		{"scene_97x61.png", 97 * 61},
	} {
		if got := headerPixels(readTestdata(t, tc.file)); got != tc.want {
			t.Errorf("%s: %d pixels of the budget, want %d", tc.file, got, tc.want)
		}
	}
}
