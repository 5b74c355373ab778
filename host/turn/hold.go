package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
)

// holdRetry is how long a held turn waits, after its run provably never
// reached a model (the pod stopped between the readiness and the run),
// before it reads the pod once and trusts the machine's ready again.
const holdRetry = 5 * time.Second

// Hold is how Run holds a turn whose pod the machine says is waking or
// loading, until the model is freshly ready, and then runs its prompt
// once (resolve.Once), or until Max, when the turn is answered as without
// a hold. Holding needs Config.Events.
type Hold struct {
	Max time.Duration
	// Keepalive, when positive, calls Tick that often during the hold with
	// the time since the wake was requested; an error from Tick means the
	// client left.
	Keepalive time.Duration
	Tick      func(wake time.Duration) error
	// Start, when set, is called as the hold begins, with what the machine
	// said; the func it returns is called as the hold ends.
	Start func(Said) (end func())
	// Provider names the turn's provider in the hold's log lines.
	Provider string
}

// hold is Run for a turn that may be held: nr is its model's not-ready
// error.
//
// A hold starts from its own decision and ends only on a change newer than
// it (design.md, "The turn service"): it subscribes to the pod's changes before the machine decides,
// so every change it then receives was published after the decision was
// asked for, and it does not go by the current view the subscription
// starts with, which may be older than the decision (on a replica that did
// not wake the pod, it says asleep until the other replica's notice comes).
//
// It asks the conductor nothing: the changes come from Events (fed by the
// wake's watch and by every turn and view), so any number of held turns
// cost no lookup of their own. A change to freshly ready runs the prompt,
// exactly once; a change to a state that will not become ready by waiting,
// or to a view that is not fresh, ends the hold, and so do Max and the
// host's shutdown: the turn is then run again as without a hold (which may
// wake again when a wake is due). A client that leaves ends it: its prompt
// never runs.
func hold[T any](ctx context.Context, s *Service, nr *resolve.NotReadyError, h Hold, pod string, call Call[T]) (Outcome[T], error) {
	before, sub := s.cfg.Events.Subscribe(nr.Pod)
	w := &waiting{s: s, pod: nr.Pod, h: h, sub: sub}
	defer func() { w.sub.Close() }() // sub is replaced when it lagged
	said, err := s.decide(ctx, nr)
	if err != nil || !holdable(said.Decision.To) {
		return Outcome[T]{Said: said}, err
	}
	if h.Start != nil {
		defer h.Start(said)()
	}
	w.start(said, before)
	log := s.cfg.Logger.With("pod", w.pod, "provider", h.Provider)
	log.Info("openai request held for pod "+w.pod, "state", string(said.Decision.To))
	for {
		switch w.awaitReady(ctx) {
		case awaitReady:
			heldFor := s.cfg.Clock.Now().Sub(w.began) // until it ran, not until the model's head came
			v, err := call(ctx, resolve.Once)
			if err == nil {
				log.Info("openai held request ran for pod "+w.pod, "heldFor", heldFor.Round(time.Second).String())
				return answered(v), nil
			}
			var nr *resolve.NotReadyError
			if !errors.As(err, &nr) && !resolve.NeverSent(err) {
				return Outcome[T]{}, err
			}
			log.Warn("openai held request: the pod stopped before it ran; still held")
			w.retryAt = s.cfg.Clock.Now().Add(holdRetry)
			continue
		case awaitLeft:
			log.Info("openai held request dropped for pod "+w.pod+": the client left",
				"heldFor", s.cfg.Clock.Now().Sub(w.began).Round(time.Second).String())
			return Outcome[T]{Left: true}, nil
		case awaitTickFailed:
			return Outcome[T]{Left: true}, nil // the client left; nothing ran
		case awaitNotReady:
			log.Info(fmt.Sprintf("openai hold for pod %s ended: the pod is %s; answered as in reply mode", w.pod, w.endedAs),
				"state", w.endedAs)
		case awaitShutdown:
			log.Info("openai hold for pod " + w.pod + " ended: the host is shutting down; answered as in reply mode")
		case awaitTimedOut:
			log.Info("openai hold for pod " + w.pod + " ended at hold_max; answered as in reply mode")
		}
		return Run(ctx, s, Ask{Pod: pod, Send: resolve.Retry}, call)
	}
}

// awaited is how a wait for a pod's readiness ended.
type awaited int

const (
	awaitReady      awaited = iota // freshly ready (machines.Reports)
	awaitNotReady                  // a change to a state waiting will not make ready, or to a view not fresh
	awaitTimedOut                  // Hold.Max passed
	awaitShutdown                  // the events ended: the host is shutting down
	awaitLeft                      // the turn's context ended
	awaitTickFailed                // a keepalive could not be sent: the client left
)

// waiting is one held turn's wait for its pod, across its runs.
type waiting struct {
	s   *Service
	pod string
	h   Hold
	sub *events.Subscription

	// decided is the state the decision said; cur, once taken is set, the
	// newest change since, and changed whether it came with a change.
	decided engine.State
	cur     events.Update
	taken   bool

	began, deadline, nextAlive time.Time
	wakeAt                     time.Time // the wake's request, for the keepalive's elapsed time
	retryAt                    time.Time // set after a run that never reached a model
	timer                      <-chan time.Time
	timerAt                    time.Time
	endedAs                    string // the state an awaitNotReady ended on
}

// start begins the wait from said. before is the view the subscription
// started with: older than the decision, it only says when the wake was
// requested, and only when it is on the state the decision says.
func (w *waiting) start(said Said, before events.Update) {
	w.decided = said.Decision.To
	w.began = w.s.cfg.Clock.Now()
	w.deadline = w.began.Add(w.h.Max)
	w.nextAlive = w.began.Add(w.h.Keepalive)
	w.wakeAt = w.began
	if before.Record.State == w.decided && !before.Record.WakeRequestedAt.IsZero() {
		w.wakeAt = before.Record.WakeRequestedAt
	}
}

// take makes u the newest change.
func (w *waiting) take(u events.Update) {
	w.cur, w.taken = u, true
	if holdable(u.Record.State) && !u.Record.WakeRequestedAt.IsZero() {
		w.wakeAt = u.Record.WakeRequestedAt
	}
}

// report is the pod's state as the wait knows it, and whether the model is
// freshly ready: the decision's, until a change came.
func (w *waiting) report() (engine.State, bool) {
	if !w.taken {
		return w.decided, false
	}
	return w.cur.Report()
}

// keepalive reports whether the wait ticks.
func (w *waiting) keepalive() bool { return w.h.Keepalive > 0 && w.h.Tick != nil }

// awaitReady waits until the pod is freshly ready, or will not become
// ready by waiting, or the hold ends; the state a hold waits through is
// owned by the machine, and this is where the wait is decided, never by a
// door reading a snapshot. After a run that never reached a model
// (retryAt), a ready is trusted again only at retryAt, after one read of
// the pod.
func (w *waiting) awaitReady(ctx context.Context) awaited {
	clk := w.s.cfg.Clock
	for {
		if ctx.Err() != nil {
			return awaitLeft
		}
		state, ready := w.report()
		switch {
		case ready && w.retryAt.IsZero():
			return awaitReady
		case state != machines.Ready && !holdable(state), w.taken && !w.cur.View.Fresh():
			w.endedAs = string(state)
			if w.taken && !w.cur.View.Fresh() {
				w.endedAs = "unreadable"
			}
			return awaitNotReady
		}

		next := w.deadline
		if w.keepalive() {
			next = earliest(next, w.nextAlive)
		}
		if !w.retryAt.IsZero() {
			next = earliest(next, w.retryAt)
		}
		if w.timer == nil || !next.Equal(w.timerAt) {
			// One timer per wake-up time: a change does not add another.
			w.timer, w.timerAt = clk.After(next.Sub(clk.Now())), next
		}
		select {
		case <-ctx.Done():
			return awaitLeft
		case u, ok := <-w.sub.C():
			if ok {
				w.take(u)
				continue
			}
			if errors.Is(w.sub.Err(), events.ErrLagged) {
				// Changes came faster than this loop took them: start
				// again from the current one, which is newer than every
				// change taken.
				var cur events.Update
				cur, w.sub = w.s.cfg.Events.Subscribe(w.pod)
				w.take(cur)
				continue
			}
			return awaitShutdown
		case <-w.timer:
			w.timer = nil
		}
		now := clk.Now()
		if w.keepalive() && !now.Before(w.nextAlive) {
			if err := w.h.Tick(now.Sub(w.wakeAt)); err != nil {
				return awaitTickFailed
			}
			w.nextAlive = now.Add(w.h.Keepalive)
		}
		if !now.Before(w.deadline) {
			return awaitTimedOut
		}
		if !w.retryAt.IsZero() && !now.Before(w.retryAt) {
			// Nothing may have seen the pod since the run failed: read it
			// once (the answer reaches the machine), then go by the
			// machine's current view, newer than any change taken.
			w.retryAt = time.Time{}
			if pv, ok := w.s.cfg.Pods[w.pod]; ok {
				_, _ = pv.Lookup(ctx)
			}
			w.take(w.s.cfg.Events.Current(w.pod))
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Holds reports whether the service can hold a turn (Config.Events is
// set).
func (s *Service) Holds() bool { return s.cfg.Events != nil }
