package resolve

import (
	"context"
	"errors"
	"net/http"

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

// Complete runs one chat turn and returns the model's reply, or a
// *NotReadyError, a *ProviderError or a *ConfigError.
//
// On a pod it sends to the held resolution (after an idle stop that is the
// old proxy URL, D6). Only a 404/502/503/504, a transport failure or an abort
// leads to exactly one re-resolve, without sleeping:
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
// *ProviderError straight away.
func (m *Model) Complete(ctx context.Context, msgs []pluginapi.Message) (string, error) {
	return m.complete(ctx, msgs, true)
}

// CompleteNoResend is Complete for a turn that must never send its prompt
// twice (a wakeMode "wait" turn, #715): after an aborted first attempt it
// still re-resolves once, so an asleep pod is a *NotReadyError (D6), but it
// never retries: the aborted attempt may have been processed (D10), and the
// failure is a *ProviderError. Failures that prove nothing reached a model
// (404, a gateway status, no response) are re-resolved and retried as in
// Complete.
func (m *Model) CompleteNoResend(ctx context.Context, msgs []pluginapi.Message) (string, error) {
	return m.complete(ctx, msgs, false)
}

func (m *Model) complete(ctx context.Context, msgs []pluginapi.Message, resendAborted bool) (string, error) {
	req := pluginapi.CompletionRequest{Model: m.ModelName, Messages: msgs}
	res, err := m.endpoint(ctx)
	if err != nil {
		return "", err
	}
	content, err := m.Provider.Complete(ctx, res.Endpoint, req)
	if err == nil {
		m.answered(ctx, res)
		return content, nil
	}
	first := m.providerError(err)
	if m.Resolver == nil || !shouldReresolve(err) {
		return "", first
	}

	fresh, rerr := m.Resolver.Refresh(ctx)
	var notReady *NotReadyError
	switch {
	case errors.As(rerr, &notReady):
		return "", m.named(notReady)
	case rerr != nil, fresh.FromCache:
		return "", first
	case first.Aborted && !resendAborted:
		return "", first
	}

	content, err = m.Provider.Complete(ctx, fresh.Endpoint, req)
	if err == nil {
		m.answered(ctx, fresh)
		return content, nil
	}
	if modelLoading(err) {
		e := NewNotReadyError(m.Resolver.pod, fresh, true)
		e.Provider = m.Name
		return "", e
	}
	return "", m.providerError(err)
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

// CompleteOnce makes exactly one completion attempt on the current
// resolution and never re-resolves or retries: the path of a wakeMode
// "resume" turn, whose completion must never be sent twice (#715). A failure
// is a *ProviderError (or the resolver's own not-ready or lookup error from
// Current). A failure that Complete would have re-resolved on drops the held
// resolution, so the next turn asks the conductor.
func (m *Model) CompleteOnce(ctx context.Context, msgs []pluginapi.Message) (string, error) {
	res, err := m.endpoint(ctx)
	if err != nil {
		return "", err
	}
	content, err := m.Provider.Complete(ctx, res.Endpoint, pluginapi.CompletionRequest{Model: m.ModelName, Messages: msgs})
	if err != nil {
		if m.Resolver != nil && shouldReresolve(err) {
			m.Resolver.drop()
		}
		return "", m.providerError(err)
	}
	m.answered(ctx, res)
	return content, nil
}

// NeverSent reports whether err proves a completion never reached a model:
// the proxy answered 404 or a gateway status, or the connection got no
// response at all. An abort or a 200 with a bad body proves nothing.
func NeverSent(err error) bool {
	var ce *pluginapi.CompletionError
	return shouldReresolve(err) && errors.As(err, &ce) && !ce.Aborted
}
