package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// MaxIdleConns is how many idle connections to the model the Client keeps
// when it makes its own HTTP client.
const MaxIdleConns = 64

// DefaultTimeout caps one completion (D6: the RunPod proxy gives up at
// 100 s, so 120 s never cuts a request the proxy would have completed).
const DefaultTimeout = 120 * time.Second

const (
	maxErrorBody = 64 << 10 // the part of an error answer that is looked at
	maxExcerpt   = 100      // runes of a model's error message kept
)

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
	c := &Client{key: cfg.APIKey, timeout: cfg.Timeout, http: cfg.HTTPClient, log: cfg.Logger}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
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

// Stream sends req.Body to {endpoint}/chat/completions once, as it is, and
// returns the model's 200 with its body still to read. Every failure is a
// *pluginapi.CompletionError:
//
//   - the model answered a non-200: Status, Message "HTTP 502 Bad Gateway"
//     (status text), or "HTTP 429: <the JSON error message, at most 100
//     characters>" when the body is an OpenAI or vLLM error object, and
//     then Body, that object with the key redacted;
//   - no response at all (refused, reset, closed): TransportFailure,
//     Message "no response: ECONNRESET";
//   - the time cap or the caller's ctx cut the request: Aborted, Message
//     "timed out after 2m0s" or "canceled";
//   - the body of a 200 dies, or stalls for the time cap between two reads
//     (a stream may last longer than the cap; a silence may not): the
//     body's Read fails with Status 200, Aborted for the stall.
func (c *Client) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	began := time.Now()
	resp, err := c.stream(ctx, req)
	var ce *pluginapi.CompletionError
	if errors.As(err, &ce) {
		c.log.Debug("completion failed", "status", ce.Status, "transport_failure", ce.TransportFailure,
			"aborted", ce.Aborted, "error", ce.Message, "duration_ms", time.Since(began).Milliseconds())
	} else {
		c.log.Debug("completion answered", "duration_ms", time.Since(began).Milliseconds())
	}
	return resp, err
}

func (c *Client) stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	target, err := apiURL(req.Endpoint, "/chat/completions")
	if err != nil {
		return nil, &pluginapi.CompletionError{Message: err.Error()}
	}
	timeout := capTimeout(ctx, c.timeout)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	// The cap: until the head, then between two reads of the body.
	cap := &idleCap{timer: time.AfterFunc(timeout, cancel), d: timeout}
	aborted := func(status int) error {
		return &pluginapi.CompletionError{Status: status, Aborted: true, Message: abortedMessage(parent, timeout)}
	}
	fail := func(err error) (*pluginapi.StreamResponse, error) {
		cap.timer.Stop()
		cancel()
		return nil, err
	}

	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(req.Body))
	if err != nil {
		return fail(&pluginapi.CompletionError{Message: "build request: " + pluginapi.ErrorClass(err)})
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json, text/event-stream")
	c.authorize(httpReq.Header)

	resp, err := c.http.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return fail(aborted(0))
		}
		return fail(&pluginapi.CompletionError{TransportFailure: true, Message: "no response: " + pluginapi.ErrorClass(err)})
	}
	if resp.StatusCode != http.StatusOK {
		// An error body that fails to arrive changes nothing: the status
		// is the answer.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		return fail(&pluginapi.CompletionError{Status: resp.StatusCode, Message: c.statusMessage(resp.StatusCode, body), Body: c.errorBody(body)})
	}
	cap.reset()
	return &pluginapi.StreamResponse{
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   &body{r: resp.Body, cap: cap, cancel: cancel, ctx: ctx, aborted: aborted},
	}, nil
}

// capTimeout is limit, or less when ctx's deadline comes sooner: the time
// until it, never negative.
func capTimeout(ctx context.Context, limit time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		return max(time.Until(d), 0)
	}
	return limit
}

// abortedMessage says what cut a request that ran with parent's context and
// the cap timeout: "canceled" when parent was canceled, otherwise "timed
// out after" the cap.
func abortedMessage(parent context.Context, timeout time.Duration) string {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return "canceled"
	}
	return "timed out after " + timeout.Round(time.Millisecond).String()
}

// authorize sets h's Authorization to the API key as a bearer token; with
// no key it sets none.
func (c *Client) authorize(h http.Header) {
	if c.key != "" {
		h.Set("Authorization", "Bearer "+string(c.key))
	}
}

// idleCap cancels the request when d passes without a read.
type idleCap struct {
	timer *time.Timer
	d     time.Duration
}

func (c *idleCap) reset() { c.timer.Reset(c.d) }

// body is a 200's body: each read restarts the cap, and a failure is
// classified.
type body struct {
	r       io.ReadCloser
	cap     *idleCap
	cancel  context.CancelFunc
	ctx     context.Context
	aborted func(status int) error
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.cap.reset()
	}
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return n, err
	case b.ctx.Err() != nil:
		return n, b.aborted(http.StatusOK)
	}
	return n, &pluginapi.CompletionError{Status: http.StatusOK, Message: "response body failed: " + pluginapi.ErrorClass(err)}
}

// Close cancels the request (a body not read to its end is not wanted).
func (b *body) Close() error {
	b.cap.timer.Stop()
	b.cancel()
	return b.r.Close()
}

// errorBody is an error answer's body for the host to relay: a JSON object
// with the key redacted, or nil.
func (c *Client) errorBody(b []byte) []byte {
	var obj map[string]json.RawMessage
	if len(b) == 0 || json.Unmarshal(b, &obj) != nil {
		return nil
	}
	if c.key != "" {
		b = bytes.ReplaceAll(b, []byte(c.key), []byte(redacted))
	}
	return b
}

// apiURL is endpoint + path ("/chat/completions", "/models"). The error
// never echoes the endpoint.
func apiURL(endpoint, path string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("invalid endpoint: want an absolute http or https base url")
	}
	return strings.TrimRight(u.String(), "/") + path, nil
}

// statusMessage is "HTTP 502 Bad Gateway", or "HTTP 400: <message>" when
// the body is a JSON error object (OpenAI: {"error":{"message":...}};
// vLLM: {"object":"error","message":...}). HTML and other bodies are never
// quoted.
func (c *Client) statusMessage(status int, body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		switch {
		case json.Unmarshal(e.Error, &nested) == nil && nested.Message != "":
			msg = nested.Message
		case json.Unmarshal(e.Error, &flat) == nil && flat != "":
			msg = flat
		default:
			msg = e.Message
		}
	}
	msg = c.excerpt(msg)
	if msg == "" {
		if text := http.StatusText(status); text != "" {
			return fmt.Sprintf("HTTP %d %s", status, text)
		}
		return fmt.Sprintf("HTTP %d", status)
	}
	return fmt.Sprintf("HTTP %d: %s", status, msg)
}

// excerpt makes a model's error message safe to carry: one line, no
// markup, the key redacted, at most maxExcerpt runes.
func (c *Client) excerpt(s string) string {
	if c.key != "" {
		s = strings.ReplaceAll(s, string(c.key), redacted)
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if strings.ContainsAny(s, "<>") {
		return ""
	}
	if r := []rune(s); len(r) > maxExcerpt {
		s = string(r[:maxExcerpt]) + "…"
	}
	return s
}
