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

// learn keeps rec, from a plain read outside the pod's lock, as the record
// this process knows of its pod when it knows none yet. A known record is
// replaced only under the pod's lock (remember), in the order of the
// changes: a plain read may be older than a change stored meanwhile.
func (c *Coordinator) learn(pod string, rec machines.Record) {
	c.mu.Lock()
	if _, ok := c.known[pod]; !ok {
		c.known[pod] = rec
	}
	c.mu.Unlock()
}

// held is the record this process holds of pod, when that is the record
// as stored: it has read or stored one, and no other host's change can
// have gone unheard (Config.Following).
func (c *Coordinator) held(pod string) (machines.Record, bool) {
	if c.hearsAll != nil && !c.hearsAll() {
		return machines.Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.known[pod]
	return rec, ok
}

// forget drops the record this process holds of pod: the next event reads
// the stored one.
func (c *Coordinator) forget(pod string) {
	c.mu.Lock()
	delete(c.known, pod)
	c.mu.Unlock()
}

// remember keeps rec, as stored now, as the record this process last knew
// of its pod, under the pod's lock: what events are decided on (held) and
// what the idle stop reads (saw).
func (c *Coordinator) remember(pod string, rec machines.Record) {
	c.mu.Lock()
	c.known[pod] = rec
	c.mu.Unlock()
	c.saw(rec)
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

// Estimate is how long a wake of pod takes, as the replies quote it: the
// median of its last completed wakes from the wake log
// (machines.EstimateWake), or expected_wake while there is none or no log.
// Estimate(pod).Wake is the figure an event stream reports. It may be
// called from Config.Changed.
func (c *Coordinator) Estimate(pod string) machines.Estimate {
	c.mu.Lock()
	l := c.logs[pod]
	if l != nil && l.tried {
		defer c.mu.Unlock()
		return l.estimate
	}
	c.mu.Unlock()
	// Never read yet, so no event of pod is under way in this goroutine
	// (its first event reads the log before Changed runs): the pod's lock
	// is free to take.
	unlock := c.lockPod(pod)
	defer unlock()
	est, _ := c.wakeLogLocked(c.stopping, pod)
	return est
}

// wakeLog is wakeLogLocked for a caller that does not hold the pod's lock:
// the log as last read, or, when it has not been read (or the last read
// failed), read now under the pod's lock.
func (c *Coordinator) wakeLog(ctx context.Context, pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	if l := c.logs[pod]; l != nil && l.tried && (l.loaded || c.wakes == nil) {
		defer c.mu.Unlock()
		return l.estimate, l.wakes
	}
	c.mu.Unlock()
	unlock := c.lockPod(pod)
	defer unlock()
	return c.wakeLogLocked(ctx, pod)
}

// heldWakeLog is pod's estimate and wake log as the Coordinator holds
// them, without a read; expected_wake when it holds none.
func (c *Coordinator) heldWakeLog(pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.logs[pod]; l != nil && l.tried {
		return l.estimate, l.wakes
	}
	return machines.EstimateWake(nil, c.pod.Timings().ExpectedWake), nil
}

// wakeLogLocked returns pod's estimate and wake log, reading the log from
// the store when it has not been read (or the last read failed). The
// caller holds the pod's lock. A failed read is logged and keeps the last
// estimate (expected_wake when there is none); the next event reads again.
func (c *Coordinator) wakeLogLocked(ctx context.Context, pod string) (machines.Estimate, []machines.Wake) {
	c.mu.Lock()
	l, ok := c.logs[pod]
	if !ok {
		l = &podLog{}
		c.logs[pod] = l
	}
	if l.loaded || c.wakes == nil {
		if !l.tried {
			l.tried, l.estimate = true, machines.EstimateWake(nil, c.pod.Timings().ExpectedWake)
		}
		defer c.mu.Unlock()
		return l.estimate, l.wakes
	}
	c.mu.Unlock()
	c.readWakeLogLocked(ctx, pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.estimate, l.wakes
}

// readWakeLogLocked reads pod's wake log from the store into its podLog,
// under the pod's lock.
func (c *Coordinator) readWakeLogLocked(ctx context.Context, pod string) {
	ws, err := c.wakes.Wakes(ctx, pod)
	c.mu.Lock()
	l := c.logs[pod]
	l.tried = true
	if err == nil {
		l.loaded, l.wakes = true, ws
		l.estimate = machines.EstimateWake(ws, c.pod.Timings().ExpectedWake)
	} else {
		l.loaded = false
		if l.estimate.Wake == 0 {
			l.estimate = machines.EstimateWake(nil, c.pod.Timings().ExpectedWake)
		}
	}
	c.mu.Unlock()
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError,
			fmt.Sprintf("wake log unreadable for pod %s: %v; the replies keep the last estimate", pod, err),
			slog.String("pod", pod))
	}
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

// apply runs ev for pod (update): read the record, stamp ev.At, decide,
// and persist a change under the pod's lock.
func (c *Coordinator) apply(ctx context.Context, pod string, ev machines.Event) (machines.Decision, machines.Record, error) {
	d, next, _, err := c.update(ctx, pod, ev, nil)
	return d, next, err
}

// update runs ev for pod: take the record; when admit says ev is for it
// (nil admits every record), stamp ev.At and the pod's estimate, decide,
// and persist what changed, with the wake log entry the change makes
// (machines.LogWake) in the same transaction. applied is false when admit
// turned ev away; nothing was written then.
//
// Most events change nothing (an ask while the pod wakes: "still
// waking"): they are decided on the record this process holds (held), or
// on a plain read when it holds none that is current, take no lock and
// write nothing, as if decided at the moment the record was last stored,
// so that the asks of a pod neither queue behind each other nor cost a
// round trip each on PostgreSQL. An event that changes the record is
// decided again on the record as it is under the pod's lock, in this
// process (lockPod) and across every host sharing the store
// (Records.UpdateRecord): change.
func (c *Coordinator) update(ctx context.Context, pod string, ev machines.Event, admit func(machines.Record) bool) (d machines.Decision, next machines.Record, applied bool, err error) {
	est, _ := c.wakeLog(ctx, pod)
	rec, ok := c.held(pod)
	if !ok {
		if rec, err = c.records.Record(ctx, pod); err != nil {
			return machines.Decision{}, machines.Record{}, false, storeError{fmt.Errorf("wake: record of pod %s: %w", pod, err)}
		}
		c.storeAnswered(ctx)
		c.learn(pod, rec)
	}
	if admit != nil && !admit(rec) {
		return machines.Decision{}, rec, false, nil
	}
	seen := ev
	seen.Estimate = est
	d, next, _, err = c.decide(rec, seen)
	switch {
	case err != nil:
		return machines.Decision{}, machines.Record{}, false, err
	case next.Equal(rec):
		return d, next, true, nil
	}
	return c.change(ctx, pod, ev, admit)
}

// change is update for an event that changed the record on a plain read:
// under the pod's lock it decides again on the record as stored and stores
// what changed (commitLocked).
func (c *Coordinator) change(ctx context.Context, pod string, ev machines.Event, admit func(machines.Record) bool) (d machines.Decision, next machines.Record, applied bool, err error) {
	unlock := c.lockPod(pod)
	defer unlock()
	// update read the log (or tried to) for this event; an entry written
	// since is in what the Coordinator holds. Not in fn: fn must not call
	// the store.
	var logged []machines.Wake
	ev.Estimate, logged = c.heldWakeLog(pod)
	e, after, err := c.commitLocked(ctx, pod, func(rec machines.Record) (e edit, err error) {
		if applied = admit == nil || admit(rec); !applied {
			return edit{next: rec}, nil
		}
		if e.d, e.next, ev, err = c.decide(rec, ev); err != nil {
			return edit{}, err
		}
		e.ev = ev
		if w, ok := machines.LogWake(logged, rec, e.next); ok && c.wakes != nil {
			// The outcome and its log entry are stored together.
			e.entry = &w
		}
		return e, nil
	})
	switch {
	case isStoreError(err):
		return machines.Decision{}, machines.Record{}, false, fmt.Errorf("wake: update record of pod %s: %w", pod, err)
	case err != nil:
		return machines.Decision{}, machines.Record{}, false, err
	}
	return e.d, after, applied, nil
}

// edit is what a change makes of a pod's record: the record to store, the
// wake log entry stored with it (nil for none), and the decision and event
// that made it, for Changed and the wake-ready line.
type edit struct {
	next  machines.Record
	entry *machines.Wake
	d     machines.Decision
	ev    machines.Event
}

// commitLocked stores fn's edit of pod's record: the one way the
// Coordinator changes a record, for an event (change) as for an answer's
// stamp (writeStamp). The caller holds the pod's in-process lock;
// Records.UpdateRecord holds the store's across fn, which gets the record
// as stored and must not call the store. fn's error is returned as it is;
// a failed store call as a storeError, which the caller words and logs
// once per outage. Once the store answered: a change stored has the wake
// log read again when it logged a wake, becomes the record this process
// holds (remember), goes to Changed and logs the wake-ready line, still
// under the in-process lock, so one pod's Changed calls come in the order
// of its changes; a record fn left as it was is the newest this process
// knows, and is held.
func (c *Coordinator) commitLocked(ctx context.Context, pod string, fn func(machines.Record) (edit, error)) (edit, machines.Record, error) {
	var e edit
	var fnErr error
	before, after, err := c.records.UpdateRecord(ctx, pod, func(rec machines.Record) (machines.Record, *machines.Wake, error) {
		e, fnErr = fn(rec)
		return e.next, e.entry, fnErr
	})
	switch {
	case fnErr != nil:
		return edit{}, machines.Record{}, fnErr
	case err != nil:
		return edit{}, machines.Record{}, storeError{err}
	}
	c.storeAnswered(ctx)
	// Changed or not, the record under the lock is the newest this process
	// knows.
	c.remember(pod, after)
	if after.Equal(before) {
		return e, after, nil
	}
	if e.entry != nil {
		c.readWakeLogLocked(ctx, pod)
	}
	if c.changed != nil {
		c.changed(Change{Before: before, After: after, Event: e.ev, Wake: e.entry})
	}
	if e.d.To == machines.Ready && machines.InProgress(e.d.From) {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			fmt.Sprintf("wake ready for pod %s: ready since %s", pod, machines.FormatClock(after.ReadyAt, e.ev.At)),
			slog.String("pod", pod), slog.Time("wakeRequestedAt", after.WakeRequestedAt))
	}
	return e, after, nil
}

// decide decides ev on rec, stamping ev.At unless the caller did (a
// probe's answer is stamped when the watch saw it): the new record, which
// update stores unless it is unchanged.
func (c *Coordinator) decide(rec machines.Record, ev machines.Event) (machines.Decision, machines.Record, machines.Event, error) {
	if ev.At.IsZero() {
		ev.At = c.now()
	}
	d, next, err := c.pod.Decide(rec, ev)
	if err != nil {
		return machines.Decision{}, machines.Record{}, ev, fmt.Errorf("wake: decide %s for pod %s: %w", ev.Trigger, rec.Pod, err)
	}
	// Most asks in a window change nothing ("still waking"), and most
	// answered turns find the pod ready: update writes nothing for them,
	// as a write, and its fsync, would only slow every reply down.
	return d, next, ev, nil
}

// feed runs an outcome event of the wake requested at wake. When the record
// is on another wake (superseded) it writes nothing and returns false; the
// machine would drop the event too, and the caller stops.
func (c *Coordinator) feed(ctx context.Context, pod string, wake time.Time, ev machines.Event) (bool, error) {
	ev.Wake = wake
	_, _, applied, err := c.update(ctx, pod, ev, func(rec machines.Record) bool { return rec.WakeRequestedAt.Equal(wake) })
	return applied, err
}
