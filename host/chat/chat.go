package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/agent"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
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
	// Events is the pod's event stream, which tells the client when to
	// resume without polling.
	Events string `json:"events"`
}

func wirePending(p store.Pending) *pendingWire {
	w := &pendingWire{Key: p.Key, Pod: p.Pod, Provider: p.Provider, State: p.State, Events: events.Path(p.Pod)}
	if !p.WakeRequestedAt.IsZero() {
		t := p.WakeRequestedAt.UTC()
		w.WakeRequestedAt = &t
	}
	return w
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	count := func(result string) { s.cfg.Metrics.Turn(metrics.DoorAPIChat, result, time.Since(began)) }
	if !jsonhttp.Allow(w, r, http.MethodPost) {
		count(metrics.ResultMethodNotAllowed)
		return
	}
	req, err := readRequest(w, r, s.cfg.MaxBody, s.maxMessage)
	if err != nil {
		var re *requestError
		errors.As(err, &re)
		jsonhttp.Error(w, re.Status, re.Msg)
		count(requestResult(re.Status))
		return
	}
	if req.SessionID == "" {
		req.SessionID = s.cfg.NewToken()
	}
	if !s.slots.take(r.Context(), req.SessionID) {
		jsonhttp.Error(w, http.StatusConflict, busy)
		count(metrics.ResultConflict)
		return
	}
	// Counted before the slot is released: once Wait returns for the
	// session, its turn is in the metrics. What each path answered is its
	// result: answered, the key of the policy's reply, or an error class.
	result := metrics.ResultInternalError
	turnTaken := false
	defer func() {
		if remember := s.slots.finishing(req.SessionID); remember != nil {
			// A model answered and the reply is sent: the turn is stored
			// after the handler returns, so that net/http can read the
			// connection's next request meanwhile (it reads none until the
			// handler returns), and the slot, and the session's turn on a
			// shared store, are held until it is stored.
			go s.store(context.WithoutCancel(r.Context()), req.SessionID, remember, func() { count(result) })
			return
		}
		count(result)
		s.endTurn(context.WithoutCancel(r.Context()), req.SessionID, turnTaken)
	}()
	if refused, mayRun := s.takeTurn(w, r.Context(), req.SessionID); !mayRun {
		result = refused
		return
	}
	turnTaken = true
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
		result = s.wait(w, r.Context(), req)
	case ModeResume:
		result = s.resume(w, r.Context(), req)
	default:
		result = s.legacy(w, r.Context(), req)
	}
}

// requestResult is the turn metrics' class of a request refused with
// status.
func requestResult(status int) string {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return metrics.ResultTooLarge
	case http.StatusUnsupportedMediaType:
		return metrics.ResultUnsupportedMediaType
	}
	return metrics.ResultBadRequest
}

// legacy runs the turn through the provider chain; a not-ready error runs
// the wake policy (D4).
func (s *Server) legacy(w http.ResponseWriter, ctx context.Context, req request) string {
	res, err := s.cfg.Agent.Process(ctx, req.SessionID, req.Message)
	_, d, result, done := s.settle(w, ctx, req, res, err)
	if done {
		return result
	}
	jsonhttp.Write(w, http.StatusOK, reply{Reply: d.Text, SessionID: req.SessionID})
	return string(d.Reply)
}

// wait pins the chain's first provider. A turn that can run, runs; one that
// finds the model not ready runs the policy (which may wake) and leaves a
// pendingWake marker instead of running the prompt (#715).
func (s *Server) wait(w http.ResponseWriter, ctx context.Context, req request) string {
	provider := s.cfg.Agent.First()
	res, err := s.cfg.Agent.ProcessOn(ctx, req.SessionID, req.Message, provider, s.cfg.NoResend)
	nr, d, result, done := s.settle(w, ctx, req, res, err)
	if done {
		return result
	}
	rec, err := s.cfg.Wake.Record(ctx, nr.Pod)
	if err != nil {
		return s.failed(w, ctx, req.SessionID, err)
	}
	p := store.Pending{
		Key: s.cfg.NewToken(), Pod: nr.Pod, Provider: provider,
		WakeRequestedAt: rec.WakeRequestedAt, State: string(d.To), CreatedAt: s.cfg.Clock.Now(),
	}
	if err := s.cfg.Pending.PutPending(ctx, req.SessionID, p); err != nil {
		return s.failed(w, ctx, req.SessionID, err)
	}
	jsonhttp.Write(w, http.StatusOK, reply{Reply: d.Text, SessionID: req.SessionID, PendingWake: wirePending(p)})
	return string(d.Reply)
}

// settle answers a turn that reached a model (200) or failed plainly (502)
// and reports done, with the turn's result. A not-ready turn is left to the
// caller, with the wake policy's decision, already acted on.
func (s *Server) settle(w http.ResponseWriter, ctx context.Context, req request, res agent.Result, err error) (*resolve.NotReadyError, machines.Decision, string, bool) {
	session := req.SessionID
	if err == nil {
		return nil, machines.Decision{}, s.answered(w, ctx, req, res), true
	}
	nr, ok := s.wakeable(err)
	if !ok {
		return nil, machines.Decision{}, s.failed(w, ctx, session, err), true
	}
	d, err := s.notReady(ctx, nr)
	if err != nil {
		return nil, machines.Decision{}, s.failed(w, ctx, session, err), true
	}
	return nr, d, "", false
}

// resume runs a held prompt once the model is freshly ready, on the pinned
// provider, exactly once. It never wakes (#715).
func (s *Server) resume(w http.ResponseWriter, ctx context.Context, req request) string {
	p, ok, err := s.cfg.Pending.Pending(ctx, req.SessionID)
	switch {
	case err != nil:
		return s.failed(w, ctx, req.SessionID, err)
	case !ok:
		jsonhttp.Error(w, http.StatusConflict, "no pending wake for this session")
		return metrics.ResultConflict
	case p.Key != req.PendingWake:
		jsonhttp.Error(w, http.StatusConflict, "pendingWake does not match this session's pending wake")
		return metrics.ResultConflict
	}
	if _, ok := s.cfg.Pods[p.Pod]; !ok {
		s.cfg.Logger.Error("resume: pinned pod is no longer configured", "session", req.SessionID, "pod", p.Pod)
		jsonhttp.Error(w, http.StatusConflict, "the pod this wake was pinned to is no longer configured")
		return metrics.ResultConflict
	}
	if !s.cfg.Agent.Has(p.Provider) {
		s.cfg.Logger.Error("resume: pinned provider is no longer configured", "session", req.SessionID, "provider", p.Provider)
		jsonhttp.Error(w, http.StatusConflict, "the provider this wake was pinned to is no longer configured")
		return metrics.ResultConflict
	}
	if rec, view, fresh := s.readiness(ctx, p.Pod); !fresh {
		key, text := s.describe(rec, view)
		jsonhttp.Write(w, http.StatusOK, reply{Reply: text, SessionID: req.SessionID, PendingWake: wirePending(p)})
		return key
	}
	// The key is consumed before the turn runs: a turn that ran, whatever
	// its outcome, can never be resumed twice.
	if _, err := s.cfg.Pending.TakePending(ctx, req.SessionID, p.Key); err != nil {
		jsonhttp.Error(w, http.StatusConflict, "no pending wake for this session")
		return metrics.ResultConflict
	}
	res, err := s.cfg.Agent.ProcessOn(ctx, req.SessionID, req.Message, p.Provider, s.cfg.Once)
	if err == nil {
		return s.answered(w, ctx, req, res)
	}
	var nr *resolve.NotReadyError
	if errors.As(err, &nr) || resolve.NeverSent(err) {
		// The pod stopped between the readiness check and the completion, and
		// the prompt provably never reached a model: keep the marker, so the
		// client can resume once the pod is back, and wake nothing.
		if perr := s.cfg.Pending.PutPending(ctx, req.SessionID, p); perr != nil {
			return s.failed(w, ctx, req.SessionID, perr)
		}
		var key, text string
		if nr != nil && nr.ModelLoading {
			// RUNNING and not answering is an event the machine takes (it
			// never wakes): loading, stuck or crashed.
			d, err := s.notReady(ctx, nr)
			if err != nil {
				return s.failed(w, ctx, req.SessionID, err)
			}
			key, text = string(d.Reply), d.Text
		} else {
			rec, view, _ := s.readiness(ctx, p.Pod)
			key, text = s.describe(rec, view)
		}
		s.cfg.Logger.Warn("resume: the pod stopped before the turn ran; pending wake kept", "session", req.SessionID, "pod", p.Pod)
		jsonhttp.Write(w, http.StatusOK, reply{Reply: text, SessionID: req.SessionID, PendingWake: wirePending(p)})
		return key
	}
	return s.failed(w, ctx, req.SessionID, err)
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
	rec, err := s.cfg.Wake.Record(ctx, pod)
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

// describe is the state's reply for a turn that must not wake, and its
// key.
func (s *Server) describe(rec machines.Record, v machines.View) (string, string) {
	key, text, err := s.cfg.Policy.Describe(rec, v, s.cfg.Clock.Now(), s.cfg.Wake.Estimate(rec.Pod))
	if err != nil {
		// Replies were rendered against sample data at load; this is a bug.
		s.cfg.Logger.Error("rendering a reply", "err", err)
		return metrics.ResultInternalError, machines.FallbackReply
	}
	return string(key), text
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
// provider failure: it answers 503 and is logged as cut. It returns the
// turn's result.
func (s *Server) failed(w http.ResponseWriter, ctx context.Context, session string, err error) string {
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		s.cfg.Logger.Warn("turn cut by shutdown", "session", session, "err", logErr{err})
		jsonhttp.Error(w, http.StatusServiceUnavailable, "the host shut down before this turn finished")
		return metrics.ResultShutdown
	}
	s.cfg.Logger.Error("turn failed", "session", session, "err", logErr{err})
	writeProviderFailed(w)
	return metrics.ResultProviderFailed
}

// answered sends a model's reply, then stores the turn before the session's
// slot is released: the user gets the answer without waiting for the disk,
// and the session's next turn (which waits for the slot) sees it in its
// history.
//
// The store is left to the handler's end (see store): answered marks the
// slot finishing with what remains to do, which outlives the request: its
// context keeps ctx's values, not its cancellation.
func (s *Server) answered(w http.ResponseWriter, ctx context.Context, req request, res agent.Result) string {
	ctx = context.WithoutCancel(ctx)
	// Finishing before the reply leaves: a client may send its next turn
	// the moment it reads the reply, and that turn must wait, not get a 409.
	s.slots.finish(req.SessionID, func() error { return s.cfg.Agent.Remember(ctx, req.SessionID, req.Message, res) })
	s.finishTurn(ctx, req.SessionID)
	jsonhttp.Write(w, http.StatusOK, reply{Reply: res.Reply, SessionID: req.SessionID})
	http.NewResponseController(w).Flush() // the reply leaves now, not when the handler returns
	return metrics.ResultAnswered
}

// store ends an answered turn once its handler has returned: it stores the
// turn, counts it, then releases the session's slot. A store that fails or
// panics is logged and never takes the host down; the slot is released
// whatever happens.
func (s *Server) store(ctx context.Context, session string, remember func() error, count func()) {
	defer s.endTurn(ctx, session, true) // an answered turn had taken it
	defer count()
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("turn panicked", "session", session, "panic", fmt.Sprint(p))
		}
	}()
	if err := remember(); err != nil {
		s.cfg.Logger.Error("the turn was answered but not stored", "session", session, "err", logErr{err})
	}
}

// Drain returns when no turn holds a session's slot (every answered turn
// is stored), or when ctx ends. The host calls it after its HTTP server
// has shut down and before it closes the store: an answered turn is stored
// after its handler returns.
func (s *Server) Drain(ctx context.Context) error {
	return s.slots.idle(ctx)
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

// busy is the 409 of a turn while another of its session runs.
const busy = "a turn is already in flight for this session"

// takeTurn claims session's turn on the store the hosts share
// (Config.Turns), after the process's own slot: 409 while a turn of the
// session runs on another host, the generic 502 when the store fails. It
// reports whether the turn may run; without Turns it always may. When it
// may not, result is the turn metrics' class of what was answered.
func (s *Server) takeTurn(w http.ResponseWriter, ctx context.Context, session string) (result string, ok bool) {
	if s.cfg.Turns == nil {
		return "", true
	}
	ok, err := s.cfg.Turns.TakeTurn(ctx, session)
	switch {
	case err != nil:
		return s.failed(w, ctx, session, err), false
	case !ok:
		jsonhttp.Error(w, http.StatusConflict, busy)
		return metrics.ResultConflict, false
	}
	return "", true
}

// finishTurn marks session's turn replied to on the shared store, so that
// its next turn on another host waits for it to be stored instead of a 409.
func (s *Server) finishTurn(ctx context.Context, session string) {
	if s.cfg.Turns == nil {
		return
	}
	if err := s.cfg.Turns.FinishTurn(ctx, session); err != nil {
		s.cfg.Logger.Warn(lineTurnHold, "session", session, "err", logErr{err})
	}
}

// endTurn ends session's turn: frees it on the shared store when it was
// taken there (takeTurn), then releases the process's slot, which lets the
// session's next turn in. ctx must outlive the request: a turn is released
// whether its client stayed or not.
func (s *Server) endTurn(ctx context.Context, session string, taken bool) {
	if taken && s.cfg.Turns != nil {
		if err := s.cfg.Turns.ReleaseTurn(ctx, session); err != nil {
			s.cfg.Logger.Warn(lineTurnHold, "session", session, "err", logErr{err})
		}
	}
	s.slots.release(session)
}

// lineTurnHold is logged (WARN) when the shared store could not be told a
// turn finished or ended: another host may answer the session's next turn
// 409 until the hold lapses ([store] lease).
const lineTurnHold = "session turn hold not updated"
