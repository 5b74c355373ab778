package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The defaults of Config's durations (D2, D12).
const (
	DefaultWatchPoll    = 60 * time.Second
	DefaultWakeWatch    = 35 * time.Minute
	DefaultReadySlack   = 60 * time.Second
	DefaultStartTimeout = 3 * time.Second
)

// startSlack is added to StartTimeout for the background start's context: the
// plugin applies StartTimeout itself and reports a timeout as a wake in flight,
// so the host's own cap only catches a plugin that ignores its cap.
const startSlack = 5 * time.Second

// ErrClosed is what NotReady and Resume return after Close.
var ErrClosed = errors.New("wake: coordinator closed")

// Capabilities are a not-ready error's bound operations on its pod.
type Capabilities interface {
	// Wake asks the GPU plugin to start the pod. Every outcome is a
	// StartResult.
	Wake(ctx context.Context) pluginapi.StartResult
	// ReadPod reads the pod's current state (D12).
	ReadPod(ctx context.Context) (pluginapi.Pod, error)
}

// Records persists one machines.Record per pod (the store implements it).
type Records interface {
	// Record returns the pod's record, machines.NewRecord(pod) when absent.
	Record(pod string) (machines.Record, error)
	// PutRecord stores r under r.Pod.
	PutRecord(r machines.Record) error
	// Records lists every stored record.
	Records() ([]machines.Record, error)
}

// Config configures a Coordinator. Pod and Records are required; every other
// field has a default when zero.
type Config struct {
	Pod     *machines.Pod // the compiled policy; required
	Records Records       // where records live; required
	Clock   clock.Clock   // default clock.Real()
	Logger  *slog.Logger  // default: discard
	// WatchPoll is how often a wake's watch reads the pod; it also caps
	// each read. Default 60s.
	WatchPoll time.Duration
	// WakeWatch is how long after its request a wake is watched before it
	// is recorded never-ready (the policy's wake_watch). Default 35m.
	WakeWatch time.Duration
	// ReadySlack is how long before the wake a readySince may lie and still
	// belong to it (the policy's ready_slack). Default 60s.
	ReadySlack time.Duration
	// StartTimeout is the GPU plugin's own cap on a start request (D2's 3 s
	// client timeout). The background start's context is capped at
	// StartTimeout + 5s, so the plugin's cap, which reports a wake in
	// flight, always fires first. Default 3s.
	StartTimeout time.Duration
}

// Coordinator runs not-ready turns through the wake policy and performs its
// side effects. It is safe for concurrent use. Create it with New.
type Coordinator struct {
	pod          *machines.Pod
	records      Records
	clock        clock.Clock
	log          *slog.Logger
	watchPoll    time.Duration
	wakeWatch    time.Duration
	readySlack   time.Duration
	startTimeout time.Duration

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
	wg       sync.WaitGroup // NotReady and Resume calls, starts and watches
}

// watchKey names one wake of one pod.
type watchKey struct {
	pod  string
	wake int64 // WakeRequestedAt, Unix nanoseconds
}

// New returns a Coordinator for cfg. It panics when cfg.Pod or cfg.Records
// is nil: that is a wiring mistake, not a runtime condition.
func New(cfg Config) *Coordinator {
	if cfg.Pod == nil {
		panic("wake: Config.Pod is nil")
	}
	if cfg.Records == nil {
		panic("wake: Config.Records is nil")
	}
	c := &Coordinator{
		pod:          cfg.Pod,
		records:      cfg.Records,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		watchPoll:    orDefault(cfg.WatchPoll, DefaultWatchPoll),
		wakeWatch:    orDefault(cfg.WakeWatch, DefaultWakeWatch),
		readySlack:   orDefault(cfg.ReadySlack, DefaultReadySlack),
		startTimeout: orDefault(cfg.StartTimeout, DefaultStartTimeout),
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

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NotReady runs a not-ready turn for pod through the policy: the conductor's
// status and lookup, and modelLoading for a pod that is up with its model
// still loading (D7). Under the pod's lock it reads the record, decides and
// persists the new record; then it logs the decision line and, when the
// decision is wake, starts caps.Wake in the background on a context of its own
// and returns without waiting for it. A nil caps on a wake decision is a
// failed start.
//
// An error (reading or storing the record, a policy error, ErrClosed) means
// nothing was decided and nothing woken; the caller answers the turn as a
// provider failure.
func (c *Coordinator) NotReady(ctx context.Context, pod, status, lookup string, modelLoading bool, caps Capabilities) (machines.Decision, error) {
	if !c.enter() {
		return machines.Decision{}, ErrClosed
	}
	defer c.wg.Done()
	ev := machines.Event{Trigger: machines.NotReady, Status: status, Lookup: lookup}
	if modelLoading {
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
		go c.start(context.WithoutCancel(ctx), pod, next.WakeRequestedAt, caps)
	}
	return d, nil
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
		// Most asks in a window change nothing ("still waking"): a write,
		// and its fsync, would only slow every reply down.
		return d, next, nil
	}
	if err := c.records.PutRecord(next); err != nil {
		return machines.Decision{}, machines.Record{}, fmt.Errorf("wake: store record of pod %s: %w", rec.Pod, err)
	}
	return d, next, nil
}

// feed runs an outcome event of the wake requested at wake. When the record
// is on another wake (superseded) it writes nothing and returns false; the
// machine would ignore the event too, and the caller stops.
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
