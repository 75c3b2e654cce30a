package train

import "testing"

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
	// Qwen3-0.6B's count (transformers' num_parameters) and LoRA r 16 on q_proj, v_proj.
	want := "trainable: 2,293,760 of 596,049,920 parameters (0.385 %): LoRA r 16, alpha 16 on q_proj, v_proj"
	if got := trainableLine(2293760, 596049920, "LoRA r 16, alpha 16 on q_proj, v_proj"); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
