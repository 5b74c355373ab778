package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Subscribers counts each pod's live subscriptions to its changes (the
// event streams and the held requests); *events.Hub is one.
type Subscribers interface {
	Subscribers(pod string) int
}

// The idle stop. Each pod with a StopPolicy has a loop (idleLoop, started
// by Resume) that sleeps until the pod's stop is due and wakes up early on
// every change of its record (commitLocked, Elsewhere) and of its activity
// (Begin and its end, Answered, NotReady). When a stop is due the loop
// takes the stop's lease, so that of the hosts sharing the store one stops
// the pod, and re-checks under the pod's lock on the record as stored:
// a turn that began before that check wins and the stop waits for the next
// idle period. Then it calls GPU.StopPod once, outside every lock, and
// feeds hostStopped to the machine. A refused or failed stop changes
// nothing and is logged at ERROR; the loop tries again one period later.
//
// The answers are shared through the store: the idle stop measures from
// the later of this host's own last answer and the record's stamp, which
// every host that answers the pod writes (stamp.go), so that of the hosts
// sharing the store none stops a pod another answered less than
// stop_after_idle ago (within AnswerStamp). The turns in flight and the
// subscribers a host counts are its own; see docs/design.md, "The idle
// stop".

// Log lines of the idle stop (docs/operations.md).
const (
	LineStoppedIdle     = "pod stopped after idling"
	LineStoppedUnserved = "pod stopped, nobody served"
	LineStopFailed      = "pod stop failed"
)

// activity is what the host knows of one pod's use; guarded by idler.mu.
type activity struct {
	// rec is the record as last stored or seen under the pod's lock
	// (remember), read by the stop's last look (confirmStop), or listed
	// by Resume; known: it was. It is not Coordinator.known, which serves
	// other rules: a failed read of another host's change drops that one
	// (forget), where the idle stop must keep a record to find its next
	// stop; a plain read fills that one when it is empty (learn), which
	// could take the idle stop back to a record older than the one it
	// had; and the stop's last look and Resume's list fill this one
	// alone (filling that one too would change which events read the
	// store). rec is also read with the counters below under idle.mu, in
	// one look (stopDueLocked).
	rec      machines.Record
	known    bool
	inFlight int // turns, held requests and resumes of this pod
	// lastAnswer is when the model last answered a user's turn here (the
	// record's AnsweredAt is when any host last stamped one); lastEnd
	// when a turn, hold or resume of the pod last ended; lastAsk when a
	// turn last found it not ready; lastWaiter when a subscriber to its
	// events was last seen.
	lastAnswer, lastEnd, lastAsk, lastWaiter time.Time
	retryAt                                  time.Time // after a stop that did not happen
	stamping                                 bool      // a stamp of an answer is being written (stamp.go)
	keptAt                                   time.Time // when the loop last stamped a turn in flight (keepDueLocked)
	poke                                     chan struct{}
}

// idler is the Coordinator's activity of every pod. A turn whose pod is
// not known yet (a provider chain) is in flight for every pod (any).
type idler struct {
	mu       sync.Mutex
	pods     map[string]*activity
	any      int       // turns in flight of no known pod
	anyEnded time.Time // when the last of them ended
}

// podLocked is pod's activity; the caller holds mu.
func (i *idler) podLocked(pod string) *activity {
	a := i.pods[pod]
	if a == nil {
		a = &activity{poke: make(chan struct{}, 1)}
		if i.pods == nil {
			i.pods = make(map[string]*activity)
		}
		i.pods[pod] = a
	}
	return a
}

// pokeLocked wakes pod's loop (every pod's for ""); the caller holds mu.
func (i *idler) pokeLocked(pod string) {
	poke := func(a *activity) {
		select {
		case a.poke <- struct{}{}:
		default: // a poke is pending already
		}
	}
	if pod != "" {
		poke(i.podLocked(pod))
		return
	}
	for _, a := range i.pods {
		poke(a)
	}
}

// touch runs f on pod's activity and wakes its loop.
func (c *Coordinator) touch(pod string, f func(a *activity)) {
	if len(c.stops) == 0 {
		return
	}
	c.idle.mu.Lock()
	defer c.idle.mu.Unlock()
	if pod != "" {
		if _, ok := c.stops[pod]; !ok {
			return
		}
		f(c.idle.podLocked(pod))
	}
	c.idle.pokeLocked(pod)
}

// saw is a record of pod as stored (by this host or another).
func (c *Coordinator) saw(rec machines.Record) {
	c.touch(rec.Pod, func(a *activity) { a.rec, a.known = rec, true })
}

// Begin reports that a turn, a held request or a resume of pod begins: the
// idle stop waits for it to end. "" is a turn whose pod is not known yet
// (a provider chain): it holds back every pod's stop. The func it returns
// reports the end; calling it again does nothing.
func (c *Coordinator) Begin(pod string) (end func()) {
	if len(c.stops) == 0 {
		return func() {}
	}
	began, stamp := c.now(), false
	c.idle.mu.Lock()
	if pod == "" {
		c.idle.any++
	} else {
		a := c.idle.podLocked(pod)
		a.inFlight++
		// The other hosts see this turn only through the stamp: one
		// that began is use of the pod as much as an answer is.
		stamp = c.stampDueLocked(pod, a, began)
	}
	c.idle.pokeLocked(pod)
	c.idle.mu.Unlock()
	if stamp {
		c.stampAnswer(pod, began)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			now := c.now()
			c.idle.mu.Lock()
			defer c.idle.mu.Unlock()
			if pod == "" {
				c.idle.any--
				c.idle.anyEnded = now
			} else {
				a := c.idle.podLocked(pod)
				a.inFlight--
				a.lastEnd = now
			}
			c.idle.pokeLocked(pod)
		})
	}
}

// stopDueLocked says when pod's next stop is due by p, why, and since
// when it has been idle (or unserved); false when none is (it is not
// ready, a turn is in flight, or its policy is off). A reason "" is a look
// again: a subscriber follows the pod, which holds its unserved stop back
// for as long as it stays and is counted again a poll later. The caller
// holds idle.mu.
func (c *Coordinator) stopDueLocked(pod string, p StopPolicy, a *activity, now time.Time) (due time.Time, reason string, since time.Time, ok bool) {
	rec := a.rec
	if !a.known || rec.State != machines.Ready || a.inFlight > 0 || c.idle.any > 0 {
		return time.Time{}, "", time.Time{}, false
	}
	consider := func(start time.Time, d time.Duration, why string) {
		if at := start.Add(d); !ok || at.Before(due) {
			due, reason, since, ok = at, why, start, true
		}
	}
	busy := latest(rec.ReadyAt, a.lastEnd, c.idle.anyEnded)
	if p.AfterIdle > 0 {
		consider(latest(busy, a.lastAnswer, rec.AnsweredAt), p.AfterIdle, machines.StopIdle)
	}
	if p.UnservedAfter > 0 && !rec.Served && !rec.WakeRequestedAt.IsZero() {
		if c.subscribers != nil && c.subscribers.Subscribers(pod) > 0 {
			a.lastWaiter = now
			consider(now, max(c.watchPoll, time.Second), "")
		}
		consider(latest(busy, a.lastAsk, a.lastWaiter), p.UnservedAfter, machines.StopUnserved)
	}
	if ok && a.retryAt.After(due) {
		due = a.retryAt
	}
	return due, reason, since, ok
}

// latest is the latest of ts.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// idleLoop runs pod's stops by p until Close.
func (c *Coordinator) idleLoop(pod string, p StopPolicy) {
	defer c.wg.Done()
	c.idle.mu.Lock()
	poke := c.idle.podLocked(pod).poke
	c.idle.mu.Unlock()
	for {
		now := c.now()
		c.idle.mu.Lock()
		a := c.idle.podLocked(pod)
		due, reason, _, ok := c.stopDueLocked(pod, p, a, now)
		keep, keeping := c.keepDueLocked(pod, a)
		c.idle.mu.Unlock()
		if keeping && (!ok || keep.Before(due)) {
			due, reason, ok = keep, "", true
		}
		var timer <-chan time.Time
		if ok {
			timer = c.clock.After(due.Sub(now))
		}
		select {
		case <-c.stopping.Done():
			return
		case <-poke:
			continue
		case <-timer:
		}
		if keeping && reason == "" {
			c.keepStamp(pod)
		} else if reason != "" {
			c.tryStop(pod, p, reason)
		}
	}
}

// keepDueLocked says when a turn of pod in flight here next stamps its
// record: AnswerStamp after the later of the stamp this host knows and
// its last try, while a turn is in flight and the pod has an idle stop.
// A turn stamps when it begins and when it is answered; a long one (a
// stream of many minutes) would otherwise leave the record unstamped
// for its whole length, and another host's idle stop could end it. The
// caller holds idle.mu.
func (c *Coordinator) keepDueLocked(pod string, a *activity) (time.Time, bool) {
	if c.stops[pod].AfterIdle <= 0 || a.inFlight == 0 {
		return time.Time{}, false
	}
	return latest(a.rec.AnsweredAt, a.keptAt).Add(AnswerStamp), true
}

// keepStamp stamps pod's record now, for its turns in flight, when the
// stamp is due (stampDueLocked); a failed write is tried again
// AnswerStamp later, not at once.
func (c *Coordinator) keepStamp(pod string) {
	now := c.now()
	c.idle.mu.Lock()
	a := c.idle.podLocked(pod)
	stamp := a.inFlight > 0 && c.stampDueLocked(pod, a, now)
	a.keptAt = now
	c.idle.mu.Unlock()
	if stamp {
		c.stampAnswer(pod, now)
	}
}

// stopLease names the lease of pod's stop.
func stopLease(pod string) string { return "stop/" + pod }

// tryStop stops pod for reason when, on the record as stored and under
// the pod's lock, it still is due, and this host gets the stop's lease.
func (c *Coordinator) tryStop(pod string, p StopPolicy, reason string) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	if c.leases != nil {
		ok, err := c.leases.TakeLease(c.stopping, stopLease(pod))
		if err != nil || !ok {
			// Another host is stopping it, or the store failed: look
			// again a period later.
			c.retry(pod, p, reason)
			return
		}
		defer c.releaseStopLease(pod)
	}
	idleFor, ok := c.confirmStop(pod, p, reason)
	if !ok {
		return
	}
	res, err := c.callStop(pod)
	if err != nil || !res.Requested {
		c.log.LogAttrs(context.Background(), slog.LevelError,
			fmt.Sprintf("%s for pod %s: %s; the pod is left as it is, tried again in %s", LineStopFailed, pod, stopFailure(res, err), period(p, reason)),
			slog.String("pod", pod), slog.String("reason", reason))
		c.retry(pod, p, reason)
		return
	}
	if _, _, err := c.apply(c.abandoned, pod, machines.Event{Trigger: machines.HostStopped, StopReason: reason}); err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError, err.Error(), slog.String("pod", pod))
	}
	line := fmt.Sprintf("%s: pod %s, idle %s", LineStoppedIdle, pod, idleFor)
	if reason == machines.StopUnserved {
		line = fmt.Sprintf("%s: pod %s, unserved %s", LineStoppedUnserved, pod, idleFor)
	}
	c.log.LogAttrs(context.Background(), slog.LevelInfo, line, slog.String("pod", pod), slog.String("reason", reason))
}

// confirmStop is the last look before a stop: under the pod's lock, on the
// record as stored, the stop is still due now and nothing is in flight; a
// stamp another host stored since this host last saw the record postpones
// it. It returns how long the pod has been idle (or unserved).
func (c *Coordinator) confirmStop(pod string, p StopPolicy, reason string) (time.Duration, bool) {
	unlock := c.lockPod(pod)
	defer unlock()
	rec, err := c.records.Record(c.stopping, pod)
	if err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelError, fmt.Sprintf("wake: record of pod %s: %v", pod, err), slog.String("pod", pod))
		c.retry(pod, p, reason)
		return 0, false
	}
	now := c.now()
	c.idle.mu.Lock()
	defer c.idle.mu.Unlock()
	a := c.idle.podLocked(pod)
	a.rec, a.known = rec, true
	due, why, since, ok := c.stopDueLocked(pod, p, a, now)
	if !ok || why != reason || due.After(now) {
		return 0, false // a turn began, an answer came (here or elsewhere), or the pod changed
	}
	return now.Sub(since).Round(time.Second), true
}

// releaseStopLease gives the stop's lease up once the stop is done.
func (c *Coordinator) releaseStopLease(pod string) {
	if err := c.leases.ReleaseLease(c.abandoned, stopLease(pod)); err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			fmt.Sprintf("pod stop for pod %s: its lease could not be released (it lapses instead): %v", pod, err),
			slog.String("pod", pod))
	}
}

// retry puts pod's next stop attempt a period later.
func (c *Coordinator) retry(pod string, p StopPolicy, reason string) {
	c.idle.mu.Lock()
	defer c.idle.mu.Unlock()
	c.idle.podLocked(pod).retryAt = c.now().Add(period(p, reason))
}

// period is the policy's duration for reason.
func period(p StopPolicy, reason string) time.Duration {
	if reason == machines.StopUnserved {
		return p.UnservedAfter
	}
	return p.AfterIdle
}

// callStop asks the GPU plugin to stop pod, capped like a start; a
// panicking plugin call is an error.
func (c *Coordinator) callStop(pod string) (res pluginapi.StartResult, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.startTimeout+startSlack)
	defer cancel()
	defer context.AfterFunc(c.abandoned, cancel)()
	defer func() {
		if recover() != nil {
			res, err = pluginapi.StartResult{}, errStopPanicked
		}
	}()
	return c.gpu.StopPod(ctx, pod)
}

// stopFailure says why a stop did not happen, without anything that could
// hold a URL.
func stopFailure(res pluginapi.StartResult, err error) string {
	switch {
	case errors.Is(err, errStopPanicked):
		return err.Error()
	case err != nil:
		return lostClass(err)
	case res.Status != 0:
		return fmt.Sprintf("refused (HTTP %d)", res.Status)
	case res.Error != "":
		return "not sent (" + res.Error + ")"
	default:
		return "refused"
	}
}

var errStopPanicked = errors.New("the GPU plugin's stop panicked")

// startStops starts the loop of every configured pod with a StopPolicy,
// from its stored record (recs; a pod with none is asleep).
func (c *Coordinator) startStops(recs []machines.Record, configured func(pod string) bool) {
	for pod, p := range c.stops {
		if !configured(pod) || (p.AfterIdle <= 0 && p.UnservedAfter <= 0) {
			continue
		}
		rec := machines.NewRecord(pod)
		for _, r := range recs {
			if r.Pod == pod {
				rec = r
			}
		}
		c.idle.mu.Lock()
		if a := c.idle.podLocked(pod); !a.known {
			a.rec, a.known = rec, true
		}
		c.idle.mu.Unlock()
		c.wg.Add(1) // under Resume's own count
		go c.idleLoop(pod, p)
	}
}
