package train

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTrainableLine(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {596049920, "596,049,920"}, {-1234567, "-1,234,567"}} {
		if got := groupDigits(tc.n); got != tc.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		layers []int
		want   string
	}{{[]int{3}, "layer 3"}, {[]int{27, 26, 25, 24}, "layers 24 to 27"}, {[]int{9, 1, 5}, "layers 1, 5, 9"}} {
		if got := layerList(tc.layers); got != tc.want {
			t.Errorf("layerList(%v) = %q, want %q", tc.layers, got, tc.want)
		}
	}
	// PEFT 0.15's print_trainable_parameters, run on transformers' models
	// (Qwen3-0.6B's config, LoRA r 16 on q_proj, v_proj: "trainable params:
	// 2,293,760 || all params: 598,343,680 || trainable%: 0.3834"; ViT-B/16
	// with 37 classes, r 16 on query, value and the classifier: "618,277 ||
	// 86,445,386 || 0.7152"): the adapter counts among all the parameters.
	for _, tc := range []struct {
		trainable, base int64
		want            string
	}{
		{2293760, 596049920, "trainable: 2,293,760 of 598,343,680 parameters (0.383 %): x"},
		{618277, 85827109, "trainable: 618,277 of 86,445,386 parameters (0.715 %): x"},
	} {
		if got := adapterLine(tc.trainable, tc.base, "x"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	if got, want := trainableLine(102784, 102784, "full"), "trainable: 102,784 of 102,784 parameters (100 %): full"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestTrainableLineOfARun: a LoRA run's log counts its adapter as PEFT
// does. On the demo's model (102,784 parameters), PEFT 0.15's
// print_trainable_parameters said "trainable params: 3,584 || all params:
// 106,368 || trainable%: 3.3694" for r 8 on q_proj, v_proj, and "16,384 ||
// 119,168 || 13.7487" on all-linear; the run said 3.49 % and 15.9 % of
// 102,784 (and 128 % at r 64 on all-linear).
func TestTrainableLineOfARun(t *testing.T) {
	dir, cfg := demoConfig(t, 1)
	for i, tc := range []struct {
		set  []string
		want string
	}{
		{nil, "trainable: 3,584 of 106,368 parameters (3.37 %): LoRA r 8, alpha 16 on q_proj, v_proj\n"},
		{[]string{"adapter.targets=[all-linear]"}, "trainable: 16,384 of 119,168 parameters (13.7 %): LoRA r 8, alpha 16 on q_proj, k_proj"},
	} {
		var log strings.Builder
		set := append(append(slices.Clone(trustSet), tc.set...), "output.dir="+filepath.Join(dir, fmt.Sprint("run", i)))
		if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), tc.want) {
			t.Errorf("%v: the log has no %q:\n%s", tc.set, tc.want, log.String())
		}
	}
}
