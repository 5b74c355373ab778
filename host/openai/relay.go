package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// relayChunk is the most bytes one read of a streamed answer takes; each
// read is written and flushed at once.
const relayChunk = 32 << 10

// relay sends the model's 200. A stream is written read by read, each
// flushed at once, through to its end (the model's data: [DONE]); a
// non-streaming answer is read whole first, so that a body that fails is
// still a clean 502. Closing the body, always, cancels the request
// upstream when the client left before the end.
func (s *Server) relay(t *turn, resp *pluginapi.StreamResponse, state string) {
	defer func() { _ = resp.Body.Close() }()
	if !t.req.stream {
		body, err := io.ReadAll(io.LimitReader(resp.Body, pluginapi.MaxAnswerBytes+1))
		if err == nil && len(body) > pluginapi.MaxAnswerBytes {
			err = &pluginapi.CompletionError{Status: http.StatusOK, Message: "response larger than 32 MiB"}
		}
		if err != nil {
			if t.r.Context().Err() == nil {
				s.brokeOff(t, err)
			}
			return
		}
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "application/json"
		}
		t.w.Header().Set(wakeStateHeader, state)
		jsonhttp.WriteBytes(t.w, http.StatusOK, ct, body)
		t.result = metrics.ResultAnswered
		return
	}
	if !t.started {
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "text/event-stream"
		}
		// The head leaves with the first bytes when they came with it (one
		// write to the client, not two), else at once: a model may take
		// long to its first token, and a proxy cuts a silent request.
		t.head(ct, state, !buffered(resp.Body))
	}
	buf := make([]byte, relayChunk)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if werr := t.write(s, buf[:n]); werr != nil {
				return // the client left; the deferred Close cancels upstream
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			t.result = metrics.ResultAnswered
			return
		case err != nil:
			if t.r.Context().Err() == nil {
				s.brokeOff(t, err)
			}
			return
		}
	}
}

// buffered reports whether a Read of body returns at once: a plugin's
// body says how many bytes it holds (see pluginapi.StreamResponse).
func buffered(body io.Reader) bool {
	b, ok := body.(interface{ Buffered() int })
	return ok && b.Buffered() > 0
}

// brokeOff answers a 200 whose body failed: the model had the payload, so
// it must not be sent again (D10): x-should-retry: false.
func (s *Server) brokeOff(t *turn, err error) {
	s.cfg.Logger.Error("openai answer broke off", "provider", t.p.Name, "err", scrub(err.Error()))
	msg := "the model provider failed: the answer broke off or could not be read"
	var ce *pluginapi.CompletionError
	if errors.As(err, &ce) && ce.Aborted {
		msg = "the model provider failed: the answer stopped before its end"
	}
	s.fail(t, &apiError{kind: kindProviderFailed, noRetry: true, message: msg})
	t.result = metrics.ResultBrokeOff
}

// head writes a stream's status and headers, sent now when flush is set
// (a hold's head must leave at once), else with the first write.
func (t *turn) head(contentType, state string, flush bool) {
	h := t.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set(wakeStateHeader, state)
	t.w.WriteHeader(http.StatusOK)
	if flush {
		_ = t.rc.Flush()
	}
	t.started = true
}

// write writes b and flushes it, with the door's own write deadline.
func (t *turn) write(s *Server, b []byte) error {
	_ = t.rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if _, err := t.w.Write(b); err != nil {
		return err
	}
	return t.rc.Flush()
}

// event writes v as one SSE data event (an error inside a stream: the
// SDKs raise it), flushed, with a write deadline of its own like every
// write: the error that ends a silent stream comes after the last chunk's
// deadline has passed, and written under it, it would cut the stream
// rather than end it.
func (t *turn) event(s *Server, v any) {
	b, _ := marshal(v) // ends in a newline
	_ = t.write(s, append(append([]byte("data: "), b...), '\n'))
}

// The statuses of a model's own answer that are relayed: the request was at
// fault (or too many), and saying so helps the client. Any other status is
// the provider's failure, a 502.
var relayedStatus = map[int]bool{
	http.StatusBadRequest: true, http.StatusRequestEntityTooLarge: true,
	http.StatusUnprocessableEntity: true, http.StatusTooManyRequests: true,
}

// wireError is a model's error as OpenAI-compatible servers word it, at
// the top of the body or under "error".
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   *string         `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// modelError is a model's own error answer, relayed scrubbed, or nil when
// it is not one to relay.
func modelError(ce *pluginapi.CompletionError) *apiError {
	if !relayedStatus[ce.Status] {
		return nil
	}
	e := &apiError{kind: kindBadRequest, status: ce.Status, noRetry: ce.Status != http.StatusTooManyRequests,
		message: "the model rejected the request"}
	if ce.Status == http.StatusTooManyRequests {
		e.typ, e.message = "rate_limit_error", "the model is rate limited; try again later"
	}
	var body struct {
		Error json.RawMessage `json:"error"`
		wireError
	}
	if json.Unmarshal(ce.Body, &body) != nil {
		return e
	}
	var nested wireError
	if json.Unmarshal(body.Error, &nested) == nil && nested.Message != "" {
		body.wireError = nested
	}
	if msg := scrub(body.Message); msg != "" {
		e.message = msg
	}
	if typ := scrubWord(body.Type); typ != "" {
		e.typ = typ
	}
	if body.Param != nil {
		e.param = scrubWord(*body.Param)
	}
	var code string
	if json.Unmarshal(body.Code, &code) == nil {
		e.code = scrubWord(code)
	}
	return e
}

var (
	urlPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]*`)
	wordOnly   = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]{1,64}$`)
)

// maxRelayed caps a relayed message, in runes.
const maxRelayed = 1000

// scrub makes a model's message safe to relay: URLs out, one line, no
// control characters, no markup, at most 1000 runes.
func scrub(s string) string {
	s = urlPattern.ReplaceAllString(s, "[url]")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if strings.ContainsAny(s, "<>") {
		s = strings.NewReplacer("<", "", ">", "").Replace(s)
	}
	if r := []rune(s); len(r) > maxRelayed {
		s = string(r[:maxRelayed]) + "…"
	}
	return s
}

// scrubWord keeps a param or code that is a plain word, and nothing else.
func scrubWord(s string) string {
	if wordOnly.MatchString(s) {
		return s
	}
	return ""
}
