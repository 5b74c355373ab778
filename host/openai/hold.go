package openai

import (
	"errors"
	"fmt"
	"time"

	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
)

// holdRetry is how long a held request waits, after its run provably never
// reached a model (the pod stopped between the readiness and the run), before
// it reads the pod once and trusts the machine's ready again.
const holdRetry = 5 * time.Second

// hold keeps a request that found pod waking or loading (decision d, the
// same the coordinator gave /api/chat) until the model is freshly ready,
// and then runs it once, or until HoldMax, when it is answered as in reply
// mode. A stream gets its head at once and an SSE comment every Keepalive;
// a non-streaming request waits in silence.
//
// It asks the conductor nothing: it subscribes to the pod's changes (Events,
// fed by the wake's watch and by every turn and view), so any number of held
// requests cost no lookup of their own. A change to freshly ready
// (machines.Reports, the readiness a resume requires) runs the completion,
// exactly once; a change to a state that will not become ready by waiting,
// or to a view that is not fresh, ends the hold as in reply mode, and so
// does the host's shutdown. A client that leaves ends it: its request never
// runs.
func (s *Server) hold(t *turn, pod string, d machines.Decision) {
	defer s.cfg.Metrics.Hold()()
	ctx := t.r.Context()
	began := s.cfg.Clock.Now()
	deadline := began.Add(s.cfg.HoldMax)
	// The server's write timeout would cut a long hold.
	_ = t.rc.SetWriteDeadline(time.Now().Add(s.cfg.HoldMax + s.cfg.WriteTimeout))
	if t.req.stream {
		t.head("text/event-stream", string(d.To), true)
	}
	s.cfg.Logger.Info("openai request held for pod "+pod, "pod", pod, "provider", t.p.Name, "state", string(d.To))
	cur, sub := s.cfg.Events.Subscribe(pod)
	defer func() { sub.Close() }() // sub is replaced when it lagged
	wakeAt := began
	if !cur.Record.WakeRequestedAt.IsZero() {
		wakeAt = cur.Record.WakeRequestedAt
	}
	dropped := func() {
		s.cfg.Logger.Info("openai held request dropped for pod "+pod+": the client left", "pod", pod, "provider", t.p.Name,
			"heldFor", s.cfg.Clock.Now().Sub(began).Round(time.Second).String())
	}
	nextAlive := began.Add(s.cfg.Keepalive)
	var retryAt time.Time // set after a run that never reached a model
	changed := false      // cur came with a change, not with the subscription
	var timer <-chan time.Time
	var timerAt time.Time
	for {
		if ctx.Err() != nil {
			dropped()
			return
		}
		state, ready := cur.Report()
		switch {
		case ready && retryAt.IsZero():
			ran := s.runHeld(t, pod, began)
			if ran {
				return
			}
			retryAt = s.cfg.Clock.Now().Add(holdRetry)
		case state != machines.Ready && !holdable(state), changed && !cur.View.Fresh():
			name := string(state)
			if !cur.View.Fresh() {
				name = "unreadable"
			}
			s.cfg.Logger.Info(fmt.Sprintf("openai hold for pod %s ended: the pod is %s; answered as in reply mode", pod, name),
				"pod", pod, "provider", t.p.Name, "state", name)
			s.answerAfterHold(t)
			return
		}

		next := deadline
		if t.req.stream {
			next = earliest(next, nextAlive)
		}
		if !retryAt.IsZero() {
			next = earliest(next, retryAt)
		}
		if timer == nil || !next.Equal(timerAt) {
			// One timer per wake-up time: a change does not add another.
			timer, timerAt = s.cfg.Clock.After(next.Sub(s.cfg.Clock.Now())), next
		}
		select {
		case <-ctx.Done():
			dropped()
			return
		case u, ok := <-sub.C():
			if ok {
				cur, changed = u, true
				continue
			}
			if errors.Is(sub.Err(), events.ErrLagged) {
				// Changes came faster than this loop took them: start
				// again from the current one.
				cur, sub = s.cfg.Events.Subscribe(pod)
				changed = true
				continue
			}
			s.cfg.Logger.Info("openai hold for pod "+pod+" ended: the host is shutting down; answered as in reply mode", "pod", pod, "provider", t.p.Name)
			s.answerAfterHold(t)
			return
		case <-timer:
			timer = nil
		}
		now := s.cfg.Clock.Now()
		if t.req.stream && !now.Before(nextAlive) {
			comment := fmt.Sprintf(": waking — %d min elapsed\n\n", int(now.Sub(wakeAt)/time.Minute))
			if err := t.write(s, []byte(comment)); err != nil {
				return // the client left; nothing ran
			}
			nextAlive = now.Add(s.cfg.Keepalive)
		}
		if !now.Before(deadline) {
			s.cfg.Logger.Info("openai hold for pod "+pod+" ended at hold_max; answered as in reply mode", "pod", pod, "provider", t.p.Name)
			s.answerAfterHold(t)
			return
		}
		if !retryAt.IsZero() && !now.Before(retryAt) {
			// Nothing may have seen the pod since the run failed: read it
			// once (the answer reaches the machine), then go by the machine.
			retryAt = time.Time{}
			if pv, ok := s.cfg.Pods[pod]; ok {
				_, _ = pv.Lookup(ctx)
			}
			cur, changed = s.cfg.Events.Current(pod), true
		}
	}
}

// runHeld runs the held completion, once. It reports whether the request
// was answered: the model's answer relayed, or its failure. False means the
// completion provably never reached a model (the pod stopped before it ran):
// the request is still held.
func (s *Server) runHeld(t *turn, pod string, began time.Time) bool {
	heldFor := s.cfg.Clock.Now().Sub(began) // until it ran, not until the model's head came
	resp, err := t.p.Model.StreamOnce(t.r.Context(), t.body)
	if err == nil {
		s.cfg.Logger.Info("openai held request ran for pod "+pod, "pod", pod, "provider", t.p.Name,
			"heldFor", heldFor.Round(time.Second).String())
		s.relay(t, resp, stateReady)
		return true
	}
	var nr *resolve.NotReadyError
	if errors.As(err, &nr) || resolve.NeverSent(err) {
		s.cfg.Logger.Warn("openai held request: the pod stopped before it ran; still held", "pod", pod, "provider", t.p.Name)
		return false
	}
	s.failed(t, err)
	return true
}

// answerAfterHold answers as reply mode would now: the model's answer if it
// is ready, else the machine's decision (the same as for /api/chat, which
// may wake again when a wake is due).
func (s *Server) answerAfterHold(t *turn) {
	if _, d, ok := s.answerOrDecide(t); ok {
		s.reply(t, d)
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
