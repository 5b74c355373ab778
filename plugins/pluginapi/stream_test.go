package pluginapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeStreamer is a Provider that is also a Streamer.
type fakeStreamer struct {
	fakeProvider
	stream func(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error)
}

func (f *fakeStreamer) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	return f.stream(ctx, req)
}

func streamer(t *testing.T, p pluginapi.Provider) pluginapi.Streamer {
	t.Helper()
	_, provider := connect(t, nil, p)
	s, ok := provider.(pluginapi.Streamer)
	if !ok {
		t.Fatalf("the host side of a provider plugin (%T) is not a Streamer", provider)
	}
	return s
}

// chunks is a body that yields each chunk in its own Read, then err.
type chunks struct {
	parts  []string
	err    error
	closed chan struct{}
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func (c *chunks) Close() error {
	if c.closed != nil {
		close(c.closed)
	}
	return nil
}

// readAll reads body Read by Read, keeping each Read's bytes apart.
func readAll(body io.Reader) ([]string, error) {
	var got []string
	buf := make([]byte, 64<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			got = append(got, string(buf[:n]))
		}
		if err != nil {
			return got, err
		}
	}
}

// A 200's head, then every chunk as its own part, in order, then the end.
func TestStreamRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 70<<10) // over one part: split at 32 KiB
	var gotReq pluginapi.StreamRequest
	fake := &fakeStreamer{stream: func(_ context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
		gotReq = req
		return &pluginapi.StreamResponse{
			Status: 200,
			Header: http.Header{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"a", "b"}},
			Body:   &chunks{parts: []string{"data: 1\n\n", "data: 2\n\n", big, "data: [DONE]\n\n"}},
		}, nil
	}}
	s := streamer(t, fake)
	req := pluginapi.StreamRequest{Endpoint: "https://pod/v1", Body: []byte(`{"model":"m","stream":true}`)}

	resp, err := s.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	// The first chunk comes with the head (unless the plugin took over
	// coalesceWait to read it): Buffered says so.
	b, ok := resp.Body.(interface{ Buffered() int })
	if !ok {
		t.Fatalf("the body (%T) has no Buffered", resp.Body)
	}
	if n := b.Buffered(); n != 0 && n != len("data: 1\n\n") {
		t.Errorf("Buffered() = %d, want the first chunk's %d bytes (or 0)", n, len("data: 1\n\n"))
	}
	got, err := readAll(resp.Body)
	resp.Body.Close()

	if !errors.Is(err, io.EOF) {
		t.Errorf("body ended with %v, want io.EOF", err)
	}
	if diff := cmp.Diff(req, gotReq); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if resp.Status != 200 {
		t.Errorf("status %d, want 200", resp.Status)
	}
	wantHeader := http.Header{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"a", "b"}}
	if diff := cmp.Diff(wantHeader, resp.Header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	want := []string{"data: 1\n\n", "data: 2\n\n", big[:32<<10], big[32<<10 : 64<<10], big[64<<10:], "data: [DONE]\n\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
}

// The plugin's classification reaches the host as the same value, before
// the head or after it.
func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name     string
		head     error                      // Stream's error
		bodyErr  error                      // the body's error after one chunk
		wantHead *pluginapi.CompletionError // Stream's error on the host
		wantBody *pluginapi.CompletionError // the body's
	}{
		{
			name:     "model's 400 with its body",
			head:     &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: bad", Body: []byte(`{"error":{"message":"bad"}}`)},
			wantHead: &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: bad", Body: []byte(`{"error":{"message":"bad"}}`)},
		},
		{
			name:     "transport failure",
			head:     &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNRESET"},
			wantHead: &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNRESET"},
		},
		{
			name:     "a plain error keeps its text",
			head:     errors.New("exploded"),
			wantHead: &pluginapi.CompletionError{Message: "exploded"},
		},
		{
			name:     "body timed out",
			bodyErr:  &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after 2m0s"},
			wantBody: &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after 2m0s"},
		},
		{
			name:     "a plain body error is a 200's failure",
			bodyErr:  io.ErrUnexpectedEOF,
			wantBody: &pluginapi.CompletionError{Status: 200, Message: "unexpected EOF"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeStreamer{stream: func(context.Context, pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
				if tt.head != nil {
					return nil, tt.head
				}
				return &pluginapi.StreamResponse{Status: 200, Header: http.Header{}, Body: &chunks{parts: []string{"data: 1\n\n"}, err: tt.bodyErr}}, nil
			}}
			s := streamer(t, fake)

			resp, err := s.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: "https://pod/v1", Body: []byte(`{}`)})

			var gotHead, gotBody *pluginapi.CompletionError
			if err != nil && !errors.As(err, &gotHead) {
				t.Fatalf("Stream error %v (%T) is not a *CompletionError", err, err)
			}
			if diff := cmp.Diff(tt.wantHead, gotHead); diff != "" {
				t.Errorf("Stream error (-want +got):\n%s", diff)
			}
			if resp == nil {
				return
			}
			got, err := readAll(resp.Body)
			resp.Body.Close()
			if diff := cmp.Diff([]string{"data: 1\n\n"}, got); diff != "" {
				t.Errorf("reads (-want +got):\n%s", diff)
			}
			if !errors.As(err, &gotBody) {
				t.Fatalf("body error %v (%T) is not a *CompletionError", err, err)
			}
			if diff := cmp.Diff(tt.wantBody, gotBody); diff != "" {
				t.Errorf("body error (-want +got):\n%s", diff)
			}
		})
	}
}

// Closing the body before its end cancels the plugin's call, so the
// plugin cancels the request upstream.
func TestStreamCloseCancelsThePlugin(t *testing.T) {
	cancelled := make(chan struct{})
	fake := &fakeStreamer{stream: func(ctx context.Context, _ pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
		return &pluginapi.StreamResponse{Status: 200, Header: http.Header{}, Body: &blockingBody{ctx: ctx, first: "data: 1\n\n", done: cancelled}}, nil
	}}
	s := streamer(t, fake)
	resp, err := s.Stream(context.Background(), pluginapi.StreamRequest{Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first read = %q, %v", buf[:n], err)
	}

	resp.Body.Close()

	<-cancelled // the plugin's ctx ended; a test timeout otherwise
}

// The head does not wait for a body that is slow to start (a model
// thinking before its first token): it reaches the host on its own, and
// the body's first bytes follow when they come.
func TestStreamHeadDoesNotWaitForTheBody(t *testing.T) {
	release := make(chan struct{})
	fake := &fakeStreamer{stream: func(context.Context, pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
		return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &gatedBody{gate: release, parts: &chunks{parts: []string{"data: 1\n\n", "data: [DONE]\n\n"}}}}, nil
	}}
	s := streamer(t, fake)
	resp, err := s.Stream(context.Background(), pluginapi.StreamRequest{Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("head %v", resp.Header)
	}
	close(release) // only now does the body begin
	got, err := readAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.EOF) {
		t.Errorf("body ended with %v, want io.EOF", err)
	}
	if diff := cmp.Diff([]string{"data: 1\n\n", "data: [DONE]\n\n"}, got); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
}

// gatedBody is parts, whose first read waits for gate.
type gatedBody struct {
	gate  chan struct{}
	parts *chunks
}

func (b *gatedBody) Read(p []byte) (int, error) {
	<-b.gate
	return b.parts.Read(p)
}

func (b *gatedBody) Close() error { return nil }

// blockingBody yields first, then blocks until ctx ends.
type blockingBody struct {
	ctx   context.Context
	first string
	done  chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if b.first != "" {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	<-b.ctx.Done()
	close(b.done)
	return 0, b.ctx.Err()
}

func (b *blockingBody) Close() error { return nil }

// A Provider that is not a Streamer is served through StreamFromComplete:
// a chat.completion, or a complete chunk sequence for "stream": true.
func TestStreamFromComplete(t *testing.T) {
	var gotReq pluginapi.CompletionRequest
	fake := &fakeProvider{complete: func(_ context.Context, _ string, req pluginapi.CompletionRequest) (string, error) {
		gotReq = req
		return "Hi \"there\".", nil
	}}
	s := streamer(t, fake)
	body := `{"model":"m","temperature":0.2,"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"c"}]}]}`

	for _, stream := range []bool{false, true} {
		b := body
		if stream {
			b = strings.Replace(body, `"model":"m"`, `"model":"m","stream":true`, 1)
		}
		resp, err := s.Stream(context.Background(), pluginapi.StreamRequest{Body: []byte(b)})
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantReq := pluginapi.CompletionRequest{Model: "m", Messages: []pluginapi.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b\nc"}}}
		if diff := cmp.Diff(wantReq, gotReq); diff != "" {
			t.Errorf("stream %v: request (-want +got):\n%s", stream, diff)
		}
		text := string(all)
		switch {
		case !stream && (resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(text, `"content":"Hi \"there\"."`)):
			t.Errorf("non-streaming answer %s %q", resp.Header.Get("Content-Type"), text)
		case stream && (resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(text, "data: [DONE]\n\n") ||
			!strings.Contains(text, `"delta":{"role":"assistant","content":""}`) || !strings.Contains(text, `"finish_reason":"stop"`)):
			t.Errorf("streaming answer %s %q", resp.Header.Get("Content-Type"), text)
		}
	}
}
