package openai

import (
	"errors"
	"fmt"
	"time"

	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
)

// hold keeps a request that found pod waking or loading (decision d, the
// same the coordinator gave /api/chat) until the model is freshly ready,
// and then runs it once, or until HoldMax, when it is answered as in reply
// mode. A stream gets its head at once and an SSE comment every Keepalive;
// a non-streaming request waits in silence. Every HoldPoll the conductor
// is asked (the answer reaches the machine through the resolver's
// observer): freshly ready (machines.Reports) runs the completion, exactly
// once; a state that will not become ready by waiting ends the hold as in
// reply mode. A client that leaves ends it: its request never runs.
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
	wakeAt := began
	if rec, err := s.cfg.Wake.Record(pod); err == nil && !rec.WakeRequestedAt.IsZero() {
		wakeAt = rec.WakeRequestedAt
	}
	nextPoll := began.Add(s.cfg.HoldPoll)
	nextAlive := began.Add(s.cfg.Keepalive)
	for {
		now := s.cfg.Clock.Now()
		next := earliest(nextPoll, deadline)
		if t.req.stream {
			next = earliest(next, nextAlive)
		}
		select {
		case <-ctx.Done():
			s.cfg.Logger.Info("openai held request dropped for pod "+pod+": the client left", "pod", pod, "provider", t.p.Name,
				"heldFor", s.cfg.Clock.Now().Sub(began).Round(time.Second).String())
			return
		case <-s.cfg.Clock.After(next.Sub(now)):
		}
		now = s.cfg.Clock.Now()
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
		if now.Before(nextPoll) {
			continue
		}
		nextPoll = now.Add(s.cfg.HoldPoll)
		rec, view, ready := s.readiness(t, pod)
		if !ready {
			if view.Fresh() && holdable(rec.State) {
				continue
			}
			state := string(rec.State)
			if !view.Fresh() {
				state = "unreadable"
			}
			s.cfg.Logger.Info(fmt.Sprintf("openai hold for pod %s ended: the pod is %s; answered as in reply mode", pod, state),
				"pod", pod, "provider", t.p.Name, "state", state)
			s.answerAfterHold(t)
			return
		}
		resp, err := t.p.Model.StreamOnce(ctx, t.body)
		if err == nil {
			s.cfg.Logger.Info("openai held request ran for pod "+pod, "pod", pod, "provider", t.p.Name,
				"heldFor", now.Sub(began).Round(time.Second).String())
			s.relay(t, resp, stateReady)
			return
		}
		var nr *resolve.NotReadyError
		if errors.As(err, &nr) || resolve.NeverSent(err) {
			// It never reached a model: hold on, and run it when the
			// model is ready again.
			s.cfg.Logger.Warn("openai held request: the pod stopped before it ran; still held", "pod", pod, "provider", t.p.Name)
			continue
		}
		s.failed(t, err)
		return
	}
}

// answerAfterHold answers as reply mode would now: the model's answer if it
// is ready, else the machine's decision (the same as for /api/chat, which
// may wake again when a wake is due).
func (s *Server) answerAfterHold(t *turn) {
	ctx := t.r.Context()
	resp, err := t.p.Model.Stream(ctx, t.body)
	if err == nil {
		s.relay(t, resp, stateReady)
		return
	}
	nr, ok := s.wakeable(t.p, err)
	if !ok {
		s.failed(t, err)
		return
	}
	d, err := s.cfg.Wake.NotReady(ctx, nr.Pod, nr.Status, string(nr.Lookup), nr.ModelLoading)
	if err != nil {
		s.failed(t, err)
		return
	}
	s.reply(t, d)
}

// readiness asks the conductor about pod now and reports the pod's record
// and whether the model is freshly ready: the machine says ready and the
// conductor said so now (machines.Reports), as a resume requires.
func (s *Server) readiness(t *turn, pod string) (machines.Record, machines.View, bool) {
	view := machines.View{Lookup: machines.LookupUnreadable}
	if pv, ok := s.cfg.Pods[pod]; ok {
		if res, err := pv.Lookup(t.r.Context()); err == nil {
			view = machines.View{Status: res.Status, IsRunning: res.IsRunning, Lookup: string(res.Lookup),
				ReadySince: res.ReadySince, FromCache: res.FromCache}
		}
	}
	rec, err := s.cfg.Wake.Record(pod)
	if err != nil {
		return machines.NewRecord(pod), machines.View{Lookup: machines.LookupUnreadable}, false
	}
	_, ready := machines.Reports(rec, view)
	return rec, view, ready
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
