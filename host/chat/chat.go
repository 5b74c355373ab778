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
	"github.com/wakeonchat/wakeonchat/host/turn"
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
	// A turn in the default mode takes the session's turn on the shared
	// store only once it may reach a model (hold, below): a turn the
	// machine answers calls no model and stores nothing. Wait and resume
	// keep a pending wake of the session: they hold it from the start.
	hold := func(ctx context.Context) error {
		if err := s.takeTurn(ctx, req.SessionID); err != nil {
			return err
		}
		turnTaken = true
		return nil
	}
	if req.WakeMode != ModeLegacy {
		if err := hold(r.Context()); err != nil {
			result = s.failed(w, r.Context(), req.SessionID, err)
			return
		}
		hold = nil
	}
	defer func() {
		if p := recover(); p != nil {
			// A crashing provider, plugin adapter or store never takes the host
			// down, and the slot is released by the deferred release above.
			s.cfg.Logger.Error("turn panicked", "session", req.SessionID, "panic", fmt.Sprint(p))
			writeProviderFailed(w)
		}
	}()
	out, err := s.run(r.Context(), req, hold)
	result = s.answer(w, r.Context(), req, out, err)
}

// run hands the turn to the turn service in its wake mode: the chain's
// answer or the policy's reply by default (D4); pinned to the chain's first
// provider, a pending wake instead of a run, with wait; the pending wake's
// prompt run once, with resume (#715).
func (s *Server) run(ctx context.Context, req request, hold func(context.Context) error) (turn.Outcome[agent.Result], error) {
	switch req.WakeMode {
	case ModeWait:
		provider := s.cfg.Agent.First()
		return s.turns.Wait(ctx, req.SessionID, provider, s.pinned(req, provider))
	case ModeResume:
		return s.turns.Resume(ctx, req.SessionID, req.PendingWake, s.cfg.Agent.Has,
			func(provider string) turn.Call[agent.Result] { return s.pinned(req, provider) })
	}
	return s.turns.Run(ctx, turn.Ask{Send: resolve.Retry}, func(ctx context.Context, _ resolve.Send) (agent.Result, error) {
		return s.cfg.Agent.ProcessHeld(ctx, req.SessionID, req.Message, hold)
	})
}

// turns is what the door asks of the turn service (host/turn) for a chat
// turn: turn.Run, Wait and Resume on Config.Service (serviceTurns). It is
// an interface only so that the door's tests can put a recording fake in
// its place (export_test.go) and test the codec alone.
type turns interface {
	Run(ctx context.Context, ask turn.Ask, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error)
	Wait(ctx context.Context, session, provider string, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error)
	Resume(ctx context.Context, session, key string, has func(provider string) bool, call turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error)
}

// serviceTurns runs a chat turn on a turn.Service.
type serviceTurns struct{ s *turn.Service }

func (t serviceTurns) Run(ctx context.Context, ask turn.Ask, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
	return turn.Run(ctx, t.s, ask, call)
}

func (t serviceTurns) Wait(ctx context.Context, session, provider string, call turn.Call[agent.Result]) (turn.Outcome[agent.Result], error) {
	return turn.Wait(ctx, t.s, session, provider, call)
}

func (t serviceTurns) Resume(ctx context.Context, session, key string, has func(string) bool, call turn.Pinned[agent.Result]) (turn.Outcome[agent.Result], error) {
	return turn.Resume(ctx, t.s, session, key, has, call)
}

// pinned is the turn's model call on provider alone.
func (s *Server) pinned(req request, provider string) turn.Call[agent.Result] {
	return func(ctx context.Context, send resolve.Send) (agent.Result, error) {
		return s.cfg.Agent.ProcessOn(ctx, req.SessionID, req.Message, provider, send)
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

// answer encodes how the turn ended and returns its result: the model's
// answer (answered), the policy's reply (its key) with the pending wake
// when there is one, or the error's answer.
func (s *Server) answer(w http.ResponseWriter, ctx context.Context, req request, out turn.Outcome[agent.Result], err error) string {
	switch {
	case err != nil:
		return s.failed(w, ctx, req.SessionID, err)
	case out.Answered:
		return s.answered(w, ctx, req, out.Answer)
	}
	rep := reply{Reply: out.Said.Decision.Text, SessionID: req.SessionID}
	if p := out.Said.Pending; p != nil {
		rep.PendingWake = wirePending(*p)
	}
	jsonhttp.Write(w, http.StatusOK, rep)
	return string(out.Said.Decision.Reply)
}

// failed answers a turn that ended in err as its row of codes says, logs
// it, once, here, and returns the turn's result.
func (s *Server) failed(w http.ResponseWriter, ctx context.Context, session string, err error) string {
	c := classify(ctx, err)
	if c.line != "" {
		s.cfg.Logger.Log(ctx, c.level, c.line, "session", session, "err", logErr{err})
	}
	if c.status == http.StatusBadGateway {
		writeProviderFailed(w)
	} else {
		jsonhttp.Error(w, c.status, c.message)
	}
	return c.result
}

// answered sends a model's reply, then stores the turn before the session's
// slot is released: the user gets the answer without waiting for the disk,
// and the session's next turn (which waits for the slot) sees it in its
// history.
//
// The store is left to the handler's end (see store): answered marks the
// slot finishing with what remains to do.
func (s *Server) answered(w http.ResponseWriter, ctx context.Context, req request, res agent.Result) string {
	ctx = context.WithoutCancel(ctx) // the turn is stored after its handler returned
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

// errBusy is a turn of a session whose turn another host runs (Config.Turns).
var errBusy = errors.New(busy)

// takeTurn claims session's turn on the store the hosts share
// (Config.Turns), after the process's own slot: errBusy while a turn of the
// session runs on another host (409), the store's error when it fails (the
// generic 502). Without Turns a turn always may run.
func (s *Server) takeTurn(ctx context.Context, session string) error {
	if s.cfg.Turns == nil {
		return nil
	}
	ok, err := s.cfg.Turns.TakeTurn(ctx, session)
	switch {
	case err != nil:
		return err
	case !ok:
		return errBusy
	}
	return nil
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
// session's next turn in.
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
