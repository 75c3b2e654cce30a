package bytesize

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {8, "8 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {29384704, "28.0 MiB"}, {3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}, {5 << 50, "5120.0 TiB"},
		{1<<20 - 1, "1.0 MiB"}, {1<<30 - 1, "1.0 GiB"}, {1<<40 - 1, "1.0 TiB"}, {1023*1024 + 972, "1023.9 KiB"}} {
		if got := String(tc.n); got != tc.want {
			t.Errorf("String(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
