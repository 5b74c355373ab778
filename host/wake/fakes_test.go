package wake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// t0 is the first live wake's hour, 2026-09-09 12:00 UTC.
var t0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// waitLimit bounds every wait for a background goroutine; a test that hits it
// has failed.
const waitLimit = 5 * time.Second

// fakeGPU is a hand-written pluginapi.GPU: function fields say what it
// answers (nil: a start accepted with 202, and an EXITED pod), and it keeps
// the pod named in every call. The Coordinator stops a pod only by a
// StopPolicy: newEnv fails a test whose fake saw a StopPod it did not
// allow (stops).
type fakeGPU struct {
	startPod func(ctx context.Context, pod string) (pluginapi.StartResult, error)
	stopPod  func(ctx context.Context, pod string) (pluginapi.StartResult, error) // nil: stopped, 200
	stops    bool                                                                 // the test expects StopPod calls
	getPod   func(ctx context.Context, pod string, n int) (pluginapi.Pod, error)  // n counts from 1
	now      func() time.Time                                                     // for readTimes; nil: time.Now

	mu      sync.Mutex
	started []string    // the pod of every StartPod, in order
	read    []string    // ... of every GetPod
	readAt  []time.Time // when each GetPod was called
	stopped []string    // ... of every StopPod
	stopAt  []time.Time // when each StopPod was called
}

var _ pluginapi.GPU = (*fakeGPU)(nil)

func (f *fakeGPU) StartPod(ctx context.Context, pod string) (pluginapi.StartResult, error) {
	f.mu.Lock()
	f.started = append(f.started, pod)
	start := f.startPod
	f.mu.Unlock()
	if start == nil {
		return pluginapi.StartResult{Requested: true, Status: 202}, nil
	}
	return start(ctx, pod)
}

func (f *fakeGPU) GetPod(ctx context.Context, pod string) (pluginapi.Pod, error) {
	f.mu.Lock()
	f.read = append(f.read, pod)
	f.readAt = append(f.readAt, nowOr(f.now))
	n, get := len(f.read), f.getPod
	f.mu.Unlock()
	if get == nil {
		return exited(), nil
	}
	return get(ctx, pod, n)
}

func (f *fakeGPU) StopPod(ctx context.Context, pod string) (pluginapi.StartResult, error) {
	f.mu.Lock()
	f.stopped = append(f.stopped, pod)
	f.stopAt = append(f.stopAt, nowOr(f.now))
	stop := f.stopPod
	f.mu.Unlock()
	if stop == nil {
		return pluginapi.StartResult{Requested: true, Status: 200}, nil
	}
	return stop(ctx, pod)
}

// stopTimes is when StopPod was called.
func (f *fakeGPU) stopTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stopAt)
}

// setStart replaces what StartPod answers from now on.
func (f *fakeGPU) setStart(start func(ctx context.Context, pod string) (pluginapi.StartResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startPod = start
}

// starts is how often StartPod was called.
func (f *fakeGPU) starts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

// reads is how often GetPod was called.
func (f *fakeGPU) reads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.read)
}

// nowOr reads now, or the wall clock when now is nil.
func nowOr(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}

// readTimes is when each GetPod was called, in order.
func (f *fakeGPU) readTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.readAt)
}

// fakeProber is a hand-written wake.Prober: probe says what it answers
// (nil: the model does not answer yet, the proxy's 502), and it keeps every
// call.
type fakeProber struct {
	probe func(ctx context.Context, pod, proxyURL string) (pluginapi.ProbeResult, error)
	now   func() time.Time // for the calls' times; nil: time.Now

	mu    sync.Mutex
	calls []probeCall
}

// probeCall is one Probe: its pod and proxy URL, and when it was made.
type probeCall struct {
	Pod, ProxyURL string
	At            time.Time
}

var _ wake.Prober = (*fakeProber)(nil)

func (f *fakeProber) Probe(ctx context.Context, pod, proxyURL string) (pluginapi.ProbeResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, probeCall{Pod: pod, ProxyURL: proxyURL, At: nowOr(f.now)})
	probe := f.probe
	f.mu.Unlock()
	if probe == nil {
		return notAnswered, nil
	}
	return probe(ctx, pod, proxyURL)
}

// probed is every Probe so far.
func (f *fakeProber) probed() []probeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// notAnswered is a probe while the model loads behind the proxy.
var notAnswered = pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"}

// answeredProbe is a probe the model answered.
var answeredProbe = pluginapi.ProbeResult{Answered: true, Status: 200}

// check fails t unless every call named pod and none stopped a pod.
func (f *fakeGPU) check(t *testing.T, pod string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, call := range []struct {
		name string
		pods []string
	}{{"StartPod", f.started}, {"GetPod", f.read}} {
		for _, p := range call.pods {
			if p != pod {
				t.Errorf("%s(%q), want only %q", call.name, p, pod)
			}
		}
	}
	if len(f.stopped) != 0 && !f.stops {
		t.Errorf("StopPod called for %v: no stop policy asked for it", f.stopped)
	}
	for _, p := range f.stopped {
		if p != pod {
			t.Errorf("StopPod(%q), want only %q", p, pod)
		}
	}
}

// answer is a StartPod that answers r.
func answer(r pluginapi.StartResult) func(context.Context, string) (pluginapi.StartResult, error) {
	return func(context.Context, string) (pluginapi.StartResult, error) { return r, nil }
}

func exited() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound}
}

// upPod is the pod RUNNING with the conductor's readySince, zero for none.
func upPod(readySince time.Time) pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: pluginapi.StatusRunning, IsRunning: true,
		ProxyURL: "https://qwen-8000.proxy.example", ReadySince: readySince, Lookup: pluginapi.LookupFound}
}

// memRecords is an in-memory wake.Records and wake.WakeLog. putErr, when
// set, fails PutRecord and PutRecordWake; wakesErr fails Wakes.
type memRecords struct {
	putErr   func(machines.Record) error
	wakesErr func() error
	// updating, when set, is called as UpdateRecord begins, before its
	// read; a test blocks in it to hold a change in flight.
	updating func()

	updateMu sync.Mutex // UpdateRecord's

	mu     sync.Mutex
	outage error // set: every read and write fails with it (setOutage)
	reads  int   // Record calls
	recs   map[string]machines.Record
	wakes  map[string][]machines.Wake // by request time, oldest first
	puts   int
}

var (
	_ wake.Records = (*memRecords)(nil)
	_ wake.WakeLog = (*memRecords)(nil)
)

func newMemRecords(recs ...machines.Record) *memRecords {
	m := &memRecords{recs: make(map[string]machines.Record), wakes: make(map[string][]machines.Wake)}
	for _, r := range recs {
		m.recs[r.Pod] = r
	}
	return m
}

// setOutage makes every read and write fail with err until a setOutage(nil).
func (m *memRecords) setOutage(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outage = err
}

func (m *memRecords) Record(_ context.Context, pod string) (machines.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.outage != nil {
		return machines.Record{}, m.outage
	}
	if r, ok := m.recs[pod]; ok {
		return r, nil
	}
	return machines.NewRecord(pod), nil
}

func (m *memRecords) PutRecord(_ context.Context, r machines.Record) error {
	if m.putErr != nil {
		if err := m.putErr(r); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outage != nil {
		return m.outage
	}
	m.puts++
	m.recs[r.Pod] = r
	return nil
}

func (m *memRecords) PutRecordWake(ctx context.Context, r machines.Record, w machines.Wake) error {
	if err := m.PutRecord(ctx, r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	log := m.wakes[r.Pod]
	i := slices.IndexFunc(log, func(l machines.Wake) bool { return l.RequestedAt.Equal(w.RequestedAt) })
	if i >= 0 {
		log[i] = w
	} else {
		log = append(log, w)
		slices.SortFunc(log, func(a, b machines.Wake) int { return a.RequestedAt.Compare(b.RequestedAt) })
	}
	m.wakes[r.Pod] = log
	return nil
}

func (m *memRecords) Wakes(_ context.Context, pod string) ([]machines.Wake, error) {
	if m.wakesErr != nil {
		if err := m.wakesErr(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.wakes[pod]), nil
}

// logged is pod's wake log.
func (m *memRecords) logged(pod string) []machines.Wake {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.wakes[pod])
}

func (m *memRecords) Records(context.Context) ([]machines.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []machines.Record
	for _, r := range m.recs {
		out = append(out, r)
	}
	return out, nil
}

// readCount is how often Record was called.
func (m *memRecords) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// UpdateRecord is a read, fn and, when fn changed the record, a PutRecord
// (PutRecordWake with fn's entry), under one lock: the fake's own, which
// serialises every update.
func (m *memRecords) UpdateRecord(ctx context.Context, pod string, fn func(machines.Record) (machines.Record, *machines.Wake, error)) (before, after machines.Record, err error) {
	if m.updating != nil {
		m.updating()
	}
	m.updateMu.Lock()
	defer m.updateMu.Unlock()
	rec, err := m.Record(ctx, pod)
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	next, w, err := fn(rec)
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	if next.Equal(rec) {
		return rec, next, nil
	}
	if w != nil {
		err = m.PutRecordWake(ctx, next, *w)
	} else {
		err = m.PutRecord(ctx, next)
	}
	if err != nil {
		return machines.Record{}, machines.Record{}, err
	}
	return rec, next, nil
}

func (m *memRecords) putCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}

// logBuf collects a JSON slog handler's output. The tests read it once
// what they wait for has happened; they never wait for a line.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newLogBuf() *logBuf { return &logBuf{} }

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// logLine is the part of a JSON log record the tests assert on.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Pod   string `json:"pod"`
	State string `json:"state,omitempty"`
	Reply string `json:"reply,omitempty"`
	// Set on a start's line: the plugin call panicked; Close gave up on it.
	Panicked  bool `json:"panicked,omitempty"`
	Abandoned bool `json:"abandoned,omitempty"`
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines parses every record so far; it fails the test on a malformed one.
func (b *logBuf) lines(t *testing.T) []logLine {
	t.Helper()
	b.mu.Lock()
	raw := bytes.Clone(b.buf.Bytes())
	b.mu.Unlock()
	var out []logLine
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var ll logLine
		if err := json.Unmarshal(l, &ll); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, ll)
	}
	return out
}

// withMsg returns the lines whose message is msg.
func (b *logBuf) withMsg(t *testing.T, msg string) []logLine {
	t.Helper()
	all := b.lines(t)
	var out []logLine
	for _, l := range all {
		if l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// find is the first line carrying msg; the test fails when there is none.
func (b *logBuf) find(t *testing.T, msg string) logLine {
	t.Helper()
	all := b.lines(t)
	for _, l := range all {
		if l.Msg == msg {
			return l
		}
	}
	t.Fatalf("no log line %q; the log:\n%s", msg, b.String())
	return logLine{}
}

// env is one Coordinator under test with its fakes.
type env struct {
	clk  *fakeclock.Clock
	recs *memRecords
	gpu  *fakeGPU
	logs *logBuf
	c    *wake.Coordinator

	mu      sync.Mutex
	starts  int           // background starts done (Config.Started)
	watched map[int64]int // returned watches by wake, Unix nanoseconds (Config.Watched)
	changed chan struct{} // closed and replaced at each of them
}

// note counts one hook's call under e.mu and wakes the waiters.
func (e *env) note(count func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	count()
	close(e.changed)
	e.changed = make(chan struct{})
}

// waitFor waits until done, read under e.mu, reports true; what it waits
// for names it in the failure.
func (e *env) waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		e.mu.Lock()
		ok, changed := done(), e.changed
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("waited %v for %s; the log:\n%s", waitLimit, what, e.logs.String())
		}
	}
}

// waitStarts waits until n background starts have their outcome fed and
// logged (Config.Started).
func (e *env) waitStarts(t *testing.T, n int) {
	t.Helper()
	e.waitFor(t, fmt.Sprintf("%d starts", n), func() bool { return e.starts >= n })
}

// waitWatched waits until n watches of the wake requested at wake have
// returned (Config.Watched): their lines are logged and their leases
// released.
func (e *env) waitWatched(t *testing.T, wake time.Time, n int) {
	t.Helper()
	e.waitFor(t, fmt.Sprintf("%d watches of the wake requested at %s to return", n, wake.Format(time.TimeOnly)),
		func() bool { return e.watched[wake.UnixNano()] >= n })
}

// accepted waits for n starts and checks that the log holds n accepted
// ones (acceptedLine).
func (e *env) accepted(t *testing.T, n int) {
	t.Helper()
	e.waitStarts(t, n)
	if got := len(e.logs.withMsg(t, acceptedLine)); got < n {
		t.Fatalf("%d of %d starts logged %q; the log:\n%s", got, n, acceptedLine, e.logs.String())
	}
}

// newEnv builds a Coordinator on a fake clock at t0 (unless cfg has a clock),
// an in-memory store, its wake log too, and a fake GPU plugin (unless cfg
// has them) and a JSON
// log at debug level. Set the fake's function fields before the first call
// that can reach it. At the end of the test it closes the Coordinator, checks
// that the plugin was asked about qwen alone and never to stop it, and checks
// for leaked goroutines, in that order.
func newEnv(t *testing.T, cfg wake.Config) *env {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, runs last
	e := &env{logs: newLogBuf()}
	if cfg.Clock == nil {
		cfg.Clock = fakeclock.New(t0)
	}
	e.clk, _ = cfg.Clock.(*fakeclock.Clock)
	if cfg.Records == nil {
		cfg.Records = newMemRecords()
	}
	e.recs, _ = cfg.Records.(*memRecords)
	if cfg.Wakes == nil && e.recs != nil {
		cfg.Wakes = e.recs // the store keeps both
	}
	if cfg.WatchPoll == 0 {
		cfg.WatchPoll = 5 * time.Second // the config's default
	}
	if cfg.Probe != nil && cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = time.Second // the config's default
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 3 * time.Second // the config's default
	}
	if cfg.GPU == nil {
		cfg.GPU = &fakeGPU{}
	}
	e.gpu, _ = cfg.GPU.(*fakeGPU)
	if e.gpu != nil {
		t.Cleanup(func() { e.gpu.check(t, "qwen") }) // runs after Close
	}
	if cfg.Pod == nil {
		pod, err := machines.NewPod(machines.DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pod = pod
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.changed, e.watched = make(chan struct{}), make(map[int64]int)
	cfg.Started = func(string) { e.note(func() { e.starts++ }) }
	cfg.Watched = func(_ string, wake time.Time) { e.note(func() { e.watched[wake.UnixNano()]++ }) }
	e.c = wake.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := e.c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// notReady runs an asleep turn (EXITED, FOUND) for qwen.
func (e *env) notReady(t *testing.T) machines.Decision {
	t.Helper()
	d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)
	if err != nil {
		t.Fatalf("NotReady: %v", err)
	}
	return d
}

// step waits until a watch waits on the clock, then advances it by d. Called
// in a loop it moves a watch along without racing it: after an Advance the
// waiter either is still pending or is re-registered by the watch's next
// round, or the watch has ended.
func (e *env) step(t *testing.T, d time.Duration) {
	t.Helper()
	e.waitWaiters(t, 1)
	e.clk.Advance(d)
}

// stepTo steps the clock in steps of d until it reads at.
func (e *env) stepTo(t *testing.T, at time.Time, d time.Duration) {
	t.Helper()
	for now := e.clk.Now(); now.Before(at); now = e.clk.Now() {
		e.step(t, min(d, at.Sub(now)))
	}
}

// waitIdle waits until every goroutine of the Coordinator (starts and
// watches) has returned, or fails the test after waitLimit with their stacks.
func (e *env) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		err := goleak.Find() // retries for a while itself
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for the coordinator to be idle: %v", waitLimit, err)
		}
	}
}

func (e *env) waitWaiters(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.clk.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatalf("waiting for %d clock waiters: %v", n, err)
	}
}

// record returns qwen's stored record.
func (e *env) record(t *testing.T) machines.Record {
	t.Helper()
	r, err := e.c.Record(t.Context(), "qwen")
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	return r
}
