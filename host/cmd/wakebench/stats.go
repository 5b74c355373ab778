package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// percentile is the nearest-rank p-th percentile of xs (0 < p <= 100): the
// smallest sample with at least p% of the samples at or below it. xs is not
// modified; an empty xs gives 0. p at or below 0 gives the minimum.
func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	// p*n before the division keeps integral ranks exact (99*100/100 is 99,
	// where 0.99*100 is not).
	rank := int(math.Ceil(p * float64(len(s)) / 100))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// median is the middle of xs, or the mean of the two middle values when
// there is an even number of them; 0 for an empty xs. xs is not modified.
func median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// latency is a series' p50 and p99.
type latency struct{ p50, p99 time.Duration }

func latencyOf(xs []time.Duration) latency {
	return latency{percentile(xs, 50), percentile(xs, 99)}
}

// medianLatency is the median p50 and the median p99 of several runs.
func medianLatency(runs []latency) latency {
	var p50, p99 []time.Duration
	for _, l := range runs {
		p50 = append(p50, l.p50)
		p99 = append(p99, l.p99)
	}
	return latency{median(p50), median(p99)}
}

// ms formats d in milliseconds with two decimals: "1.25 ms".
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// us formats d in whole microseconds with a sign: "+312 µs", "-4 µs".
func us(d time.Duration) string {
	return fmt.Sprintf("%+d µs", d.Round(time.Microsecond)/time.Microsecond)
}

// mib formats a size in KiB (as /proc reports it) in MiB with one decimal.
func mib(kib int64) string {
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}
