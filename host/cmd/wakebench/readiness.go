package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// The short real-time wake of measurement 4: RUNNING after readinessBoot,
// the model answering readinessLoad later, plus a phase (below).
const (
	readinessBoot = time.Second
	readinessLoad = time.Second
)

// readinessSim is measurement 4's pod; extraLoad lengthens its loading.
func readinessSim(extraLoad time.Duration) sim.Config {
	return sim.Config{
		CreateDelay: 200 * time.Millisecond, BootDelay: readinessBoot, LoadDelay: readinessLoad + extraLoad,
		IdleStop: time.Hour,
	}
}

const (
	// clientPoll is how often the bench's client reads GET /api/pods/qwen,
	// as a wakeMode "wait" client would.
	clientPoll = 20 * time.Millisecond
	// readinessWithin bounds one wake, from the ask to the client seeing
	// ready.
	readinessWithin = 15 * time.Second
	// watchWaitMax is the longest watch_poll whose watch the harness waits
	// for; a longer one is reported as not seen within the run.
	watchWaitMax = 5 * time.Second
)

// defaultWatchPoll is [timings] watch_poll's default, which measurement 4's
// long runs and measurement 7's day run with.
var defaultWatchPoll = config.DefaultConfig().Timings.WatchPoll.Duration

// lineWakeReady starts the log line of a watch that saw its wake ready.
const lineWakeReady = "wake ready for pod " + sim.DefaultPod

// readinessRun is one run of measurement 4.
type readinessRun struct {
	lag      time.Duration // model answering -> the client's first "ready": true
	phase    time.Duration // when the first poll after the model answered was scheduled, after it
	watchLag time.Duration // model answering -> the watch's "wake ready" line; 0 if not waited for
	// watchLogged: the line was in the log when the run ended.
	watchLogged bool
	starts      int
	startup     time.Duration
}

// readiness runs measurement 4 once with watchPoll as [timings] watch_poll
// (0 for the default): an ask wakes the pod, a client polls GET
// /api/pods/qwen every clientPoll, and the lag is from the moment the
// simulated model starts answering to the client's first "ready": true.
// That moment is computed, not polled for: the arrival of the start request
// (the simulator reads its clock for the wake right after) plus BootDelay
// and LoadDelay, which at Scale 1 the simulator applies exactly.
//
// Where that moment falls between two polls is most of the lag, so run k
// of n places it evenly: the client's polls are scheduled so that one
// reaches the simulator (k+0.5)/n of a poll interval after it (a poll takes
// reachSim to get there, measured on warm-up polls), and the model loads
// (k+0.5)/n of shortWatchPoll longer than readinessLoad, which spreads it
// over the watch's polls the same way. The median of the runs is then a
// median over the phase, not the value of one phase.
func (b *harness) readiness(ctx context.Context, run, runs int, watchPoll time.Duration) (r readinessRun, err error) {
	phase := (float64(run) + 0.5) / float64(runs)
	extraLoad := time.Duration(phase * float64(shortWatchPoll))
	s, err := startRecordedSim(readinessSim(extraLoad))
	if err != nil {
		return r, err
	}
	h, err := startHost(ctx, b.work, b.binDir, hostSpec{conductorURL: s.url, watchPoll: watchPoll})
	if err != nil {
		return r, errors.Join(err, s.Close())
	}
	defer func() { err = errors.Join(err, h.stop(), s.Close()) }()
	r.startup = h.startup
	reach, err := s.reachSim(ctx, h)
	if err != nil {
		return r, err
	}
	wctx, cancel := context.WithTimeout(ctx, readinessWithin)
	defer cancel()

	if _, _, err := h.ask(wctx, "w-wake", "hello"); err != nil {
		return r, fmt.Errorf("the ask that wakes the pod: %w", err)
	}
	var since time.Time
	select {
	case at := <-s.started:
		since = at.Add(readinessBoot + readinessLoad + extraLoad)
	case <-wctx.Done():
		return r, errors.New("the ask did not make a start request")
	}
	// Poll every clientPoll on a schedule that has a poll reach the
	// simulator phase*clientPoll after the model starts answering.
	r.phase = time.Duration(phase * float64(clientPoll))
	next := since.Add(r.phase - reach)
	next = next.Add(-next.Sub(time.Now()) / clientPoll * clientPoll)
	var seen time.Time
	for seen.IsZero() {
		for !next.After(time.Now()) {
			next = next.Add(clientPoll) // a slow GET skips the slots it overran
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-wctx.Done():
			t.Stop()
			return r, fmt.Errorf("GET /api/pods/qwen never said ready within %v", readinessWithin)
		case <-t.C:
		}
		ready, err := h.podReady(wctx)
		if err != nil {
			return r, err
		}
		if ready {
			seen = time.Now()
		}
	}
	if s.Snapshot(sim.DefaultPod).ReadySince == "" {
		return r, errors.New("the host said ready before the simulated model answered")
	}
	r.lag = seen.Sub(since)
	r.starts = s.StartRequests(sim.DefaultPod)

	if poll := cmp.Or(watchPoll, defaultWatchPoll); poll <= watchWaitMax {
		at, err := awaitLogLine(wctx, h, lineWakeReady, since.Add(2*poll+time.Second))
		if err != nil {
			return r, err
		}
		r.watchLag = at.Sub(since)
	}
	r.watchLogged = strings.Contains(h.log(), lineWakeReady)
	return r, nil
}

// recordedSim is a simulator served on loopback through a handler that
// notes when the first start request arrives.
type recordedSim struct {
	*sim.Sim
	srv     *http.Server
	url     string
	once    sync.Once
	started chan time.Time // receives the first start request's arrival
	// reads receives the arrival of each pod read while recording is set
	// (and is dropped when nobody takes it).
	reads     chan time.Time
	recording atomic.Bool
}

// warmPolls is how many polls measure reachSim.
const warmPolls = 5

// reachSim polls the pod through the host warmPolls times, which also warms
// the connections, and returns the median time a poll takes from the client
// to the simulator.
func (rs *recordedSim) reachSim(ctx context.Context, h *host) (time.Duration, error) {
	rs.recording.Store(true)
	defer rs.recording.Store(false)
	var reach []time.Duration
	for range warmPolls {
		sent := time.Now()
		if _, err := h.podReady(ctx); err != nil {
			return 0, fmt.Errorf("warming up: %w", err)
		}
		select {
		case at := <-rs.reads:
			reach = append(reach, at.Sub(sent))
		default:
			return 0, errors.New("warming up: a pod read did not reach the simulator")
		}
	}
	return median(reach), nil
}

// startRecordedSim serves a simulator for cfg on 127.0.0.1. Without
// Sim.Start the simulator builds proxy URLs from each request's Host, which
// is this server's address.
func startRecordedSim(cfg sim.Config) (*recordedSim, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("simulator: listen: %w", err)
	}
	rs := &recordedSim{
		Sim: sim.New(cfg), url: "http://" + ln.Addr().String(),
		started: make(chan time.Time, 1), reads: make(chan time.Time, 1),
	}
	inner := rs.Handler()
	rs.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at := time.Now()
			switch {
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/start"):
				rs.once.Do(func() { rs.started <- at })
			case r.Method == http.MethodGet && rs.recording.Load():
				select {
				case rs.reads <- at:
				default:
				}
			}
			inner.ServeHTTP(w, r)
		}),
	}
	// Serve returns ErrServerClosed after Close; nobody waits for it.
	go func() { _ = rs.srv.Serve(ln) }()
	return rs, nil
}

// Close unblocks the simulator's held starts, then closes the server and
// its connections.
func (rs *recordedSim) Close() error {
	return errors.Join(rs.Sim.Close(), rs.srv.Close())
}

// awaitLogLine waits until the host's JSON log has a line whose message
// starts with prefix and returns the line's time.
func awaitLogLine(ctx context.Context, h *host, prefix string, until time.Time) (time.Time, error) {
	for {
		for line := range strings.Lines(h.log()) {
			var l struct {
				Time time.Time `json:"time"`
				Msg  string    `json:"msg"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, prefix) {
				return l.Time, nil
			}
		}
		if time.Now().After(until) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("no %q line in the host's log in time", prefix)
		}
		time.Sleep(clientPoll)
	}
}
