package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// startSlack is added to StartTimeout for the background start's context: the
// plugin applies StartTimeout itself and reports a timeout as a wake in flight,
// so the host's own cap only catches a plugin that ignores its cap.
const startSlack = 5 * time.Second

// ErrClosed is what NotReady and Resume return after Close.
var ErrClosed = errors.New("wake: coordinator closed")

// Records persists one machines.Record per pod (the store implements it).
type Records interface {
	// Record returns the pod's record, machines.NewRecord(pod) when absent.
	Record(pod string) (machines.Record, error)
	// PutRecord stores r under r.Pod.
	PutRecord(r machines.Record) error
	// Records lists every stored record.
	Records() ([]machines.Record, error)
}

// Config configures a Coordinator. Every field but Clock and Logger is
// required: the host's defaults are its config's (host/config), and exist
// nowhere else.
type Config struct {
	Pod     *machines.Pod // the compiled machine; its timings are the policy's
	Records Records       // where records live
	GPU     pluginapi.GPU // the GPU plugin: starts a pod, reads it for the watch
	Clock   clock.Clock   // default clock.Real()
	Logger  *slog.Logger  // default: discard
	// WatchPoll is how often a wake's watch reads the pod; it also caps
	// each read ([timings] watch_poll).
	WatchPoll time.Duration
	// Probe, when set, asks a pod's model whether it answers (the provider
	// plugin serving the pod): a wake's watch probes while the pod is
	// RUNNING with a proxy URL, until the model answers. Nil: the watch
	// only reads the pod.
	Probe Prober
	// ProbeInterval is how often the watch probes, and the cap on each
	// probe ([timings] probe_interval); required with Probe.
	ProbeInterval time.Duration
	// StartTimeout is the GPU plugin's own cap on a start request (D2's 3 s
	// client timeout, [conductor] start_timeout). The background start's
	// context is capped at StartTimeout + 5s, so the plugin's cap, which
	// reports a wake in flight, always fires first.
	StartTimeout time.Duration
	// Changed, when set, is called with every record the coordinator
	// stores, with the record before and the event that changed it. It runs
	// under the pod's lock, so the calls of one pod come in the order of the
	// changes; it must not block (a subscriber hub buffers, a metric sets a
	// gauge) and must not call back into the Coordinator.
	Changed func(Change)
}

// Change is one stored change of a pod's record.
type Change struct {
	Before, After machines.Record
	Event         machines.Event // its At is when the change was decided
}

// Coordinator feeds every event of a pod to the pod lifecycle machine and
// performs its side effects. It is safe for concurrent use. Create it with
// New.
type Coordinator struct {
	pod          *machines.Pod
	records      Records
	gpu          pluginapi.GPU
	clock        clock.Clock
	log          *slog.Logger
	watchPoll    time.Duration
	prober       Prober        // nil: no probes
	probeEvery   time.Duration // ProbeInterval
	wakeWatch    time.Duration
	startTimeout time.Duration
	changed      func(Change)

	// stopping is cancelled by Close: watches return and their pod reads
	// are cancelled. abandoned is cancelled when Close stops waiting: the
	// background starts still running are cancelled and their outcomes are
	// no longer written.
	stopping, abandoned context.Context
	stop, abandon       context.CancelFunc

	mu       sync.Mutex
	locks    map[string]*sync.Mutex // one per pod, never removed
	watching map[watchKey]bool      // the live watches
	closed   bool
	wg       sync.WaitGroup // calls in, starts and watches
}

var _ resolve.Observer = (*Coordinator)(nil)

// watchKey names one wake of one pod.
type watchKey struct {
	pod  string
	wake int64 // WakeRequestedAt, Unix nanoseconds
}

// New returns a Coordinator for cfg. It panics when cfg.Pod, cfg.Records or
// cfg.GPU is nil, or a duration it needs is not positive: that is a wiring
// mistake, not a runtime condition.
func New(cfg Config) *Coordinator {
	switch {
	case cfg.Pod == nil:
		panic("wake: Config.Pod is nil")
	case cfg.Records == nil:
		panic("wake: Config.Records is nil")
	case cfg.GPU == nil:
		panic("wake: Config.GPU is nil")
	case cfg.WatchPoll <= 0:
		panic("wake: Config.WatchPoll is not positive")
	case cfg.Probe != nil && cfg.ProbeInterval <= 0:
		panic("wake: Config.ProbeInterval is not positive")
	case cfg.StartTimeout <= 0:
		panic("wake: Config.StartTimeout is not positive")
	}
	c := &Coordinator{
		pod:          cfg.Pod,
		records:      cfg.Records,
		gpu:          cfg.GPU,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		watchPoll:    cfg.WatchPoll,
		prober:       cfg.Probe,
		probeEvery:   cfg.ProbeInterval,
		wakeWatch:    cfg.Pod.Timings().WakeWatch,
		startTimeout: cfg.StartTimeout,
		changed:      cfg.Changed,
		locks:        make(map[string]*sync.Mutex),
		watching:     make(map[watchKey]bool),
	}
	if c.clock == nil {
		c.clock = clock.Real()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.stopping, c.stop = context.WithCancel(context.Background())
	c.abandoned, c.abandon = context.WithCancel(context.Background())
	return c
}

// NotReady runs a not-ready turn for pod through the machine: the
// conductor's status and lookup, and modelLoading for a pod that is up with
// its model not answering (D7). A lookup UNREADABLE is the unreadable event.
// Under the pod's lock it reads the record, decides and persists the new
// record; then it logs the decision line and, when the decision is wake,
// sends the start in the background on a context of its own and returns
// without waiting for it.
//
// An error (reading or storing the record, a machine error, ErrClosed) means
// nothing was decided and nothing woken; the caller answers the turn as a
// provider failure.
func (c *Coordinator) NotReady(ctx context.Context, pod, status, lookup string, modelLoading bool) (machines.Decision, error) {
	if !c.enter() {
		return machines.Decision{}, ErrClosed
	}
	defer c.wg.Done()
	ev := machines.Event{Trigger: machines.NotReady, Status: status, Lookup: lookup}
	switch {
	case lookup == machines.LookupUnreadable:
		ev.Trigger = machines.Unreadable
	case modelLoading:
		ev.Trigger = machines.ModelLoading
	}
	d, next, err := c.apply(pod, ev)
	if err != nil {
		return machines.Decision{}, err
	}
	level, msg := machines.DescribeDecision(pod, status, modelLoading, d)
	c.log.LogAttrs(ctx, level, msg,
		slog.String("pod", pod), slog.String("state", string(d.To)), slog.String("reply", string(d.Reply)))
	if d.Action == machines.ActionWake {
		c.wg.Add(1) // under NotReady's own count, so never racing Close's Wait
		go c.start(context.WithoutCancel(ctx), pod, next.WakeRequestedAt)
	}
	return d, nil
}

// Observe feeds what the conductor said about pod to the machine: podDown,
// podUp or readySince (machines.Observe). It never wakes and never replies.
// A failure is logged, not returned: what the conductor said still answers
// the caller. It is the resolvers' resolve.Observer.
func (c *Coordinator) Observe(ctx context.Context, pod string, p pluginapi.Pod) {
	ev, ok := machines.Observe(machines.View{
		Status: p.Status, IsRunning: p.IsRunning, Lookup: string(orFound(p.Lookup)), ReadySince: p.ReadySince,
	}, time.Time{})
	if !ok {
		return
	}
	c.event(ctx, pod, ev)
}

// Answered feeds a turn the pod's model answered to the machine, with the
// conductor's readySince of the resolution it answered on.
func (c *Coordinator) Answered(ctx context.Context, pod string, readySince time.Time) {
	c.event(ctx, pod, machines.Event{Trigger: machines.Answered, ReadySince: readySince})
}

// event applies an event that decides nothing, logging a failure.
func (c *Coordinator) event(ctx context.Context, pod string, ev machines.Event) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	if _, _, err := c.apply(pod, ev); err != nil {
		c.log.LogAttrs(ctx, slog.LevelError, err.Error(), slog.String("pod", pod))
	}
}

func orFound(l pluginapi.Lookup) pluginapi.Lookup {
	if l == "" {
		return pluginapi.LookupFound
	}
	return l
}

// Record returns the pod's current record.
func (c *Coordinator) Record(pod string) (machines.Record, error) {
	r, err := c.records.Record(pod)
	if err != nil {
		return machines.Record{}, fmt.Errorf("wake: record of pod %s: %w", pod, err)
	}
	return r, nil
}

// Close stops every watch and waits until the background starts and watches
// have returned, or until ctx ends. A start still running then is cancelled
// and its outcome is logged but not recorded; Close returns ctx's error. After
// Close, NotReady and Resume return ErrClosed. Close the store only after
// Close returns nil.
func (c *Coordinator) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		c.abandon()
		return fmt.Errorf("wake: close: %w", ctx.Err())
	}
}

// enter counts a call in, unless the Coordinator is closed.
func (c *Coordinator) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// lockPod locks pod's mutex and returns its unlock.
func (c *Coordinator) lockPod(pod string) func() {
	c.mu.Lock()
	m, ok := c.locks[pod]
	if !ok {
		m = new(sync.Mutex)
		c.locks[pod] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// now is the clock's reading without a monotonic part, so that it compares
// like the times a store gives back.
func (c *Coordinator) now() time.Time { return c.clock.Now().Round(0) }

// apply runs ev for pod under the pod's lock: read the record, stamp ev.At,
// decide, persist. Nothing else happens under the lock.
func (c *Coordinator) apply(pod string, ev machines.Event) (machines.Decision, machines.Record, error) {
	unlock := c.lockPod(pod)
	defer unlock()
	rec, err := c.records.Record(pod)
	if err != nil {
		return machines.Decision{}, machines.Record{}, fmt.Errorf("wake: record of pod %s: %w", pod, err)
	}
	return c.decideLocked(rec, ev)
}

func (c *Coordinator) decideLocked(rec machines.Record, ev machines.Event) (machines.Decision, machines.Record, error) {
	ev.At = c.now()
	d, next, err := c.pod.Decide(rec, ev)
	if err != nil {
		return machines.Decision{}, machines.Record{}, fmt.Errorf("wake: decide %s for pod %s: %w", ev.Trigger, rec.Pod, err)
	}
	if next.Equal(rec) {
		// Most asks in a window change nothing ("still waking"), and most
		// answered turns find the pod ready: a write, and its fsync, would
		// only slow every reply down.
		return d, next, nil
	}
	if err := c.records.PutRecord(next); err != nil {
		return machines.Decision{}, machines.Record{}, fmt.Errorf("wake: store record of pod %s: %w", rec.Pod, err)
	}
	if c.changed != nil {
		c.changed(Change{Before: rec, After: next, Event: ev})
	}
	if d.To == machines.Ready && wakeInProgress(d.From) {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			fmt.Sprintf("wake ready for pod %s: ready since %s", rec.Pod, machines.FormatClock(next.ReadyAt, ev.At)),
			slog.String("pod", rec.Pod), slog.Time("wakeRequestedAt", next.WakeRequestedAt))
	}
	return d, next, nil
}

// InProgress reports whether s is a state of a wake whose outcome is not
// known yet (waking, loading, stuck): what the watch follows, and what the
// pod event stream counts elapsed and remaining time in.
func InProgress(s engine.State) bool { return wakeInProgress(s) }

// wakeInProgress is InProgress.
func wakeInProgress(s engine.State) bool {
	return s == machines.Waking || s == machines.Loading || s == machines.Stuck
}

// feed runs an outcome event of the wake requested at wake. When the record
// is on another wake (superseded) it writes nothing and returns false; the
// machine would drop the event too, and the caller stops.
func (c *Coordinator) feed(pod string, wake time.Time, ev machines.Event) (bool, error) {
	unlock := c.lockPod(pod)
	defer unlock()
	rec, err := c.records.Record(pod)
	if err != nil {
		return false, fmt.Errorf("wake: record of pod %s: %w", pod, err)
	}
	if !rec.WakeRequestedAt.Equal(wake) {
		return false, nil
	}
	ev.Wake = wake
	if _, _, err := c.decideLocked(rec, ev); err != nil {
		return false, err
	}
	return true, nil
}
