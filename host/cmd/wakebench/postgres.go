package main

import (
	"context"
	"fmt"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
)

// pgRuns are measurement 8's runs: measurements 1 and 3 on a PostgreSQL
// store, and on bbolt beside them when measurement 8 runs alone. skipped
// says why there are none.
type pgRuns struct {
	asleep     []asleepRun
	bursts     []burstRun
	boltAsleep []asleepRun
	boltBursts []burstRun
	skipped    string
}

// postgres runs measurement 8: per run the asleep path and the burst, each
// on a host whose store is a fresh schema of its own; withBolt, each after
// the same on a bbolt host.
func (b *harness) postgres(ctx context.Context, withBolt bool) (pgRuns, error) {
	var out pgRuns
	if err := pgtest.Available(); err != nil {
		out.skipped = fmt.Sprintf("skipped: no PostgreSQL answers at %s", pgtest.Where())
		b.progressf("8 PostgreSQL store: %s", out.skipped)
		return out, nil
	}
	for i := range b.plan.runs {
		if withBolt {
			r, err := b.asleep(ctx, i, hostSpec{})
			if err != nil {
				return out, fmt.Errorf("asleep path on bbolt, run %d: %w", i+1, err)
			}
			b.progressf("8 bbolt asleep path, run %d/%d: concurrency %d p99 %s", i+1, b.plan.runs, b.plan.concurrency, ms(r.conc.p99))
			out.boltAsleep = append(out.boltAsleep, r)
		}
		{
			dsn, drop, err := pgtest.NewSchema(ctx, schemaPrefix)
			if err != nil {
				return out, fmt.Errorf("creating a schema: %w", err)
			}
			r, err := b.asleep(ctx, i, hostSpec{storeDSN: dsn})
			drop()
			if err != nil {
				return out, fmt.Errorf("asleep path, run %d: %w", i+1, err)
			}
			b.progressf("8 PostgreSQL asleep path, run %d/%d: concurrency %d p99 %s, starts %d", i+1, b.plan.runs, b.plan.concurrency, ms(r.conc.p99), r.starts)
			out.asleep = append(out.asleep, r)
		}
		if withBolt {
			r, err := b.burst(ctx, i, hostSpec{})
			if err != nil {
				return out, fmt.Errorf("burst on bbolt, run %d: %w", i+1, err)
			}
			b.progressf("8 bbolt burst, run %d/%d: wall %s", i+1, b.plan.runs, ms(r.wall))
			out.boltBursts = append(out.boltBursts, r)
		}
		{
			dsn, drop, err := pgtest.NewSchema(ctx, schemaPrefix)
			if err != nil {
				return out, fmt.Errorf("creating a schema: %w", err)
			}
			r, err := b.burst(ctx, i, hostSpec{storeDSN: dsn})
			drop()
			if err != nil {
				return out, fmt.Errorf("burst, run %d: %w", i+1, err)
			}
			b.progressf("8 PostgreSQL burst, run %d/%d: %d replies 200, starts %d, wall %s", i+1, b.plan.runs, r.ok, r.starts, ms(r.wall))
			out.bursts = append(out.bursts, r)
		}
	}
	return out, nil
}

// schemaPrefix starts the name of the schema of its own each PostgreSQL
// host of measurement 8 gets.
const schemaPrefix = "wakebench_"

// postgresRows are measurement 8's rows, beside bbolt's runs of
// measurements 1 and 3.
func postgresRows(p plan, pg pgRuns, bolt []asleepRun, boltBursts []burstRun) []row {
	if pg.skipped != "" {
		return []row{{"8", "PostgreSQL store ([store] backend = \"postgres\")", pg.skipped, noTarget, noTarget}}
	}
	conc := func(runs []asleepRun) (latency, []error, []int, float64) {
		var ls []latency
		var errs []error
		var starts []int
		var rates []float64
		for _, r := range runs {
			ls, errs, starts, rates = append(ls, r.conc), append(errs, r.errs...), append(starts, r.starts), append(rates, r.rate)
		}
		return medianLatency(ls), errs, starts, median(rates)
	}
	pl, perrs, pstarts, prate := conc(pg.asleep)
	bl, _, _, brate := conc(bolt)
	burst := func(runs []burstRun) (latency, time.Duration, []int, []int, []error) {
		var ls []latency
		var walls []time.Duration
		var starts, oks []int
		var errs []error
		for _, r := range runs {
			ls, walls = append(ls, r.lat), append(walls, r.wall)
			starts, oks, errs = append(starts, r.starts), append(oks, r.ok), append(errs, r.errs...)
		}
		return medianLatency(ls), median(walls), starts, oks, errs
	}
	pbl, pbw, pbs, pbo, pberrs := burst(pg.bursts)
	bbl, bbw, _, _, _ := burst(boltBursts)
	var fps []footprint
	for _, r := range pg.asleep {
		fps = append(fps, r.fp)
	}
	rows := []row{
		{"8", fmt.Sprintf("asleep path, concurrency %d (%d asks, a new session each), PostgreSQL store: p50 / p99 (throughput); bbolt", p.concurrency, p.concAsks),
			fmt.Sprintf("%s / %s (%.0f asks/s); bbolt %s / %s (%.0f asks/s)", ms(pl.p50), ms(pl.p99), prate, ms(bl.p50), ms(bl.p99), brate),
			"p99 < 20 ms", verdict(len(perrs) == 0 && pl.p99 < asleepP99Target && allEqual(pstarts, 1))},
		{"8", fmt.Sprintf("burst of %d concurrent asks, PostgreSQL store: start requests per run; replies 200 per run", p.burst),
			fmt.Sprintf("%s; %s", ints(pbs), ints(pbo)), "1; " + fmt.Sprint(p.burst), verdict(allEqual(pbs, 1) && allEqual(pbo, p.burst))},
		{"8", "burst, PostgreSQL store: wall time (per-ask p50 / p99); bbolt",
			fmt.Sprintf("%s (%s / %s); bbolt %s (%s / %s)", ms(pbw), ms(pbl.p50), ms(pbl.p99), ms(bbw), ms(bbl.p50), ms(bbl.p99)), noTarget, noTarget},
		{"8", "resident memory after the asleep path, PostgreSQL store: wakehost / conductor plugin / provider plugin",
			footprintText(fps), noTarget, noTarget},
	}
	rows = append(rows, errorRows("8", "PostgreSQL asleep-path asks", perrs, len(pg.asleep)*(p.seqAsks+p.concAsks))...)
	return append(rows, errorRows("8", "PostgreSQL burst asks", pberrs, len(pg.bursts)*p.burst)...)
}

// footprintText is the median VmRSS of the host and of each plugin over
// fps, in MiB.
func footprintText(fps []footprint) string {
	pick := func(f func(footprint) int64) string {
		var kib []int64
		for _, fp := range fps {
			kib = append(kib, f(fp))
		}
		return mib(median(kib))
	}
	return pick(func(f footprint) int64 { return f.host }) + " / " +
		pick(func(f footprint) int64 { return f.conductor }) + " / " +
		pick(func(f footprint) int64 { return f.provider })
}
