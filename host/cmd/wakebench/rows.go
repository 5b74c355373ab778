package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The targets the rows are judged against.
const (
	asleepP99Target   = 20 * time.Millisecond  // measurement 1: p99 at concurrency 64
	firstAskTarget    = 20 * time.Millisecond  // measurement 1: the ask that fires the wake does not wait for it
	readyAdded50      = 350 * time.Microsecond // measurements 2 and 6: added to a non-streaming completion at p50
	readyAdded99      = time.Millisecond       // ... and at p99
	floorRatio        = 2.5                    // measurements 2 and 6: the host's added time at p50 within this multiple of the floor's
	readinessLagLimit = clientPoll             // measurement 4: median within one client poll
)

// asleepRows are measurement 1's rows.
func asleepRows(p plan, runs []asleepRun) []row {
	var first []time.Duration
	var rates []float64
	var seq, conc []latency
	var starts []int
	var errs []error
	held := 0
	for _, r := range runs {
		first, rates = append(first, r.first), append(rates, r.rate)
		seq, conc = append(seq, r.seq), append(conc, r.conc)
		starts = append(starts, r.starts)
		errs = append(errs, r.errs...)
		if r.held {
			held++
		}
	}
	s, c, f := medianLatency(seq), medianLatency(conc), median(first)
	clean := len(errs) == 0
	rows := []row{
		{"1", "asleep path: the first ask, which fires the wake (the conductor holds the start open)",
			ms(f), "< 20 ms: not waiting for the start", verdict(clean && f < firstAskTarget)},
		{"1", fmt.Sprintf("asleep path, concurrency 1 (%d asks, a new session each): p50 / p99", p.seqAsks),
			ms(s.p50) + " / " + ms(s.p99), noTarget, noTarget},
		{"1", fmt.Sprintf("asleep path, concurrency %d (%d asks, a new session each): p50 / p99 (throughput)", p.concurrency, p.concAsks),
			fmt.Sprintf("%s / %s (%.0f asks/s)", ms(c.p50), ms(c.p99), median(rates)), "p99 < 20 ms", verdict(clean && c.p99 < asleepP99Target)},
		{"1", "asleep path: start requests per run; the start still held open at the last reply",
			fmt.Sprintf("%s; held in %d/%d runs", ints(starts), held, len(runs)),
			"exactly 1", verdict(allEqual(starts, 1) && held == len(runs))},
	}
	return append(rows, errorRows("1", "asleep-path asks", errs, len(runs)*(p.seqAsks+p.concAsks))...)
}

// readyRows are measurement 2's rows.
func readyRows(p plan, runs []readyRun) []row {
	var viaHost, direct, viaFloor []latency
	var added50, added99, floor50, floor99 []time.Duration
	var errs []error
	var split legRuns
	for _, r := range runs {
		split.add(r.legs)
		viaHost, direct, viaFloor = append(viaHost, r.host), append(direct, r.direct), append(viaFloor, r.floor)
		added50, added99 = append(added50, r.added.p50), append(added99, r.added.p99)
		floor50, floor99 = append(floor50, r.floorAdded.p50), append(floor99, r.floorAdded.p99)
		errs = append(errs, r.errs...)
	}
	h, d, f := medianLatency(viaHost), medianLatency(direct), medianLatency(viaFloor)
	a50, a99, f50, f99 := median(added50), median(added99), median(floor50), median(floor99)
	clean := len(errs) == 0
	rows := []row{
		{"2", fmt.Sprintf("ready path through POST /api/chat (%d turns, concurrency 1, a new session each, model delay 0): p50 / p99", p.readyPairs),
			ms(h.p50) + " / " + ms(h.p99), noTarget, noTarget},
		{"2", "the same completion sent straight to the model, POST {proxyUrl}/v1/chat/completions, interleaved with the above: p50 / p99",
			ms(d.p50) + " / " + ms(d.p99), noTarget, noTarget},
		{"2", "the same completion through the floor, a bare httputil.ReverseProxy in a process of its own, interleaved: p50 / p99",
			ms(f.p50) + " / " + ms(f.p99), noTarget, noTarget},
		{"2", "added by the floor (floor − direct, per run): p50 / p99", us(f50) + " / " + us(f99), noTarget, noTarget},
		{"2", "added by the host (host − direct, per run): p50 / p99",
			us(a50) + " / " + us(a99), "< 0.35 / 1.0 ms", verdict(clean && a50 < readyAdded50 && a99 < readyAdded99)},
		{"2", "added by the host, as a multiple of the floor's added time at p50",
			ratio(a50, f50), "≤ 2.5×", verdict(clean && f50 > 0 && float64(a50) <= floorRatio*float64(f50))},
	}
	rows = append(rows, split.rows("2", "the ready path, split at the model", wholeLegs)...)
	return append(rows, errorRows("2", "ready-path requests", errs, len(runs)*3*p.readyPairs)...)
}

// ratio is a/b with one decimal, "–" when b is not positive.
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

// burstRows are measurement 3's rows.
func burstRows(p plan, runs []burstRun) []row {
	var starts, oks []int
	var walls []time.Duration
	var lats []latency
	var errs []error
	for _, r := range runs {
		starts, oks = append(starts, r.starts), append(oks, r.ok)
		walls, lats = append(walls, r.wall), append(lats, r.lat)
		errs = append(errs, r.errs...)
	}
	l := medianLatency(lats)
	rows := []row{
		{"3", fmt.Sprintf("burst of %d concurrent asks on an asleep pod (fresh host and pod, a new session and connection each): start requests per run", p.burst),
			ints(starts), "1", verdict(allEqual(starts, 1))},
		{"3", "burst: replies 200 per run", ints(oks), strconv.Itoa(p.burst), verdict(allEqual(oks, p.burst))},
		{"3", "burst: wall time, all asks released → the last reply (per-ask p50 / p99)",
			fmt.Sprintf("%s (%s / %s)", ms(median(walls)), ms(l.p50), ms(l.p99)), noTarget, noTarget},
	}
	return append(rows, errorRows("3", "burst asks", errs, len(runs)*p.burst)...)
}

// readinessRows are measurement 4's rows, from the runs with the default
// watch_poll (long) and with shortWatchPoll (short).
func readinessRows(long, short []readinessRun) []row {
	// lags lists the runs' lags, and the median of each less its poll phase:
	// the time from the poll reaching the simulator to the client having
	// the host's answer.
	lags := func(runs []readinessRun) (xs []time.Duration, own time.Duration, ok bool) {
		var owns []time.Duration
		ok = true
		for _, r := range runs {
			xs = append(xs, r.lag)
			owns = append(owns, r.lag-r.phase)
			ok = ok && r.starts == 1
		}
		return xs, median(owns), ok
	}
	longLags, longOwn, longOK := lags(long)
	shortLags, shortOwn, shortOK := lags(short)
	lm, sm := median(longLags), median(shortLags)
	result := func(m, own time.Duration, xs []time.Duration) string {
		return fmt.Sprintf("%s (runs: %s); of which from the poll reaching the simulator to the client: %s", ms(m), durations(xs), ms(own))
	}
	what := func(poll time.Duration) string {
		return fmt.Sprintf("readiness lag, watch_poll %s: the simulated model answers → a client polling GET /api/pods/qwen every %v (phase spread over the runs) first reads \"ready\": true",
			watchPollName(poll), clientPoll)
	}
	met := verdict(longOK && shortOK && lm < readinessLagLimit && sm < readinessLagLimit)
	var watch []time.Duration
	for _, r := range short {
		watch = append(watch, r.watchLag)
	}
	longLogged := 0
	for _, r := range long {
		if r.watchLogged {
			longLogged++
		}
	}
	rows := []row{
		{"4", what(0), result(lm, longOwn, longLags), "< 20 ms (one poll) with either watch_poll", met},
		{"4", what(shortWatchPoll), result(sm, shortOwn, shortLags), "< 20 ms (one poll) with either watch_poll", met},
		{"4", fmt.Sprintf("the machine records the outcome: the model answers → \"wake ready for pod\" logged (by whichever sees it first: the polling client's view, or the watch's read or probe), watch_poll 1s / %s",
			watchPollName(0)),
			fmt.Sprintf("%s (runs: %s) / logged within the run in %d of %d runs",
				ms(median(watch)), durations(watch), longLogged, len(long)), noTarget, noTarget},
	}
	if !longOK || !shortOK {
		rows = append(rows, row{"4", "readiness runs whose ask did not make exactly one start request", "some", "0", "no"})
	}
	return rows
}

// footprintRows are measurement 5's rows: the footprints sampled at the end
// of each run of measurements 1, 2 and 3, and every host's start-up time.
func footprintRows(fps [3][]footprint, startups []time.Duration) []row {
	rss := func(pick func(footprint) int64) string {
		var parts []string
		for _, runs := range fps {
			var kib []int64
			for _, fp := range runs {
				kib = append(kib, pick(fp))
			}
			parts = append(parts, mib(median(kib)))
		}
		return strings.Join(parts, " / ")
	}
	return []row{
		{"5", "resident memory (VmRSS, MiB) of wakehost after measurements 1 / 2 / 3",
			rss(func(f footprint) int64 { return f.host }), noTarget, noTarget},
		{"5", "… of its wake-plugin-conductor child, after 1 / 2 / 3",
			rss(func(f footprint) int64 { return f.conductor }), noTarget, noTarget},
		{"5", "… of its wake-plugin-provider-openai child, after 1 / 2 / 3",
			rss(func(f footprint) int64 { return f.provider }), noTarget, noTarget},
		{"5", "proportional memory (Pss, MiB) of wakehost and both plugins together, after 1 / 2 / 3 (the plugins are built in, run from wakehost's executable: VmRSS counts its pages in each)",
			rss(func(f footprint) int64 { return f.pss }), noTarget, noTarget},
		{"5", fmt.Sprintf("wakehost process start → /readyz 200 (all %d host starts; max)", len(startups)),
			fmt.Sprintf("%s (max %s)", ms(median(startups)), ms(slicesMax(startups))), noTarget, noTarget},
	}
}

// errorRows is one row counting the requests that failed, with the first
// error, or none when none did. Every failure is also on standard error.
func errorRows(num, what string, errs []error, total int) []row {
	if len(errs) == 0 {
		return nil
	}
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "wakebench:", what+":", err)
	}
	return []row{{num, what + " that failed", fmt.Sprintf("%d of %d (first: %.120s)", len(errs), total, errs[0]), "0", "no"}}
}

// ints lists xs: "1, 1, 1".
func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// durations lists xs in milliseconds with one decimal: "12.3, 8.1".
func durations(xs []time.Duration) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.1f", float64(x)/float64(time.Millisecond))
	}
	return strings.Join(s, ", ")
}

// allEqual reports whether xs is not empty and every x is want.
func allEqual(xs []int, want int) bool {
	for _, x := range xs {
		if x != want {
			return false
		}
	}
	return len(xs) > 0
}

// slicesMax is the largest of xs, 0 for none.
func slicesMax(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}
