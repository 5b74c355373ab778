package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100) // 1..100 ms, shuffled by a stride
	for i := range hundred {
		hundred[i] = time.Duration((i*37)%100+1) * time.Millisecond
	}
	tests := []struct {
		name string
		xs   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample, p50", ms(7), 50, 7 * time.Millisecond},
		{"one sample, p99", ms(7), 99, 7 * time.Millisecond},
		{"unsorted, p50 of 5 is the 3rd", ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{"p50 of 4 is the 2nd, not a mean", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p100 is the maximum", ms(4, 1, 3, 2), 100, 4 * time.Millisecond},
		{"p0 is the minimum", ms(4, 1, 3, 2), 0, 1 * time.Millisecond},
		{"p99 of 1..100 is 99 (exact rank)", hundred, 99, 99 * time.Millisecond},
		{"p50 of 1..100 is 50", hundred, 50, 50 * time.Millisecond},
		{"p99 of 10 is the maximum", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p90 of 10 is the 9th", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
		{"ties", ms(2, 2, 2, 9), 75, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]time.Duration(nil), tt.xs...)
			if got := percentile(tt.xs, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
			}
			if diff := cmp.Diff(before, tt.xs); diff != "" {
				t.Errorf("percentile modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []time.Duration
		want time.Duration
	}{
		{"empty", nil, 0},
		{"odd", []time.Duration{9, 1, 5}, 5},
		{"even: mean of the middle two", []time.Duration{4, 1, 10, 2}, 3},
		{"negative values", []time.Duration{-4, 2, -1}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.xs); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestRenderTable(t *testing.T) {
	rows := []row{
		{"1", "asleep path, concurrency 64: p50 / p99", ms(1250*time.Microsecond) + " / " + ms(9*time.Millisecond), "p99 < 20 ms", verdict(true)},
		{"2", "added by the host: p50 / p99", us(312*time.Microsecond) + " / " + us(-4*time.Microsecond), "p50 < 1 ms", verdict(false)},
		{"5", "a cell with a | in it", mib(20480), noTarget, noTarget},
	}
	got := renderTable("wakebench 2026-09-09 12:26 UTC · 2 cores", rows)
	want := `wakebench 2026-09-09 12:26 UTC · 2 cores

| # | measure | result (median) | target | met |
|---|---|---|---|---|
| 1 | asleep path, concurrency 64: p50 / p99 | 1.25 ms / 9.00 ms | p99 < 20 ms | yes |
| 2 | added by the host: p50 / p99 | +312 µs / -4 µs | p50 < 1 ms | no |
| 5 | a cell with a \| in it | 20.0 | — | — |
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renderTable (-want +got):\n%s", diff)
	}
}

func TestParentPID(t *testing.T) {
	tests := []struct {
		stat   string
		want   int
		wantOK bool
	}{
		{"1234 (wakehost) S 99 1234 1234 0 -1", 99, true},
		{"1234 (a (b) c) R 42 1 1", 42, true}, // a command name with spaces and parentheses
		{"garbage", 0, false},
		{"1 (x)", 0, false},
	}
	for _, tt := range tests {
		got, ok := parentPID([]byte(tt.stat))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parentPID(%q) = %d, %t; want %d, %t", tt.stat, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestKibLine: the memory lines of /proc are read in KiB, and a file
// without the line is an error that names it.
func TestKibLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "smaps_rollup")
	if err := os.WriteFile(path, []byte("Rss:               26412 kB\nPss:               13876 kB\nPss_Anon:           7400 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := kibLine(path, "Pss:"); err != nil || got != 13876 {
		t.Errorf("kibLine(Pss:) = %d, %v; want 13876", got, err)
	}
	if _, err := kibLine(path, "VmRSS:"); err == nil || !strings.Contains(err.Error(), "VmRSS:") {
		t.Errorf("kibLine of a missing line: %v, want an error naming it", err)
	}
	if got, err := pss(os.Getpid()); err != nil || got <= 0 {
		t.Errorf("pss of this process = %d, %v; want a positive size", got, err)
	}
}
