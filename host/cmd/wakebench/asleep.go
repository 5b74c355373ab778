package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// asleepSim is a pod whose wake takes hours: it stays not ready for the
// whole bench, and the simulator holds the start request open until it is
// RUNNING, like the real conductor.
func asleepSim() sim.Config {
	return sim.Config{BootDelay: 6 * time.Hour, LoadDelay: time.Hour}
}

// heldStart is [conductor] start_timeout for the asleep-path hosts. It
// outlasts a whole measurement, so the start the first ask fires is held open
// from the first ask to the last: every reply measured was given while the
// start was in flight. The harness then closes the simulator, which answers
// the held start, before it stops the host.
const heldStart = 2 * time.Minute

// lineStartReturned starts the log line the host writes when a start request
// has returned, however it ended (wake.describeStart).
const lineStartReturned = "wake requested for pod"

// asleepRun is one run of measurement 1.
type asleepRun struct {
	first   time.Duration // the first ask, which fires the wake
	seq     latency       // concurrency 1, the first ask included
	conc    latency       // concurrency b.plan.concurrency
	rate    float64       // asks per second at that concurrency
	errs    []error
	starts  int  // start requests the simulator received
	held    bool // the start had not returned when the last reply came
	fp      footprint
	startup time.Duration
}

// asleep runs measurement 1 once on a fresh simulator and host (with spec's
// store): asks on an asleep pod, each on a new session, first one at a time,
// then concurrently.
func (b *harness) asleep(ctx context.Context, run int, spec hostSpec) (r asleepRun, err error) {
	spec.startTimeout = heldStart
	s, h, err := b.startPair(ctx, asleepSim(), spec)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, closeSimFirst(s, h)) }()
	r.startup = h.startup
	if err := warm(ctx, h); err != nil {
		return r, err
	}
	if n := s.StartRequests(sim.DefaultPod); n != 0 {
		return r, fmt.Errorf("%d start requests before the first ask", n)
	}

	askNew := func(session string) (time.Duration, error) { return askAsleep(ctx, h, session) }
	r.first, err = askNew(fmt.Sprintf("a%d-s0", run))
	if err != nil {
		return r, fmt.Errorf("first ask: %w", err)
	}
	seq, errs := load(ctx, b.plan.seqAsks-1, 1, func(i int) (time.Duration, error) {
		return askNew(fmt.Sprintf("a%d-s%d", run, i+1))
	})
	r.seq = latencyOf(append([]time.Duration{r.first}, seq...))
	t0 := time.Now()
	conc, cerrs := load(ctx, b.plan.concAsks, b.plan.concurrency, func(i int) (time.Duration, error) {
		return askNew(fmt.Sprintf("a%d-c%d", run, i))
	})
	r.rate = float64(len(conc)) / time.Since(t0).Seconds()
	r.conc = latencyOf(conc)
	r.errs = append(errs, cerrs...)
	r.held = !strings.Contains(h.log(), lineStartReturned)
	r.starts = s.StartRequests(sim.DefaultPod)
	r.fp, err = h.footprint()
	return r, err
}

// burstRun is one run of measurement 3.
type burstRun struct {
	starts  int
	ok      int
	errs    []error
	wall    time.Duration // from releasing the asks to the last reply
	lat     latency
	fp      footprint
	startup time.Duration
}

// burst runs measurement 3 once on a fresh simulator and host: b.plan.burst
// asks, each on a new session and a new connection, released at once.
func (b *harness) burst(ctx context.Context, run int, spec hostSpec) (r burstRun, err error) {
	spec.startTimeout = heldStart
	s, h, err := b.startPair(ctx, asleepSim(), spec)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, closeSimFirst(s, h)) }()
	r.startup = h.startup
	if err := warm(ctx, h); err != nil {
		return r, err
	}
	n := b.plan.burst
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-release
			lat[i], errs[i] = askAsleep(ctx, h, fmt.Sprintf("b%d-%d", run, i))
		})
	}
	t0 := time.Now()
	close(release)
	wg.Wait()
	r.wall = time.Since(t0)
	var ok []time.Duration
	for i := range n {
		if errs[i] != nil {
			r.errs = append(r.errs, errs[i])
			continue
		}
		ok = append(ok, lat[i])
	}
	r.ok = len(ok)
	r.lat = latencyOf(ok)
	r.starts = settledStarts(ctx, s)
	r.fp, err = h.footprint()
	return r, err
}

// Bounds on waiting for a burst's start requests to reach the simulator.
const (
	startArrivesWithin = 5 * time.Second
	startsSettle       = 200 * time.Millisecond
)

// settledStarts is how many start requests the simulator has received
// once the burst's are all in. The host sends a start in the background
// after the ask that decided the wake has its reply, so the last reply of
// a burst may come before it: count once one has arrived (within
// startArrivesWithin), and startsSettle later, time for any other decided
// at the same moment to arrive too.
func settledStarts(ctx context.Context, s *sim.Sim) int {
	deadline := time.Now().Add(startArrivesWithin)
	for s.StartRequests(sim.DefaultPod) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-ctx.Done():
	case <-time.After(startsSettle):
	}
	return s.StartRequests(sim.DefaultPod)
}

// askAsleep sends one ask that must get a wake-policy reply, not a model's.
func askAsleep(ctx context.Context, h *host, session string) (time.Duration, error) {
	reply, sp, err := h.ask(ctx, session, "hello")
	if err != nil {
		return 0, err
	}
	if strings.HasPrefix(reply, "echo: ") {
		return 0, fmt.Errorf("the model answered on an asleep pod: %.100q", reply)
	}
	return sp.d(), nil
}

// warm reads the pod through the host a few times, which opens the
// harness's connection and the conductor plugin's, without waking anything.
func warm(ctx context.Context, h *host) error {
	for range 3 {
		if _, err := h.podReady(ctx); err != nil {
			return fmt.Errorf("warming up: %w", err)
		}
	}
	return nil
}

// closeSimFirst closes the simulator, which answers a start it holds, and
// then stops the host, whose shutdown would otherwise wait for that start.
func closeSimFirst(s *sim.Sim, h *host) error {
	return errors.Join(s.Close(), h.stop())
}
