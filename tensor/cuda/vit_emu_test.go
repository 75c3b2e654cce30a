package cuda

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/model/modeltest"
)

// callCounter counts a device's launches by kernel name and its copies by
// kind and size.
type callCounter struct {
	device
	launches map[string]int
	copies   map[string]int // "htod N", "dtoh", "dtod", "memset"
}

func countCalls(b *Backend) *callCounter {
	c := &callCounter{device: b.dev, launches: map[string]int{}, copies: map[string]int{}}
	b.dev = c
	return c
}

func (c *callCounter) htod(dst uint64, src unsafe.Pointer, bytes uint64) error {
	c.copies[fmt.Sprintf("htod %d", bytes)]++
	return c.device.htod(dst, src, bytes)
}

func (c *callCounter) dtoh(dst unsafe.Pointer, src uint64, bytes uint64) error {
	c.copies["dtoh"]++
	return c.device.dtoh(dst, src, bytes)
}

func (c *callCounter) launch(name string, grid [3]uint32, block, shmem uint32, args []uint64) error {
	c.launches[name]++
	return c.device.launch(name, grid, block, shmem, args)
}

// TestEmulatedViTForward counts what a ViT forward with a LoRA adapter
// does on the device: the projections' biases before the GELU and the
// residual adds go in those ops' passes (add_bias_gelu, add_bias_residual)
// unless a LoRA term comes between (all-linear), the images are uploaded
// once (none for LossOf on uploaded ones), and the host waits for the
// device only for the loss and the logits.
func TestEmulatedViTForward(t *testing.T) {
	b := newEmuBackend(t)
	dir := modeltest.CommittedDir(t, "vit/vit-tiny")
	m, err := model.LoadViT(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	c := &m.Config
	layers, n := c.NumLayers, 2
	rng := rand.New(rand.NewPCG(1, 2))
	px := make([]float32, n*c.PixelsPerImage())
	for i := range px {
		px[i] = 2*rng.Float32() - 1
	}
	labels := []int{1, 2}
	pixelUpload := fmt.Sprintf("htod %d", 4*len(px)) // the patches: as many values as the pixels
	qv, err := lora.NewViT(m, lora.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	all, err := lora.LoadViT(filepath.Join(dir, "lora-all-linear"), m, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		adapter *lora.ViTAdapter
		want    map[string]int
	}{
		// query/value: q, k, v's biases alone (and the patches', the positions', the classifier's).
		{"query-value", qv, map[string]int{"add_bias": 3*layers + 3, "add_bias_gelu": layers, "add_bias_residual": 2 * layers}},
		// LoRA on o, up and down: their biases before their LoRA terms.
		{"all-linear", all, map[string]int{"add_bias": 6*layers + 3, "gelu": layers, "add": 2 * layers}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.adapter.Attach(m)
			defer func() { m.Adapter = nil }()
			calls := countCalls(b)
			_, _, err := m.Loss(px, n, labels)
			b.dev = calls.device
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for k := range tc.want {
				got[k] = calls.launches[k]
			}
			for _, k := range []string{"gelu", "add", "add_bias_gelu", "add_bias_residual"} {
				if _, ok := tc.want[k]; !ok && calls.launches[k] > 0 {
					got[k] = calls.launches[k]
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("launches %v, want %v", got, tc.want)
			}
			if calls.copies[pixelUpload] != 1 || calls.copies["dtoh"] != 2 {
				t.Errorf("%d uploads of the images and %d downloads, want 1 and 2 (the loss, the logits): %v", calls.copies[pixelUpload], calls.copies["dtoh"], calls.copies)
			}
		})
	}
	im, err := m.Images(px, n)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Free()
	calls := countCalls(b)
	_, _, err = m.LossOf(im, labels)
	b.dev = calls.device
	if err != nil {
		t.Fatal(err)
	}
	if calls.copies[pixelUpload] != 0 {
		t.Errorf("LossOf uploaded the images %d times", calls.copies[pixelUpload])
	}
}
