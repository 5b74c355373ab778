package pluginapi

import (
	"context"
	"io"
	"net/http"
)

// StreamRequest is one chat completion as the model API takes it.
type StreamRequest struct {
	// Endpoint is the base URL of the model API, such as https://host/v1.
	Endpoint string
	// Body is an OpenAI chat-completions request body (JSON), sent as it
	// is: its model is already the provider's, and "stream": true asks the
	// model for an event stream.
	Body []byte
}

// StreamResponse is a model's 200: its status and headers, then its body
// as it arrives.
type StreamResponse struct {
	Status int // 200
	Header http.Header
	// Body yields the body's bytes as the model sends them. A Read that
	// fails returns a *CompletionError with Status 200: the model answered
	// and its body failed, so the payload must never be sent again (D10);
	// Aborted when a time cap or the caller cut it. The caller must Close
	// it; closing it before the end cancels the request upstream. A body
	// from a plugin also has a method Buffered() int: how many bytes the
	// next Read returns without waiting (those that came with the head).
	Body io.ReadCloser
}

// Streamer is the call protocol 2 carries: one request body to the model,
// the answer as a stream.
type Streamer interface {
	// Stream sends req.Body to {req.Endpoint}/chat/completions exactly
	// once and never retries. It returns when the answer's head arrives:
	// a *StreamResponse for a 200, else a *CompletionError classified as
	// for Complete (D6, D7, D10): Status for a model's non-200 (with Body
	// when it is a JSON object), TransportFailure for no response at all,
	// Aborted when the time cap or ctx cut the request. Ending ctx cancels
	// the request, also while the body is read.
	Stream(ctx context.Context, req StreamRequest) (*StreamResponse, error)
}
