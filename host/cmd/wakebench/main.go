// Command wakebench is wake-on-chat's benchmark harness, run by `make bench`.
// It builds wakehost and both plugins, runs the simulator of the conductor and
// the model inside its own process on loopback, starts the real host as a
// child process against it, and prints one Markdown table:
//
//  1. the asleep path's reply latency, while the start request is held open;
//  2. what the host adds to a completion on a ready pod, measured side by
//     side with the same completion sent straight to the model and through
//     a bare reverse proxy (floor.go), each request also split at the model
//     into the legs before, in and after it (trace.go);
//  3. a burst of concurrent asks on an asleep pod: one start, every reply;
//  4. how soon GET /api/pods/{name} says "ready" once the model answers;
//  5. the processes' resident memory and the host's start-up time;
//  6. the OpenAI-compatible door: streaming time to first byte and relay
//     cost per chunk, 64 concurrent streams (order, CPU per chunk), and the
//     non-streaming ready path, each beside the model called directly and
//     the floor, and split at the model as in 2;
//  7. wake efficiency over a simulated working day (population.go): three
//     populations of users (legacy askers, wait/resume clients on the event
//     stream, OpenAI clients in hold mode), each on an in-process host and
//     simulator with a scaled clock, side by side; printed as a second
//     table, one column per population; and the GPU-up time of the same
//     days under four stop policies (cost.go: the pod stopping itself, as
//     today; a pod nothing stops; the host's stop_after_idle; and with
//     stop_unserved_after), as a third table, one line per population and
//     policy;
//  8. measurements 1 and 3 again on a host whose store is PostgreSQL (a
//     fresh schema per run on the server at WAKE_TEST_POSTGRES_DSN, default
//     postgres://postgres@127.0.0.1:5432/test), beside bbolt's runs of the
//     same bench; in the first table; skipped, saying so, when no server
//     answers.
//
// Each figure is the median of -runs runs, each on a fresh simulator and a
// fresh host.
//
//	go run ./host/cmd/wakebench [-runs 5] [-quick] [-only 1-6|2|6|7|8] [-out FILE]
//
// It builds with the go command on PATH, from the module of the working
// directory. It talks to 127.0.0.1 only, bounds every loop in count and time,
// and leaves nothing running: each host gets SIGTERM (and the kernel kills it
// if the harness dies first). The table says whether each target was met;
// the exit status is non-zero only when something could not be measured.
// `make test` does not run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/binaries"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// plan is how much the bench measures.
type plan struct {
	runs        int // per measurement; each figure is their median
	seqAsks     int // measurement 1 at concurrency 1
	concAsks    int // measurement 1 at concurrency `concurrency`
	concurrency int
	readyPairs  int     // measurement 2: turns through the host, and as many direct
	warmup      int     // measurement 2: pairs before measuring
	burst       int     // measurement 3
	doorPairs   int     // measurement 6: streams and non-streaming completions through the door, and as many direct
	day         dayPlan // measurement 7
}

var (
	fullPlan  = plan{runs: 5, seqAsks: 200, concAsks: 2000, concurrency: 64, readyPairs: 1000, warmup: 100, burst: 1000, doorPairs: 300, day: fullDay}
	quickPlan = plan{runs: 2, seqAsks: 50, concAsks: 400, concurrency: 64, readyPairs: 200, warmup: 20, burst: 1000, doorPairs: 60, day: quickDay}
)

func main() {
	if target := os.Getenv(floorEnv); target != "" {
		if err := serveFloor(target); err != nil {
			fmt.Fprintln(os.Stderr, "wakebench floor:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wakebench:", err)
		os.Exit(1)
	}
}

func run() error {
	runs := flag.Int("runs", 0, "runs per measurement, each figure their median (default 5; 2 with -quick)")
	quick := flag.Bool("quick", false, "a smoke test: fewer runs and requests")
	out := flag.String("out", "", "also write the table to this file")
	only := flag.String("only", "", `run only these measurements: "1-6" (the table), "2" (the ready path alone), "6" (the OpenAI door alone), "7" (the simulated day) or "8" (the PostgreSQL store, with bbolt's runs of 1 and 3 beside it)`)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", flag.Args())
	}
	if *only != "" && *only != "1-6" && *only != "2" && *only != "6" && *only != "7" && *only != "8" {
		return fmt.Errorf(`-only must be "1-6", "2", "6", "7" or "8", not %q`, *only)
	}
	p := fullPlan
	if *quick {
		p = quickPlan
	}
	switch {
	case *runs < 0:
		return fmt.Errorf("-runs must be positive, not %d", *runs)
	case *runs > 0:
		p.runs = *runs
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began, loadBefore := time.Now(), loadAvg()
	work, err := os.MkdirTemp("", "wakebench-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	defer os.RemoveAll(work)
	b := &harness{plan: p, work: work, binDir: filepath.Join(work, "bin")}
	b.progressf("building wakehost and the plugins")
	if err := binaries.Build(ctx, b.binDir); err != nil {
		return err
	}
	var table string
	if *only != "7" {
		var rows []row
		var err error
		switch *only {
		case "2":
			rows, err = b.measureReady(ctx)
		case "6":
			rows, err = b.measureDoor(ctx)
		case "8":
			rows, err = b.measurePostgres(ctx, nil, nil)
		default:
			rows, err = b.measure(ctx, *only == "")
		}
		if err != nil {
			return err
		}
		table = renderTable(header(p, *quick, time.Now(), loadBefore, loadAvg(), fsType(work)), rows)
	}
	if *only == "" || *only == "7" {
		b.progressf("7 wake efficiency: three populations under %d stop policies, a simulated %s day each, side by side", len(stopPolicies), p.day.length)
		days, err := b.days(ctx, p.day)
		if err != nil {
			return err
		}
		if table != "" {
			table += "\n"
		}
		table += days
	}
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			return fmt.Errorf("-out: %w", err)
		}
	}
	b.progressf("done in %v", time.Since(began).Round(time.Second))
	return nil
}

// harness runs the measurements.
type harness struct {
	plan   plan
	work   string // a temporary directory, removed at the end
	binDir string // the binaries built from the module
}

// progressf reports progress on standard error; the table goes to standard
// output.
func (b *harness) progressf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wakebench: "+format+"\n", args...)
}

// measure runs measurements 1-6 -runs times and returns the table's rows;
// withPostgres adds measurement 8's, beside the runs of 1 and 3.
func (b *harness) measure(ctx context.Context, withPostgres bool) ([]row, error) {
	p := b.plan
	var startups []time.Duration
	var fps [3][]footprint // after measurements 1, 2 and 3

	var asleep []asleepRun
	for i := range p.runs {
		r, err := b.asleep(ctx, i, hostSpec{})
		if err != nil {
			return nil, fmt.Errorf("measurement 1 (asleep path), run %d: %w", i+1, err)
		}
		b.progressf("1 asleep path, run %d/%d: concurrency 1 p99 %s, concurrency %d p99 %s, starts %d",
			i+1, p.runs, ms(r.seq.p99), p.concurrency, ms(r.conc.p99), r.starts)
		asleep, startups, fps[0] = append(asleep, r), append(startups, r.startup), append(fps[0], r.fp)
	}
	ready, err := b.readyRuns(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range ready {
		startups, fps[1] = append(startups, r.startup), append(fps[1], r.fp)
	}
	var bursts []burstRun
	for i := range p.runs {
		r, err := b.burst(ctx, i, hostSpec{})
		if err != nil {
			return nil, fmt.Errorf("measurement 3 (burst), run %d: %w", i+1, err)
		}
		b.progressf("3 burst, run %d/%d: %d replies 200, starts %d, wall %s", i+1, p.runs, r.ok, r.starts, ms(r.wall))
		bursts, startups, fps[2] = append(bursts, r), append(startups, r.startup), append(fps[2], r.fp)
	}
	var readiness [2][]readinessRun // watch_poll default (5s), short
	for i := range p.runs {
		for k, poll := range []time.Duration{0, shortWatchPoll} {
			r, err := b.readiness(ctx, i, p.runs, poll)
			if err != nil {
				return nil, fmt.Errorf("measurement 4 (readiness, watch_poll %v), run %d: %w", watchPollName(poll), i+1, err)
			}
			b.progressf("4 readiness, watch_poll %v, run %d/%d: lag %s", watchPollName(poll), i+1, p.runs, ms(r.lag))
			readiness[k], startups = append(readiness[k], r), append(startups, r.startup)
		}
	}

	doors, err := b.doorRuns(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range doors {
		startups = append(startups, r.startup)
	}

	var rows []row
	rows = append(rows, asleepRows(p, asleep)...)
	rows = append(rows, readyRows(p, ready)...)
	rows = append(rows, burstRows(p, bursts)...)
	rows = append(rows, readinessRows(readiness[0], readiness[1])...)
	rows = append(rows, footprintRows(fps, startups)...)
	rows = append(rows, doorRows(p, doors)...)
	if withPostgres {
		pg, err := b.measurePostgres(ctx, asleep, bursts)
		if err != nil {
			return nil, err
		}
		rows = append(rows, pg...)
	}
	return rows, nil
}

// measurePostgres runs measurement 8 and returns its rows, beside bbolt's
// runs of measurements 1 and 3: asleep and bursts when given, else run here,
// one of each before each PostgreSQL run.
func (b *harness) measurePostgres(ctx context.Context, asleep []asleepRun, bursts []burstRun) ([]row, error) {
	pg, err := b.postgres(ctx, asleep == nil)
	if err != nil {
		return nil, fmt.Errorf("measurement 8 (the PostgreSQL store): %w", err)
	}
	if asleep == nil {
		asleep, bursts = pg.boltAsleep, pg.boltBursts
	}
	return postgresRows(b.plan, pg, asleep, bursts), nil
}

// readyRuns runs measurement 2 -runs times.
func (b *harness) readyRuns(ctx context.Context) ([]readyRun, error) {
	p := b.plan
	var ready []readyRun
	for i := range p.runs {
		r, err := b.ready(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("measurement 2 (ready path), run %d: %w", i+1, err)
		}
		b.progressf("2 ready path, run %d/%d: host p50 %s, direct p50 %s, floor p50 %s, added %s (floor %s), host − floor per leg %s",
			i+1, p.runs, ms(r.host.p50), ms(r.direct.p50), ms(r.floor.p50), us(r.added.p50), us(r.floorAdded.p50), r.legs.hostOverFloor().signed())
		ready = append(ready, r)
	}
	return ready, nil
}

// measureReady runs measurement 2 alone (-only 2) and returns its rows.
func (b *harness) measureReady(ctx context.Context) ([]row, error) {
	ready, err := b.readyRuns(ctx)
	if err != nil {
		return nil, err
	}
	return readyRows(b.plan, ready), nil
}

// doorRuns runs measurement 6 -runs times.
func (b *harness) doorRuns(ctx context.Context) ([]doorRun, error) {
	p := b.plan
	var doors []doorRun
	for i := range p.runs {
		r, err := b.door(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("measurement 6 (the OpenAI door), run %d: %w", i+1, err)
		}
		b.progressf("6 OpenAI door, run %d/%d: first byte added %s (floor %s), per chunk %s (floor %s), non-streaming added %s (floor %s); host − floor per leg: first byte %s, non-streaming %s",
			i+1, p.runs, us(r.ttfbAdded.p50), us(r.ttfbFloorAdded.p50), us(r.perChunkAdded), us(r.perChunkFloorAdded),
			us(r.plainAdded.p50), us(r.plainFloorAdded.p50), r.streamLegs.hostOverFloor().signed(), r.plainLegs.hostOverFloor().signed())
		doors = append(doors, r)
	}
	return doors, nil
}

// measureDoor runs measurement 6 alone (-only 6) and returns its rows.
func (b *harness) measureDoor(ctx context.Context) ([]row, error) {
	doors, err := b.doorRuns(ctx)
	if err != nil {
		return nil, err
	}
	return doorRows(b.plan, doors), nil
}

// shortWatchPoll is measurement 4's short [timings] watch_poll.
const shortWatchPoll = time.Second

// watchPollName names a watch_poll, 0 meaning the default.
func watchPollName(poll time.Duration) string {
	if poll == 0 {
		return fmt.Sprintf("%gs (default)", defaultWatchPoll.Seconds())
	}
	return fmt.Sprintf("%gs", poll.Seconds())
}

// startSim starts a simulator on loopback.
func startSim(cfg sim.Config) (*sim.Sim, error) {
	s := sim.New(cfg)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// startPair starts a simulator for cfg and a host whose conductor it is.
func (b *harness) startPair(ctx context.Context, cfg sim.Config, spec hostSpec) (*sim.Sim, *host, error) {
	s, err := startSim(cfg)
	if err != nil {
		return nil, nil, err
	}
	spec.conductorURL = s.URL()
	h, err := startHost(ctx, b.work, b.binDir, spec)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, h, nil
}

// header is the line above the table: when, on what, how busy the machine
// was (the 1-minute load average before and after), where the hosts' stores
// were, and how the figures were made.
func header(p plan, quick bool, now time.Time, loadBefore, loadAfter, storeFS string) string {
	mode := ""
	if quick {
		mode = " (-quick: fewer requests)"
	}
	return fmt.Sprintf("wakebench %s · %d cores · %s memory · %s %s/%s · load average %s → %s · stores on %s · each figure the median of %d runs%s",
		now.UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), memTotal(), runtime.Version(),
		runtime.GOOS, runtime.GOARCH, loadBefore, loadAfter, storeFS, p.runs, mode)
}

// loadAvg is the 1-minute load average from /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// memTotal is MemTotal from /proc/meminfo in GiB, or "unknown".
func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				if kib, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
				}
			}
		}
	}
	return "unknown"
}
