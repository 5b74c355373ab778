package openai

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// MaxIdleConns is how many idle connections to the model the Client keeps
// when it makes its own HTTP client.
const MaxIdleConns = 64

// DefaultTimeout caps one completion (D6, pluginapi.DefaultCompletionTimeout).
const DefaultTimeout = pluginapi.DefaultCompletionTimeout

// maxErrorBody is the part of an error answer that is looked at.
const maxErrorBody = 64 << 10

// APIKey is the model API key: a secret, which formats as "[redacted]".
type APIKey = pluginapi.Secret

// Config configures a Client. The zero value works: no key, 120 s.
type Config struct {
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty. Empty
	// means no Authorization header (the host treats a missing key as a
	// configuration error before it calls).
	APIKey APIKey
	// Timeout caps one completion until its answer's head, and then each
	// wait for more of its body. Zero means DefaultTimeout (120s).
	Timeout time.Duration
	// HTTPClient makes the requests. Nil means a client of the Client's own
	// that ignores proxy settings, follows no redirects and keeps up to
	// MaxIdleConns idle connections to the model.
	HTTPClient *http.Client
	// Logger gets one debug line per completion (status and duration, never
	// content). Nil means none.
	Logger hclog.Logger
}

// Client is a pluginapi.Provider for OpenAI-compatible servers. It is safe
// for concurrent use.
type Client struct {
	key     APIKey
	timeout time.Duration
	http    *http.Client
	log     hclog.Logger
}

var _ pluginapi.Provider = (*Client)(nil)

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Timeout < 0 {
		return nil, errors.New("completion timeout must not be negative")
	}
	c := &Client{key: cfg.APIKey, timeout: cmp.Or(cfg.Timeout, DefaultTimeout), http: cfg.HTTPClient, log: cfg.Logger}
	if c.http == nil {
		c.http = pluginapi.NewHTTPClient()
		// One model endpoint takes every turn, many at once: keep a
		// connection for each of them rather than net/http's 2, so that a
		// burst after a burst reuses what the first one opened.
		c.http.Transport.(*http.Transport).MaxIdleConnsPerHost = MaxIdleConns
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	return c, nil
}

// Complete is pluginapi.CompleteVia over Stream: the text-only view of the
// one call.
func (c *Client) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	return pluginapi.CompleteVia(ctx, c, endpoint, req)
}

// Stream is pluginapi.OpenAIStream on Route's route to req.Endpoint: it
// sends req.Body to {endpoint}/chat/completions once, as it is, with the
// key, and returns the model's 200 with its body still to read. Every
// failure is a *pluginapi.CompletionError, classified as OpenAIStream
// says (the key redacted).
func (c *Client) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	began := time.Now()
	route, _ := c.Route(ctx, req.Endpoint)
	resp, err := pluginapi.OpenAIStream(ctx, c.http, route, req.Body)
	var ce *pluginapi.CompletionError
	if errors.As(err, &ce) {
		c.log.Debug("completion failed", "status", ce.Status, "transport_failure", ce.TransportFailure,
			"aborted", ce.Aborted, "error", ce.Message, "duration_ms", time.Since(began).Milliseconds())
	} else {
		c.log.Debug("completion answered", "duration_ms", time.Since(began).Milliseconds())
	}
	return resp, err
}

var _ pluginapi.Router = (*Client)(nil)

// Route is a completion's route to endpoint (protocol 4): the model speaks
// the OpenAI API there, so the host may send it itself, with the API key
// as a bearer token and the completion timeout. The error is always nil.
func (c *Client) Route(_ context.Context, endpoint string) (pluginapi.Route, error) {
	r := pluginapi.Route{Direct: true, BaseURL: endpoint, Timeout: c.timeout, Header: http.Header{}}
	c.authorize(r.Header)
	return r, nil
}

// authorize sets h's Authorization to the API key as a bearer token; with
// no key it sets none.
func (c *Client) authorize(h http.Header) {
	if c.key != "" {
		h.Set("Authorization", "Bearer "+string(c.key))
	}
}

// secrets are what the shared classification redacts: the key.
func (c *Client) secrets() []string {
	if c.key == "" {
		return nil
	}
	return []string{string(c.key)}
}
