package resolve

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// Model is one configured provider: a provider plugin bound either to a
// resolver (pod) or to a literal base URL.
type Model struct {
	Name     string // provider name from config
	Provider pluginapi.Provider
	Resolver *Resolver // nil for a literal base_url provider
	BaseURL  string    // literal endpoint (already including path) when Resolver is nil
	// ModelName is sent as the completion's model.
	ModelName string
	// ConfigErr, when set, is returned by every Complete (a *ConfigError);
	// the host sets it when the configuration is unusable.
	ConfigErr error
}

// Send is how a turn's completion may be sent, a parameter of every
// completion (D10): whether a failed attempt may be sent again.
type Send int

const (
	// Retry is a turn whose prompt may reach a model twice: on a failure
	// that may mean a stale endpoint it re-resolves once and, on a freshly
	// RUNNING pod, retries once (D6, D7).
	Retry Send = iota
	// NoResend never sends an aborted attempt again (a wakeMode "wait"
	// turn, #715): after an abort it still re-resolves once, so an asleep
	// pod is a *NotReadyError (D6), but the aborted attempt may have been
	// processed (D10), and the failure is a *ProviderError. A failure that
	// proves nothing reached a model (404, a gateway status, no response)
	// is re-resolved and retried as with Retry.
	NoResend
	// Once is exactly one attempt on the current resolution, never
	// re-resolved or retried: a resumed or held prompt, which must never
	// be sent twice (#715). A failure is a *ProviderError (or the
	// resolver's own not-ready or lookup error); one that Retry would have
	// re-resolved on drops the held resolution, so the next turn asks the
	// conductor.
	Once
)

var sendNames = [...]string{Retry: "retry", NoResend: "no-resend", Once: "once"}

func (s Send) String() string {
	if s >= 0 && int(s) < len(sendNames) {
		return sendNames[s]
	}
	return "send(" + strconv.Itoa(int(s)) + ")"
}

// Complete runs one chat turn, sent as send says, and returns the model's
// reply, or a *NotReadyError, a *ProviderError or a *ConfigError.
//
// On a pod it sends to the held resolution (after an idle stop that is the
// old proxy URL, D6). With Retry, only a 404/502/503/504, a transport
// failure or an abort leads to exactly one re-resolve, without sleeping:
//
//   - the pod is not running: its *NotReadyError;
//   - the conductor could not be reached (served from cache, or nothing
//     cached): the first failure as a *ProviderError, never model loading
//     (D8);
//   - freshly RUNNING: exactly one retry at the fresh endpoint. A gateway
//     status or transport failure on it is a *NotReadyError with
//     ModelLoading (D7); an aborted retry (D10) or any other failure is a
//     *ProviderError.
//
// Every other failure, including a 200 whose body failed (the payload is
// never re-sent, D10) and a failure of a literal base URL, is a
// *ProviderError straight away. NoResend and Once send less: see Send.
func (m *Model) Complete(ctx context.Context, msgs []pluginapi.Message, send Send) (string, error) {
	body, err := pluginapi.CompletionBody(pluginapi.CompletionRequest{Model: m.ModelName, Messages: msgs})
	if err != nil {
		return "", m.providerError(err)
	}
	resp, res, err := m.attempts(ctx, body, send)
	if err != nil {
		return "", err
	}
	return m.content(ctx, resp, res)
}

// content reads a non-streaming answer's content; a body that failed or
// did not parse is a *ProviderError with Status 200, never re-sent (D10).
func (m *Model) content(ctx context.Context, resp *pluginapi.StreamResponse, res Resolution) (string, error) {
	content, err := pluginapi.ReadContent(resp)
	if err != nil {
		return "", m.providerError(err)
	}
	m.answered(ctx, res)
	return content, nil
}

// Stream is Complete for a request body the caller built (an OpenAI
// chat-completions body, its model already set): the same resolution and
// the same attempts as send says, on a failure before the answer's head.
// It returns the model's 200 with its body still to read, and tells the
// observer the model answered; what the body says is the caller's.
func (m *Model) Stream(ctx context.Context, body []byte, send Send) (*pluginapi.StreamResponse, error) {
	resp, res, err := m.attempts(ctx, body, send)
	if err != nil {
		return nil, err
	}
	m.answered(ctx, res)
	return resp, nil
}

// attempts is a turn's attempts as send says, up to the answer's head.
func (m *Model) attempts(ctx context.Context, body []byte, send Send) (*pluginapi.StreamResponse, Resolution, error) {
	if send == Once {
		return m.once(ctx, body)
	}
	return m.stream(ctx, body, send == Retry)
}

// stream is Retry's attempts, up to the answer's head (see Complete);
// resendAborted false is NoResend's.
func (m *Model) stream(ctx context.Context, body []byte, resendAborted bool) (*pluginapi.StreamResponse, Resolution, error) {
	res, err := m.endpoint(ctx)
	if err != nil {
		return nil, Resolution{}, err
	}
	s := m.streamer()
	resp, err := s.Stream(ctx, pluginapi.StreamRequest{Endpoint: res.Endpoint, Body: body})
	if err == nil {
		return resp, res, nil
	}
	first := m.providerError(err)
	if m.Resolver == nil || !shouldReresolve(err) {
		return nil, Resolution{}, first
	}

	fresh, rerr := m.Resolver.Refresh(ctx)
	var notReady *NotReadyError
	switch {
	case errors.As(rerr, &notReady):
		return nil, Resolution{}, m.named(notReady)
	case rerr != nil, fresh.FromCache:
		return nil, Resolution{}, first
	case first.Aborted && !resendAborted:
		return nil, Resolution{}, first
	}

	resp, err = s.Stream(ctx, pluginapi.StreamRequest{Endpoint: fresh.Endpoint, Body: body})
	if err == nil {
		return resp, fresh, nil
	}
	if modelLoading(err) {
		e := NewNotReadyError(m.Resolver.pod, fresh, true)
		e.Provider = m.Name
		return nil, Resolution{}, e
	}
	return nil, Resolution{}, m.providerError(err)
}

// streamer is the provider's Stream; a Provider that has none (an
// in-process one) is adapted.
func (m *Model) streamer() pluginapi.Streamer {
	if s, ok := m.Provider.(pluginapi.Streamer); ok {
		return s
	}
	return pluginapi.StreamFromComplete(m.Provider)
}

// Ready reports, without sending anything, why a completion cannot reach a
// model now: the pod's not-ready error (a lookup when no ready resolution
// is held), or a config error; nil when it may (an endpoint is resolved,
// which a completion may still find stale, D6).
func (m *Model) Ready(ctx context.Context) error {
	_, err := m.endpoint(ctx)
	return err
}

// endpoint is where a turn's first attempt goes: the literal base URL, or
// the pod's current resolution (its not-ready or lookup error otherwise). A
// model that cannot be used at all is its *ConfigError.
func (m *Model) endpoint(ctx context.Context) (Resolution, error) {
	switch {
	case m.ConfigErr != nil:
		return Resolution{}, m.ConfigErr
	case m.Provider == nil:
		return Resolution{}, &ConfigError{Provider: m.Name, Reason: "no provider plugin"}
	case m.Resolver != nil:
		res, err := m.Resolver.Current(ctx)
		if err != nil {
			return Resolution{}, m.named(err)
		}
		return res, nil
	case m.BaseURL == "":
		return Resolution{}, &ConfigError{Provider: m.Name, Reason: "neither pod nor base_url"}
	default:
		return Resolution{Endpoint: m.BaseURL}, nil
	}
}

// answered tells the resolver's observer that the model of res's pod
// answered a turn. A literal base URL has no pod to tell about.
func (m *Model) answered(ctx context.Context, res Resolution) {
	if m.Resolver != nil && m.Resolver.observer != nil {
		m.Resolver.observer.Answered(ctx, m.Resolver.pod, res.ReadySince)
	}
}

// providerError classifies a provider plugin's failure. A failure that is
// not a *pluginapi.CompletionError (the plugin crashed) keeps every flag
// false.
func (m *Model) providerError(err error) *ProviderError {
	e := &ProviderError{Provider: m.Name, Err: err}
	var ce *pluginapi.CompletionError
	if errors.As(err, &ce) {
		e.Status, e.TransportFailure, e.Aborted = ce.Status, ce.TransportFailure, ce.Aborted
	}
	return e
}

// named puts the provider's name on an error the resolver made for this turn.
func (m *Model) named(err error) error {
	var nr *NotReadyError
	var pe *ProviderError
	switch {
	case errors.As(err, &nr):
		nr.Provider = m.Name
	case errors.As(err, &pe):
		pe.Provider = m.Name
	}
	return err
}

// shouldReresolve reports whether a failed first attempt may mean the held
// endpoint is stale: nothing answered on it (404 or a gateway status from the
// proxy, a reset) or something held the connection until the timeout (D6).
func shouldReresolve(err error) bool {
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		return false
	}
	return ce.Aborted || ce.TransportFailure || ce.Status == http.StatusNotFound || isGateway(ce.Status)
}

// modelLoading reports whether a retry's failure says nothing is listening
// behind a freshly confirmed RUNNING pod: a gateway status or a transport
// failure, never an abort (D10).
func modelLoading(err error) bool {
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) || ce.Aborted {
		return false
	}
	return ce.TransportFailure || isGateway(ce.Status)
}

func isGateway(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// once is Once's one attempt, up to the answer's head.
func (m *Model) once(ctx context.Context, body []byte) (*pluginapi.StreamResponse, Resolution, error) {
	res, err := m.endpoint(ctx)
	if err != nil {
		return nil, Resolution{}, err
	}
	resp, err := m.streamer().Stream(ctx, pluginapi.StreamRequest{Endpoint: res.Endpoint, Body: body})
	if err != nil {
		if m.Resolver != nil && shouldReresolve(err) {
			m.Resolver.drop()
		}
		return nil, Resolution{}, m.providerError(err)
	}
	return resp, res, nil
}

// NeverSent reports whether err proves a completion never reached a model:
// the proxy answered 404 or a gateway status, or the connection got no
// response at all. An abort or a 200 with a bad body proves nothing.
func NeverSent(err error) bool {
	var ce *pluginapi.CompletionError
	return shouldReresolve(err) && errors.As(err, &ce) && !ce.Aborted
}
