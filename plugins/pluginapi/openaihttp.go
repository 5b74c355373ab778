package pluginapi

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
)

// DefaultCompletionTimeout caps one completion when a Route gives none
// (D6: the RunPod proxy gives up at 100 s, so 120 s never cuts a request
// the proxy would have completed).
const DefaultCompletionTimeout = 120 * time.Second

const (
	maxErrorBody = 64 << 10 // the part of an error answer that is looked at
	maxExcerpt   = 100      // runes of a model's error message kept
)

// OpenAIStream sends body to {route.BaseURL}/chat/completions once, as it
// is, with route's headers, and returns the model's 200 with its body still
// to read. It is the one implementation of an OpenAI-compatible completion:
// the provider plugin runs it behind Stream, and the host runs it on a
// direct route, so a failure class means the same wherever it is computed.
// Every failure is a *CompletionError:
//
//   - the model answered a non-200: Status, Message "HTTP 502 Bad Gateway"
//     (status text), or "HTTP 429: <the JSON error message, at most 100
//     characters>" when the body is an OpenAI or vLLM error object, and
//     then Body, that object with route's secrets redacted;
//   - no response at all (refused, reset, closed): TransportFailure,
//     Message "no response: ECONNRESET";
//   - the time cap or the caller's ctx cut the request: Aborted, Message
//     "timed out after 2m0s" or "canceled";
//   - the body of a 200 dies, or stalls for the time cap between two reads
//     (a stream may last longer than the cap; a silence may not): the
//     body's Read fails with Status 200, Aborted for the stall.
//
// The body's Buffered reports how many bytes the next Read returns without
// waiting.
func OpenAIStream(ctx context.Context, client *http.Client, route Route, body []byte) (*StreamResponse, error) {
	target, err := APIURL(route.BaseURL, "/chat/completions")
	if err != nil {
		return nil, &CompletionError{Message: err.Error()}
	}
	limit := route.Timeout
	if limit <= 0 {
		limit = DefaultCompletionTimeout
	}
	timeout := CapTimeout(ctx, limit)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	// The cap: until the head, then between two reads of the body.
	cap := &idleCap{timer: time.AfterFunc(timeout, cancel), d: timeout}
	aborted := func(status int) error {
		return &CompletionError{Status: status, Aborted: true, Message: abortedMessage(parent, timeout)}
	}
	fail := func(err error) (*StreamResponse, error) {
		cap.timer.Stop()
		cancel()
		return nil, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fail(&CompletionError{Message: "build request: " + ErrorClass(err)})
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range route.Header {
		req.Header[k] = vs
	}

	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fail(aborted(0))
		}
		return fail(&CompletionError{TransportFailure: true, Message: "no response: " + ErrorClass(err)})
	}
	secrets := route.secrets()
	if resp.StatusCode != http.StatusOK {
		// An error body that fails to arrive changes nothing: the status
		// is the answer.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		return fail(&CompletionError{Status: resp.StatusCode, Message: StatusMessage(resp.StatusCode, b, secrets), Body: errorBody(b, secrets)})
	}
	cap.reset()
	return &StreamResponse{
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   &httpBody{r: resp.Body, cap: cap, cancel: cancel, ctx: ctx, aborted: aborted},
	}, nil
}

// idleCap cancels the request when d passes without a read.
type idleCap struct {
	timer *time.Timer
	d     time.Duration
}

func (c *idleCap) reset() { c.timer.Reset(c.d) }

// httpBody is a 200's body: each read restarts the cap, and a failure is
// classified.
type httpBody struct {
	r       io.ReadCloser
	cap     *idleCap
	cancel  context.CancelFunc
	ctx     context.Context
	aborted func(status int) error
}

func (b *httpBody) Read(p []byte) (int, error) {
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
	return n, &CompletionError{Status: http.StatusOK, Message: "response body failed: " + ErrorClass(err)}
}

// Buffered is 0: net/http's body says nothing of what it holds, and the
// relay flushes after every read anyway.
func (b *httpBody) Buffered() int { return 0 }

// Close cancels the request (a body not read to its end is not wanted).
func (b *httpBody) Close() error {
	b.cap.timer.Stop()
	b.cancel()
	return b.r.Close()
}

// errorBody is an error answer's body for the host to relay: a JSON object
// with secrets redacted, or nil.
func errorBody(b []byte, secrets []string) []byte {
	var obj map[string]json.RawMessage
	if len(b) == 0 || json.Unmarshal(b, &obj) != nil {
		return nil
	}
	for _, s := range secrets {
		b = bytes.ReplaceAll(b, []byte(s), []byte(Redacted))
	}
	return b
}

// APIURL is endpoint + path ("/chat/completions", "/models"), checked as
// OpenAIStream checks it: a plugin's other calls (a probe's GET
// {endpoint}/models) build theirs with it. The error never echoes the
// endpoint.
func APIURL(endpoint, path string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("invalid endpoint: want an absolute http or https base url")
	}
	return strings.TrimRight(u.String(), "/") + path, nil
}

// StatusMessage is "HTTP 502 Bad Gateway", or "HTTP 400: <message>" when
// body is a JSON error object (OpenAI: {"error":{"message":...}}; vLLM:
// {"object":"error","message":...}), with secrets redacted. HTML and other
// bodies are never quoted.
func StatusMessage(status int, body []byte, secrets []string) string {
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
	msg = excerpt(msg, secrets)
	if msg == "" {
		if text := http.StatusText(status); text != "" {
			return fmt.Sprintf("HTTP %d %s", status, text)
		}
		return fmt.Sprintf("HTTP %d", status)
	}
	return fmt.Sprintf("HTTP %d: %s", status, msg)
}

// excerpt makes a model's error message safe to carry: one line, no
// markup, secrets redacted, at most maxExcerpt runes.
func excerpt(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Redacted)
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
