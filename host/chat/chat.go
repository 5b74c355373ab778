package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// reply is the body of every 200 from /api/chat: a model's answer and every
// wake-policy reply alike (D4).
type reply struct {
	Reply       string       `json:"reply"`
	SessionID   string       `json:"sessionId"`
	PendingWake *pendingWire `json:"pendingWake,omitempty"`
}

// pendingWire is the pendingWake marker as clients see it.
type pendingWire struct {
	Key             string     `json:"key"`
	Pod             string     `json:"pod"`
	Provider        string     `json:"provider"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	State           string     `json:"state"`
}

func wirePending(p store.Pending) *pendingWire {
	w := &pendingWire{Key: p.Key, Pod: p.Pod, Provider: p.Provider, State: p.State}
	if !p.WakeRequestedAt.IsZero() {
		t := p.WakeRequestedAt.UTC()
		w.WakeRequestedAt = &t
	}
	return w
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodPost) {
		return
	}
	req, err := readRequest(w, r, s.cfg.MaxBody, s.maxMessage)
	if err != nil {
		var re *requestError
		errors.As(err, &re)
		writeError(w, re.Status, re.Msg)
		return
	}
	if req.SessionID == "" {
		req.SessionID = s.cfg.NewToken()
	}
	if !s.slots.take(r.Context(), req.SessionID) {
		writeError(w, http.StatusConflict, "a turn is already in flight for this session")
		return
	}
	defer s.slots.release(req.SessionID)
	defer func() {
		if p := recover(); p != nil {
			// A crashing provider, plugin adapter or store never takes the host
			// down, and the slot is released by the deferred release above.
			s.cfg.Logger.Error("turn panicked", "session", req.SessionID, "panic", fmt.Sprint(p))
			writeProviderFailed(w)
		}
	}()
	switch req.WakeMode {
	case ModeWait:
		s.wait(w, r.Context(), req)
	case ModeResume:
		s.resume(w, r.Context(), req)
	default:
		s.legacy(w, r.Context(), req)
	}
}

// legacy runs the turn through the provider chain; a not-ready error runs
// the wake policy (D4).
func (s *Server) legacy(w http.ResponseWriter, ctx context.Context, req request) {
	res, err := s.cfg.Agent.Process(ctx, req.SessionID, req.Message)
	if _, d, done := s.settle(w, ctx, req, res, err); !done {
		writeJSON(w, http.StatusOK, reply{Reply: d.Text, SessionID: req.SessionID})
	}
}

// wait pins the chain's first provider. A turn that can run, runs; one that
// finds the model not ready runs the policy (which may wake) and leaves a
// pendingWake marker instead of running the prompt (#715).
func (s *Server) wait(w http.ResponseWriter, ctx context.Context, req request) {
	provider := s.cfg.Agent.First()
	res, err := s.cfg.Agent.ProcessOn(ctx, req.SessionID, req.Message, provider, s.cfg.NoResend)
	nr, d, done := s.settle(w, ctx, req, res, err)
	if done {
		return
	}
	rec, err := s.cfg.Wake.Record(nr.Pod)
	if err != nil {
		s.failed(w, ctx, req.SessionID, err)
		return
	}
	p := store.Pending{
		Key: s.cfg.NewToken(), Pod: nr.Pod, Provider: provider,
		WakeRequestedAt: rec.WakeRequestedAt, State: string(d.To), CreatedAt: s.cfg.Clock.Now(),
	}
	if err := s.cfg.Pending.PutPending(req.SessionID, p); err != nil {
		s.failed(w, ctx, req.SessionID, err)
		return
	}
	writeJSON(w, http.StatusOK, reply{Reply: d.Text, SessionID: req.SessionID, PendingWake: wirePending(p)})
}

// settle answers a turn that reached a model (200) or failed plainly (502)
// and reports done. A not-ready turn is left to the caller, with the wake
// policy's decision, already acted on.
func (s *Server) settle(w http.ResponseWriter, ctx context.Context, req request, res agent.Result, err error) (*resolve.NotReadyError, machines.Decision, bool) {
	session := req.SessionID
	if err == nil {
		s.answered(w, req, res)
		return nil, machines.Decision{}, true
	}
	nr, ok := s.wakeable(err)
	if !ok {
		s.failed(w, ctx, session, err)
		return nil, machines.Decision{}, true
	}
	d, err := s.notReady(ctx, nr)
	if err != nil {
		s.failed(w, ctx, session, err)
		return nil, machines.Decision{}, true
	}
	return nr, d, false
}

// resume runs a held prompt once the model is freshly ready, on the pinned
// provider, exactly once. It never wakes (#715).
func (s *Server) resume(w http.ResponseWriter, ctx context.Context, req request) {
	p, ok, err := s.cfg.Pending.Pending(req.SessionID)
	switch {
	case err != nil:
		s.failed(w, ctx, req.SessionID, err)
		return
	case !ok:
		writeError(w, http.StatusConflict, "no pending wake for this session")
		return
	case p.Key != req.PendingWake:
		writeError(w, http.StatusConflict, "pendingWake does not match this session's pending wake")
		return
	}
	if _, ok := s.cfg.Pods[p.Pod]; !ok {
		s.cfg.Logger.Error("resume: pinned pod is no longer configured", "session", req.SessionID, "pod", p.Pod)
		writeError(w, http.StatusConflict, "the pod this wake was pinned to is no longer configured")
		return
	}
	if !s.cfg.Agent.Has(p.Provider) {
		s.cfg.Logger.Error("resume: pinned provider is no longer configured", "session", req.SessionID, "provider", p.Provider)
		writeError(w, http.StatusConflict, "the provider this wake was pinned to is no longer configured")
		return
	}
	if rec, view, fresh := s.readiness(ctx, p.Pod); !fresh {
		writeJSON(w, http.StatusOK, reply{Reply: s.describe(rec, view), SessionID: req.SessionID, PendingWake: wirePending(p)})
		return
	}
	// The key is consumed before the turn runs: a turn that ran, whatever
	// its outcome, can never be resumed twice.
	if _, err := s.cfg.Pending.TakePending(req.SessionID, p.Key); err != nil {
		writeError(w, http.StatusConflict, "no pending wake for this session")
		return
	}
	res, err := s.cfg.Agent.ProcessOn(ctx, req.SessionID, req.Message, p.Provider, s.cfg.Once)
	if err == nil {
		s.answered(w, req, res)
		return
	}
	var nr *resolve.NotReadyError
	if errors.As(err, &nr) || resolve.NeverSent(err) {
		// The pod stopped between the readiness check and the completion, and
		// the prompt provably never reached a model: keep the marker, so the
		// client can resume once the pod is back, and wake nothing.
		if perr := s.cfg.Pending.PutPending(req.SessionID, p); perr != nil {
			s.failed(w, ctx, req.SessionID, perr)
			return
		}
		var text string
		if nr != nil && nr.ModelLoading {
			// RUNNING and not answering is an event the machine takes (it
			// never wakes): loading, stuck or crashed.
			d, err := s.notReady(ctx, nr)
			if err != nil {
				s.failed(w, ctx, req.SessionID, err)
				return
			}
			text = d.Text
		} else {
			rec, view, _ := s.readiness(ctx, p.Pod)
			text = s.describe(rec, view)
		}
		s.cfg.Logger.Warn("resume: the pod stopped before the turn ran; pending wake kept", "session", req.SessionID, "pod", p.Pod)
		writeJSON(w, http.StatusOK, reply{Reply: text, SessionID: req.SessionID, PendingWake: wirePending(p)})
		return
	}
	s.failed(w, ctx, req.SessionID, err)
}

// readiness asks the conductor about pod now (the answer reaches the
// machine through the resolver's observer) and reports whether the model is
// freshly ready: the machine says ready, and the conductor said so now, not
// from cache (machines.Reports). It also returns the pod's record and view,
// for the state's reply when it is not.
func (s *Server) readiness(ctx context.Context, pod string) (machines.Record, machines.View, bool) {
	view := machines.View{Lookup: machines.LookupUnreadable}
	if podView, ok := s.cfg.Pods[pod]; ok {
		if res, err := podView.Lookup(ctx); err == nil {
			view = viewOf(res)
		}
	}
	rec, err := s.cfg.Wake.Record(pod)
	if err != nil {
		return machines.NewRecord(pod), machines.View{Lookup: machines.LookupUnreadable}, false
	}
	_, ready := machines.Reports(rec, view)
	return rec, view, ready
}

// viewOf is what the conductor said, as the machine reads it.
func viewOf(res resolve.Resolution) machines.View {
	return machines.View{Status: res.Status, IsRunning: res.IsRunning, Lookup: string(res.Lookup),
		ReadySince: res.ReadySince, FromCache: res.FromCache}
}

// describe is the state's reply for a turn that must not wake.
func (s *Server) describe(rec machines.Record, v machines.View) string {
	_, text, err := s.cfg.Policy.Describe(rec, v, s.cfg.Clock.Now())
	if err != nil {
		// Replies were rendered against sample data at load; this is a bug.
		s.cfg.Logger.Error("rendering a reply", "err", err)
		return machines.FallbackReply
	}
	return text
}

// notReady runs the pod lifecycle machine for a not-ready turn.
func (s *Server) notReady(ctx context.Context, nr *resolve.NotReadyError) (machines.Decision, error) {
	return s.cfg.Wake.NotReady(ctx, nr.Pod, nr.Status, string(nr.Lookup), nr.ModelLoading)
}

// wakeable finds a not-ready error the machine may act on: retryable, about
// a configured pod (D4, D5).
func (s *Server) wakeable(err error) (*resolve.NotReadyError, bool) {
	var nr *resolve.NotReadyError
	if !errors.As(err, &nr) || !nr.Retryable {
		return nil, false
	}
	if _, ok := s.cfg.Pods[nr.Pod]; !ok {
		return nil, false
	}
	return nr, true
}

// failed answers the generic 502 and logs the error, once, here. A turn
// the host's shutdown cut (its context ended with ErrShutdown) is no
// provider failure: it answers 503 and is logged as cut.
func (s *Server) failed(w http.ResponseWriter, ctx context.Context, session string, err error) {
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		s.cfg.Logger.Warn("turn cut by shutdown", "session", session, "err", logErr{err})
		writeError(w, http.StatusServiceUnavailable, "the host shut down before this turn finished")
		return
	}
	s.cfg.Logger.Error("turn failed", "session", session, "err", logErr{err})
	writeProviderFailed(w)
}

// answered sends a model's reply, then stores the turn before the session's
// slot is released: the user gets the answer without waiting for the disk,
// and the session's next turn (which waits for the slot) sees it in its
// history.
func (s *Server) answered(w http.ResponseWriter, req request, res agent.Result) {
	// Finishing before the reply leaves: a client may send its next turn
	// the moment it reads the reply, and that turn must wait, not get a 409.
	s.slots.finish(req.SessionID)
	writeJSON(w, http.StatusOK, reply{Reply: res.Reply, SessionID: req.SessionID})
	http.NewResponseController(w).Flush() // without Flush the reply leaves when the handler returns
	if err := s.cfg.Agent.Remember(req.SessionID, req.Message, res); err != nil {
		s.cfg.Logger.Error("the turn was answered but not stored", "session", req.SessionID, "err", logErr{err})
	}
}

// logErr logs an error through its LogValue when it has one (a not-ready
// error lists its fields, never its capabilities).
type logErr struct{ err error }

func (l logErr) LogValue() slog.Value {
	var nr *resolve.NotReadyError
	if errors.As(l.err, &nr) {
		return slog.GroupValue(slog.String("msg", l.err.Error()), slog.Any("notReady", nr))
	}
	return slog.StringValue(l.err.Error())
}
