package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// startSlack is added to StartTimeout for the background start's context: the
// plugin applies StartTimeout itself and reports a timeout as a wake in flight,
// so the host's own cap only catches a plugin that ignores its cap.
const startSlack = 5 * time.Second

// ErrClosed is what NotReady and Resume return after Close.
var ErrClosed = errors.New("wake: coordinator closed")

// Records persists one machines.Record per pod: store.Records, which every
// store backend implements.
type Records = store.Records

// WakeLog is where the Coordinator reads each pod's log of wakes
// (store.WakeLog, which every store backend implements). It writes the
// entries through Records.UpdateRecord, with the records whose changes
// they log.
type WakeLog interface {
	// Wakes returns pod's wake log, oldest first.
	Wakes(ctx context.Context, pod string) ([]machines.Wake, error)
}

// Config configures a Coordinator. Pod, Records, GPU, WatchPoll and
// StartTimeout are required (ProbeInterval too, with Probe); the others may
// be left zero. The host's defaults are its config's (host/config), and
// exist nowhere else.
type Config struct {
	Pod     *machines.Pod // the compiled machine; its timings are the policy's
	Records Records       // where records live
	// Wakes, when set, is each pod's wake log, the one Records writes to
	// (the store is both): the Coordinator has UpdateRecord store an entry
	// with the record whenever machines.LogWake says so, and every event
	// carries the estimate the log gives (machines.EstimateWake). Without
	// it no entry is written and the estimate is expected_wake.
	Wakes  WakeLog
	GPU    pluginapi.GPU // the GPU plugin: starts a pod, reads it for the watch
	Clock  clock.Clock   // default clock.Real()
	Logger *slog.Logger  // default: discard
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
	// Leases, when set, makes each wake's watch hold a lease of the store
	// while it runs, so that of the hosts sharing the store one watches a
	// wake (store.Leases); nil: the watches are this process's alone.
	Leases store.Leases
	// Takeover, when positive, is how often the coordinator looks for wakes
	// in progress that nobody watches (their host died, or stopped) and
	// takes their watch over: about [store] lease / 2 on a shared store. 0:
	// never, as on a store one host holds.
	Takeover time.Duration
	// Stops are the host's stop policies by pod ([[backends]]
	// stop_after_idle, stop_unserved_after); a pod without one is never
	// stopped by the host.
	Stops map[string]StopPolicy
	// Credentials name, by pod, the environment variable whose credential
	// the pod's GPU backend sends, for the line of a start refused 401/403
	// (machines.WakeResult.Credential); a pod without one is the
	// conductor's (RIG_WAKE_TOKEN).
	Credentials map[string]string
	// Subscribers, when set, counts each pod's subscribers to its changes
	// (*events.Hub): a pod somebody follows is not stopped as unserved.
	Subscribers Subscribers
	// Changed, when set, is called with every record the coordinator
	// stores, with the record before and the event that changed it. It runs
	// under the pod's lock, so the calls of one pod come in the order of the
	// changes; it must not block (a subscriber hub buffers, a metric sets a
	// gauge) and must not call back into the Coordinator.
	Changed func(Change)
	// Started, when set, is called with the pod once a start sent in the
	// background has its outcome fed to the machine and logged, before
	// its watch begins; it must not block. Tests wait on it for the start
	// a wake decision sent.
	Started func(pod string)
	// Watched, when set, is called with the pod and the wake's request
	// time whenever a watch of that wake returns: one that ran, once its
	// lines are logged and its lease released, and one that did not run
	// (this host or another watches the wake already, or Close was
	// called). It must not block. Tests wait on it for a watch's end.
	Watched func(pod string, wake time.Time)
	// Following, when set, reports whether this process hears every other
	// host's change of a record now (store.Changes.Following): only then
	// are the records it holds the ones stored, within the notices' delay.
	// Nil: this process is the store's only writer (bbolt), so they are.
	Following func() bool
}

// Change is one stored change of a pod's record. A stamp of an answer
// (Record.AnsweredAt, AnswerStamp) comes with the answered event it
// stamps, at its time.
type Change struct {
	Before, After machines.Record
	Event         machines.Event // its At is when the change was decided; its Estimate the one it was decided by
	// Wake is the wake log entry stored with this change (a wake whose
	// outcome became known, or that served its first turn), nil when none.
	Wake *machines.Wake
}

// Coordinator feeds every event of a pod to the pod lifecycle machine and
// performs its side effects. It is safe for concurrent use. Create it with
// New.
type Coordinator struct {
	pod          *machines.Pod
	records      Records
	wakes        WakeLog
	gpu          pluginapi.GPU
	clock        clock.Clock
	log          *slog.Logger
	watchPoll    time.Duration
	prober       Prober        // nil: no probes
	probeEvery   time.Duration // ProbeInterval
	wakeWatch    time.Duration
	startTimeout time.Duration
	changed      func(Change)
	started      func(pod string)                 // Config.Started
	watched      func(pod string, wake time.Time) // Config.Watched
	hearsAll     func() bool                      // Config.Following
	leases       store.Leases
	takeover     time.Duration
	credentials  map[string]string
	stops        map[string]StopPolicy
	subscribers  Subscribers
	idle         idler // each stopped pod's activity (idle.go)

	// stopping is cancelled by Close: watches return and their pod reads
	// are cancelled. abandoned is cancelled when Close stops waiting: the
	// background starts still running are cancelled and their outcomes are
	// no longer written.
	stopping, abandoned context.Context
	stop, abandon       context.CancelFunc

	locks store.KeyedMutex // one per pod, held across its read-decide-write

	mu   sync.Mutex
	logs map[string]*podLog // one per pod, never removed; fields under mu
	// known is each pod's record as this process last read, stored or
	// heard of it (Elsewhere): what Answered decides on without a read.
	// The idle stop keeps its own (activity.rec): see there why.
	known    map[string]machines.Record
	watching map[watchKey]bool // the live watches
	closed   bool
	wg       sync.WaitGroup // calls in, starts and watches

	// storeFailures counts the failed store calls since one last worked,
	// of those logged once per outage (outage.go); under mu.
	storeFailures int
}

var _ resolve.Observer = (*Coordinator)(nil)

// podLog is what the Coordinator holds of one pod's wake log: read from
// the store on the pod's first event (under its lock) and again after each
// entry it writes, so the estimate costs no read per turn. Its fields are
// guarded by Coordinator.mu.
type podLog struct {
	tried    bool // a read was attempted: estimate is what it gave, or expected_wake
	loaded   bool // ... and it worked: wakes is the log
	wakes    []machines.Wake
	estimate machines.Estimate
}

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
		wakes:        cfg.Wakes,
		gpu:          cfg.GPU,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		watchPoll:    cfg.WatchPoll,
		prober:       cfg.Probe,
		probeEvery:   cfg.ProbeInterval,
		wakeWatch:    cfg.Pod.Timings().WakeWatch,
		startTimeout: cfg.StartTimeout,
		changed:      cfg.Changed,
		started:      cfg.Started,
		watched:      cfg.Watched,
		hearsAll:     cfg.Following,
		leases:       cfg.Leases,
		takeover:     cfg.Takeover,
		credentials:  cfg.Credentials,
		stops:        cfg.Stops,
		subscribers:  cfg.Subscribers,
		logs:         make(map[string]*podLog),
		known:        make(map[string]machines.Record),
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
// It reads the record and decides; a decision that changes the record is
// made again and persisted under the pod's lock (update). Then it logs the
// decision line and, when the decision is wake,
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
	c.touch(pod, func(a *activity) { a.lastAsk = c.now() })
	d, next, err := c.apply(ctx, pod, ev)
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
// conductor's readySince of the resolution it answered on. It is on every
// answer's path, before its first byte is relayed: when the record this
// process holds in memory is ready and has served a turn already, the
// answer changes nothing (the ready row on answered only marks the wake
// served) and nothing is read or written. On a store the hosts share that
// record is current within the listener's notices of the other hosts'
// changes (Elsewhere); any other record is decided as every event is.
// For a pod with an idle stop, an answer whose stamp is due (AnswerStamp)
// stamps the record in the background, once the answer's own change, if
// any, is stored: never on the answer's path.
func (c *Coordinator) Answered(ctx context.Context, pod string, readySince time.Time) {
	now := c.now()
	stamp := false
	c.touch(pod, func(a *activity) {
		a.lastAnswer = now
		stamp = c.stampDueLocked(pod, a, now)
	})
	if stamp {
		// After the event below: the stamp takes the pod's lock, which
		// the first answer of a wake must not wait for.
		defer c.stampAnswer(pod, now)
	}
	// Skipped only on a record that is the stored one (held): while
	// another host's change may have gone unheard, the answer is an event
	// decided on the record as stored.
	if rec, ok := c.held(pod); ok && rec.State == machines.Ready && rec.Served {
		return
	}
	c.event(ctx, pod, machines.Event{Trigger: machines.Answered, ReadySince: readySince})
}

// event applies an event that decides nothing, logging a failure.
func (c *Coordinator) event(ctx context.Context, pod string, ev machines.Event) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	switch _, _, err := c.apply(ctx, pod, ev); {
	case isStoreError(err):
		c.storeFailed(ctx, pod, err.Error())
	case err != nil:
		c.log.LogAttrs(ctx, slog.LevelError, err.Error(), slog.String("pod", pod))
	}
}

func orFound(l pluginapi.Lookup) pluginapi.Lookup {
	if l == "" {
		return pluginapi.LookupFound
	}
	return l
}

// Elsewhere is for a change of pod's record that another host sharing the
// store made (store.Changes). Under the pod's lock it reads the pod's wake
// log again, since the other host may have logged a wake, and the record
// as stored now, and calls seen with that record: seen runs in order with
// this host's own changes of the pod (Config.Changed runs under the same
// lock), and gets the newest record even when changes came quicker than
// their notices. seen must not block or call back into the Coordinator.
//
// Between another host's change and its notice, this host's estimate may
// be the one before it, and a turn it answers may miss marking a wake just
// logged elsewhere as served: the notices come within about a second.
func (c *Coordinator) Elsewhere(pod string, seen func(machines.Record)) error {
	if !c.enter() {
		return ErrClosed
	}
	defer c.wg.Done()
	unlock := c.lockPod(pod)
	defer unlock()
	if c.wakes != nil {
		c.mu.Lock()
		if c.logs[pod] == nil {
			c.logs[pod] = &podLog{}
		}
		c.mu.Unlock()
		c.readWakeLogLocked(c.stopping, pod)
	}
	rec, err := c.records.Record(c.stopping, pod)
	if err != nil {
		c.forget(pod) // it changed elsewhere: what this process holds is old
		return fmt.Errorf("wake: record of pod %s: %w", pod, err)
	}
	c.remember(pod, rec)
	seen(rec)
	return nil
}

// Record returns the pod's current record.
func (c *Coordinator) Record(ctx context.Context, pod string) (machines.Record, error) {
	r, err := c.records.Record(ctx, pod)
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
func (c *Coordinator) lockPod(pod string) func() { return c.locks.Lock(pod) }

// now is the clock's reading without a monotonic part, so that it compares
// like the times a store gives back.
func (c *Coordinator) now() time.Time { return c.clock.Now().Round(0) }
