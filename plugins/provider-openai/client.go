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

// DefaultTimeout caps one completion (D6: the RunPod proxy gives up at
// 100 s, so 120 s never cuts a request the proxy would have completed).
const DefaultTimeout = 120 * time.Second

const (
	maxBody      = 32 << 20 // a completion answer
	maxErrorBody = 64 << 10 // the part of an error answer that is looked at
	maxExcerpt   = 100      // runes of a model's error message kept
)

// Config configures a Client. The zero value works: no key, 120 s.
type Config struct {
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty. Empty
	// means no Authorization header (the host treats a missing key as a
	// configuration error before it calls).
	APIKey APIKey
	// Timeout caps one Complete. Zero means DefaultTimeout (120s).
	Timeout time.Duration
	// HTTPClient makes the requests. Nil means a client of the Client's own
	// that ignores proxy settings and follows no redirects.
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
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	return c, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// Complete sends req to {endpoint}/chat/completions once and returns
// choices[0].message.content. Every failure is a *pluginapi.CompletionError:
//
//   - the model answered a non-200: Status, Message "HTTP 502 Bad Gateway"
//     (status text), or "HTTP 429: <the JSON error message, at most 100
//     characters>" when the body is an OpenAI or vLLM error object;
//   - no response at all (refused, reset, closed): TransportFailure,
//     Message "no response: ECONNRESET";
//   - the time cap or the caller's ctx cut the request: Aborted, Message
//     "timed out after 2m0s" or "canceled", with Status 200 if the 200 had
//     already arrived;
//   - a 200 whose body dies mid-read, does not parse or has no choices:
//     Status 200.
func (c *Client) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	began := time.Now()
	content, err := c.complete(ctx, endpoint, req)
	var ce *pluginapi.CompletionError
	if errors.As(err, &ce) {
		c.log.Debug("completion failed", "status", ce.Status, "transport_failure", ce.TransportFailure,
			"aborted", ce.Aborted, "error", ce.Message, "duration_ms", time.Since(began).Milliseconds())
	} else {
		c.log.Debug("completion answered", "duration_ms", time.Since(began).Milliseconds())
	}
	return content, err
}

func (c *Client) complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	target, err := completionsURL(endpoint)
	if err != nil {
		return "", &pluginapi.CompletionError{Message: err.Error()}
	}
	msgs := make([]chatMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = chatMessage(m)
	}
	payload, err := json.Marshal(chatRequest{Model: req.Model, Messages: msgs})
	if err != nil {
		return "", &pluginapi.CompletionError{Message: "encode request: " + err.Error()}
	}

	timeout := c.timeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), 0)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	aborted := func(status int) error {
		msg := "timed out after " + timeout.Round(time.Millisecond).String()
		if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
			msg = "canceled"
		}
		return &pluginapi.CompletionError{Status: status, Aborted: true, Message: msg}
	}

	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return "", &pluginapi.CompletionError{Message: "build request: " + pluginapi.ErrorClass(err)}
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	if c.key != "" {
		httpReq.Header.Set("Authorization", "Bearer "+string(c.key))
	}

	resp, err := c.http.Do(httpReq)
	if err != nil {
		if ctx.Err() != nil {
			return "", aborted(0)
		}
		return "", &pluginapi.CompletionError{TransportFailure: true, Message: "no response: " + pluginapi.ErrorClass(err)}
	}
	defer func() { _ = resp.Body.Close() }()

	if resp.StatusCode != http.StatusOK {
		// An error body that fails to arrive changes nothing: the status
		// is the answer.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return "", &pluginapi.CompletionError{Status: resp.StatusCode, Message: c.statusMessage(resp.StatusCode, body)}
	}

	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", aborted(resp.StatusCode)
		}
		return "", &pluginapi.CompletionError{Status: resp.StatusCode, Message: "response body failed: " + pluginapi.ErrorClass(err)}
	}
	if len(body) > maxBody {
		return "", &pluginapi.CompletionError{Status: resp.StatusCode, Message: "response larger than 32 MiB"}
	}
	var parsed chatResponse
	if err := json.Unmarshal(body, &parsed); err != nil {
		return "", &pluginapi.CompletionError{Status: resp.StatusCode, Message: "malformed response: " + jsonProblem(err)}
	}
	if len(parsed.Choices) == 0 {
		return "", &pluginapi.CompletionError{Status: resp.StatusCode, Message: "response has no choices"}
	}
	return parsed.Choices[0].Message.Content, nil
}

// completionsURL is endpoint + "/chat/completions". The error never
// echoes the endpoint.
func completionsURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("invalid endpoint: want an absolute http or https base url")
	}
	return strings.TrimRight(u.String(), "/") + "/chat/completions", nil
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

// jsonProblem says what is wrong with a body without quoting it.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at offset %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s is a JSON %s", typ.Field, typ.Value)
	}
	return "invalid"
}
