package units

import "testing"

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		sep  string
		want string
	}{
		{0, " ", "0 B"},
		{1023, "", "1023B"},
		{1024, " ", "1.0 KiB"},
		{1536, "", "1.5KiB"},
		{5 << 30, " ", "5.0 GiB"},
		{1<<64 - 1, "", "16.0EiB"},
	} {
		if got := Bytes(tc.n, tc.sep); got != tc.want {
			t.Errorf("Bytes(%d, %q) = %q, want %q", tc.n, tc.sep, got, tc.want)
		}
	}
}
