package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	turns "github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The X-Wake-State header on every completion answer: the pod lifecycle
// state of the model's pod ("ready" when the model answered), or "unknown"
// when the answer concerns no pod.
const (
	wakeStateHeader = "X-Wake-State"
	stateUnknown    = "unknown"
	stateReady      = string(machines.Ready)
)

// turn is one POST /v1/chat/completions on its way.
type turn struct {
	w    http.ResponseWriter
	r    *http.Request
	rc   *http.ResponseController
	req  *request
	p    *Provider
	body []byte // what goes to the model
	// started is true once a stream's head was sent: from then on every
	// answer, a reply or an error, is told inside the stream.
	started bool
	// result is what the turn answered, for the turn metrics: answered, the
	// policy's reply key, or an error class. A turn that answered nothing
	// (a held request whose client left, a stream cut by its client) is
	// client_left.
	result string
}

// handleCompletions is POST /v1/chat/completions: the model's answer when
// it is ready; else the wake policy's reply, or in hold mode a hold.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	result := s.completions(w, r)
	s.cfg.Metrics.Turn(metrics.DoorOpenAI, result, time.Since(began))
}

// completions serves one POST /v1/chat/completions and returns its result
// for the turn metrics.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) string {
	w.Header().Set(wakeStateHeader, stateUnknown)
	if !allow(w, r, http.MethodPost) {
		return metrics.ResultMethodNotAllowed
	}
	refuse := func(e *apiError) string {
		writeError(w, e)
		return e.turnResult()
	}
	if e := checkMediaType(r); e != nil {
		return refuse(e)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return refuse(&apiError{kind: kindTooLarge, message: fmt.Sprintf("the body is larger than %d bytes", s.cfg.MaxBody)})
		}
		return refuse(badRequest("", "the body could not be read"))
	}
	req, aerr := parseRequest(raw)
	if aerr != nil {
		return refuse(aerr)
	}
	p, ok := s.byName[req.model]
	if !ok {
		return refuse(modelNotFound(req.model))
	}
	msgs, removed, err := s.cfg.Replies.strip(req.messages)
	if err != nil {
		// parseRequest checked every message: this is a bug.
		s.cfg.Logger.Error("openai messages could not be prepared", "provider", p.Name, "err", scrub(err.Error()))
		return refuse(&apiError{kind: kindInternal, message: "the messages could not be prepared"})
	}
	if removed == len(req.messages) {
		return refuse(onlyReplies())
	}
	if removed > 0 {
		s.cfg.Logger.Debug("openai: the host's own replies taken out of the messages", "provider", p.Name, "removed", removed)
	}
	t := &turn{w: w, r: r, rc: http.NewResponseController(w), req: req, p: p, body: req.forward(p.ModelName, msgs)}
	s.run(t)
	if t.result == "" {
		return metrics.ResultClientLeft
	}
	return t.result
}

// run answers t: the model's answer, the policy's reply (at once or after a
// hold), or an error.
func (s *Server) run(t *turn) {
	defer func() {
		if v := recover(); v != nil {
			s.cfg.Logger.Error("openai turn panicked", "provider", t.p.Name, "panic", fmt.Sprint(v))
			s.fail(t, &apiError{kind: kindInternal, message: "the host failed on this request"})
		}
	}()
	ask := turns.Ask{Pod: t.p.Pod, Send: resolve.Retry}
	if s.cfg.Hold {
		ask.Hold = s.hold(t)
	}
	out, err := turns.Run(t.r.Context(), s.cfg.Service, ask, func(ctx context.Context, send resolve.Send) (*pluginapi.StreamResponse, error) {
		return t.p.Model.Stream(ctx, t.body, send)
	})
	switch {
	case err != nil:
		s.failed(t, err)
	case out.Answered:
		s.relay(t, out.Answer, stateReady)
	case !out.Left:
		s.reply(t, out.Said.Decision)
	}
}

// hold is how t is held while its pod wakes (turn.Hold): a stream gets its
// head at once and an SSE comment every Keepalive; a non-streaming request
// waits in silence. The server's write timeout would cut a long hold: the
// door lifts it for the hold.
func (s *Server) hold(t *turn) *turns.Hold {
	h := &turns.Hold{Max: s.cfg.HoldMax, Provider: t.p.Name, Start: func(said turns.Said) func() {
		end := s.cfg.Metrics.Hold()
		_ = t.rc.SetWriteDeadline(time.Now().Add(s.cfg.HoldMax + s.cfg.WriteTimeout))
		if t.req.stream {
			t.head("text/event-stream", string(said.Decision.To), true)
		}
		return end
	}}
	if t.req.stream {
		h.Keepalive = s.cfg.Keepalive
		h.Tick = func(wake time.Duration) error {
			return t.write(s, []byte(fmt.Sprintf(": waking — %d min elapsed\n\n", int(wake/time.Minute))))
		}
	}
	return h
}

// state is the X-Wake-State of an answer about p that is not the model's:
// its pod's recorded state as the machine reports it, or unknown when
// there is no pod or its record cannot be read.
func (s *Server) state(ctx context.Context, p *Provider) string {
	if p.Pod == "" {
		return stateUnknown
	}
	state, ok := s.cfg.Service.State(ctx, p.Pod)
	if !ok {
		return stateUnknown
	}
	return string(state)
}

// failed answers a provider or config-class failure (never a wake) and
// logs it, once, here.
func (s *Server) failed(t *turn, err error) {
	if t.r.Context().Err() != nil {
		// The client left: nobody reads an answer, and it is no failure.
		s.cfg.Logger.Debug("openai client left before the answer", "provider", t.p.Name)
		return
	}
	e := failure(err)
	s.logFailed(t.p, e, err)
	s.fail(t, e)
}

// fail answers e: as its status before a stream's head, as an error event
// inside the stream after it.
func (s *Server) fail(t *turn, e *apiError) {
	t.result = e.turnResult()
	if !t.started {
		t.w.Header().Set(wakeStateHeader, s.state(t.r.Context(), t.p))
		writeError(t.w, e)
		return
	}
	t.event(s, e.body())
}

// failure maps a failed turn to its answer: a model's own complaint about
// the request is relayed with its status, scrubbed; every other failure is
// a 502 (D5), marked x-should-retry: false when a retry cannot help or
// must not happen (the payload may have been processed, D10).
func failure(err error) *apiError {
	var ce *resolve.ConfigError
	if errors.As(err, &ce) {
		return &apiError{kind: kindProviderFailed, noRetry: true,
			message: "the model provider is not usable: its configuration is incomplete (the host's log says why)"}
	}
	var pe *resolve.ProviderError
	if !errors.As(err, &pe) {
		return &apiError{kind: kindProviderFailed, noRetry: true, message: "the model provider failed"}
	}
	var cerr *pluginapi.CompletionError
	if errors.As(pe.Err, &cerr) {
		if e := modelError(cerr); e != nil {
			return e
		}
	}
	return &apiError{kind: kindProviderFailed, noRetry: !pe.FallbackEligible(), message: "the model provider failed: " + reason(pe)}
}

// reason says in the door's words why a provider failed.
func reason(pe *resolve.ProviderError) string {
	switch {
	case pe.Aborted && pe.Status == http.StatusOK:
		return "the answer stopped before its end"
	case pe.Aborted:
		return "the completion timed out"
	case pe.TransportFailure:
		return "no response from the model"
	case pe.Status == http.StatusOK:
		return "the answer broke off or could not be read"
	case pe.Status != 0:
		return fmt.Sprintf("the model answered HTTP %d", pe.Status)
	}
	return "the provider plugin failed"
}
