package pluginapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxAnswerBytes caps a non-streaming answer read by ReadContent.
const MaxAnswerBytes = 32 << 20

// The text-only view of a completion over Stream: the body Complete's
// request becomes, and the content read back from the answer. The body is
// the OpenAI chat-completions format, which is the plugin API's format for
// a completion, whatever the model behind the plugin speaks.

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
}

// CompletionBody is req as a chat-completions request body:
// {"model":...,"messages":[{"role":...,"content":...}]}, never null.
func CompletionBody(req CompletionRequest) ([]byte, error) {
	msgs := make([]wireMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = wireMessage(m)
	}
	b, err := json.Marshal(wireRequest{Model: req.Model, Messages: msgs})
	if err != nil {
		return nil, &CompletionError{Message: "encode request: " + err.Error()}
	}
	return b, nil
}

type wireResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// ReadContent reads a non-streaming answer to its end, closes it and
// returns choices[0].message.content. Every failure is a *CompletionError
// with Status 200 (the model answered): a body that failed (as the body
// said), one over MaxAnswerBytes, one that does not parse, or one without
// choices.
func ReadContent(resp *StreamResponse) (string, error) {
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		var ce *CompletionError
		if errors.As(err, &ce) {
			return "", err
		}
		return "", &CompletionError{Status: resp.Status, Message: "response body failed: " + ErrorClass(err)}
	}
	if len(body) > MaxAnswerBytes {
		return "", &CompletionError{Status: resp.Status, Message: "response larger than 32 MiB"}
	}
	var parsed wireResponse
	if err := json.Unmarshal(body, &parsed); err != nil {
		return "", &CompletionError{Status: resp.Status, Message: "malformed response: " + JSONProblem(err)}
	}
	if len(parsed.Choices) == 0 {
		return "", &CompletionError{Status: resp.Status, Message: "response has no choices"}
	}
	return parsed.Choices[0].Message.Content, nil
}

// CompleteVia is Complete over s: req as a request body, one Stream, the
// answer's content.
func CompleteVia(ctx context.Context, s Streamer, endpoint string, req CompletionRequest) (string, error) {
	body, err := CompletionBody(req)
	if err != nil {
		return "", err
	}
	resp, err := s.Stream(ctx, StreamRequest{Endpoint: endpoint, Body: body})
	if err != nil {
		return "", err
	}
	return ReadContent(resp)
}

// JSONProblem says what is wrong with a JSON body without quoting it: the
// plugins, the host's adapters and the OpenAI door use it for every body
// they decode. A json.Decoder that runs out of input says so with
// io.ErrUnexpectedEOF inside a value and io.EOF between tokens: both are
// "truncated" (json.Unmarshal reports the same as a syntax error at the
// end).
func JSONProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at offset %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s is a JSON %s", typ.Field, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated"
	}
	return "invalid"
}

// StreamFromComplete serves p, a Provider that is not a Streamer, as one:
// it reads the request body's model and messages (a content array counts
// its text parts, joined by newlines), calls Complete, and answers a
// chat.completion, or for "stream": true a complete chunk sequence ending
// in data: [DONE]. Every other field of the body is ignored.
func StreamFromComplete(p Provider) Streamer { return completeStreamer{p} }

type completeStreamer struct{ p Provider }

type looseRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (c completeStreamer) Stream(ctx context.Context, req StreamRequest) (*StreamResponse, error) {
	var in looseRequest
	if err := json.Unmarshal(req.Body, &in); err != nil {
		return nil, &CompletionError{Message: "request body: " + JSONProblem(err)}
	}
	creq := CompletionRequest{Model: in.Model}
	if len(in.Messages) > 0 {
		creq.Messages = make([]Message, len(in.Messages))
	}
	for i, m := range in.Messages {
		creq.Messages[i] = Message{Role: m.Role, Content: contentText(m.Content)}
	}
	content, err := c.p.Complete(ctx, req.Endpoint, creq)
	if err != nil {
		return nil, err
	}
	id := "chatcmpl-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	created := time.Now().Unix()
	h := http.Header{}
	var body []byte
	if in.Stream {
		h.Set("Content-Type", "text/event-stream")
		var b strings.Builder
		for _, delta := range []string{`{"role":"assistant","content":""}`, `{"content":` + quote(content) + `}`} {
			fmt.Fprintf(&b, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":%s,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n",
				id, created, quote(in.Model), delta)
		}
		fmt.Fprintf(&b, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			id, created, quote(in.Model))
		body = []byte(b.String())
	} else {
		h.Set("Content-Type", "application/json")
		body = []byte(fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":%d,"model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`,
			id, created, quote(in.Model), quote(content)))
	}
	return &StreamResponse{Status: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader(string(body)))}, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// contentText is a message content as text: a string, or the text parts of
// an array joined by newlines.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
