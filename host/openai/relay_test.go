package openai_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// pipeModel answers a stream whose chunks the test writes one by one.
type pipeModel struct {
	w      *io.PipeWriter
	ctxs   chan context.Context
	closed chan struct{}
}

func newPipeModel(d *door) *pipeModel {
	pm := &pipeModel{ctxs: make(chan context.Context, 1), closed: make(chan struct{})}
	pr, pw := io.Pipe()
	pm.w = pw
	d.model.stream = func(ctx context.Context, _ []byte) (*pluginapi.StreamResponse, error) {
		pm.ctxs <- ctx
		// Like a plugin's body: the call's context ending ends the read.
		context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
		return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &closeNotify{ReadCloser: pr, closed: pm.closed}}, nil
	}
	return pm
}

type closeNotify struct {
	io.ReadCloser
	closed chan struct{}
}

func (c *closeNotify) Close() error {
	close(c.closed)
	return c.ReadCloser.Close()
}

// Each event reaches the client while the model still holds the next:
// written and flushed at once, through to [DONE].
func TestStreamRelayedChunkByChunk(t *testing.T) {
	d := newDoor(t, nil)
	pm := newPipeModel(d)
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Wake-State") != "ready" {
		t.Errorf("headers %v", resp.Header)
	}
	lines := bufio.NewReader(resp.Body)
	events := []string{`data: {"n":1}`, `data: {"n":2}`, `data: [DONE]`}
	go func() {
		for _, e := range events {
			if _, err := io.WriteString(pm.w, e+"\n\n"); err != nil {
				return
			}
		}
		pm.w.Close()
	}()
	for _, want := range events {
		// The pipe blocks the writer until this read took the event: the
		// client has it before the next one exists.
		got, err := lines.ReadString('\n')
		if err != nil || strings.TrimSpace(got) != want {
			t.Fatalf("event %q, %v; want %q", got, err, want)
		}
		if blank, _ := lines.ReadString('\n'); blank != "\n" {
			t.Fatalf("no blank line after %q", want)
		}
	}
	if rest, _ := io.ReadAll(lines); len(rest) != 0 {
		t.Errorf("after [DONE]: %q", rest)
	}
	<-pm.closed
}

// A client that leaves mid-stream cancels the upstream request at once:
// the model's context ends and its body is closed.
func TestStreamClientDisconnectCancelsUpstream(t *testing.T) {
	d := newDoor(t, nil)
	pm := newPipeModel(d)
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.WriteString(pm.w, "data: {\"n\":1}\n\n") }()
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	modelCtx := <-pm.ctxs

	cancel()
	resp.Body.Close()

	<-modelCtx.Done() // the plugin's call ends with it; a test timeout otherwise
	<-pm.closed
}

// flushRecorder records, at each flush, how many body bytes were written.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushedAt []int
}

func (f *flushRecorder) Flush() {
	f.flushedAt = append(f.flushedAt, f.Body.Len())
	f.ResponseRecorder.Flush()
}

// bufferedBody is a plugin's body whose first bytes came with the head.
type bufferedBody struct{ *strings.Reader }

func (b bufferedBody) Buffered() int { return b.Len() }
func (bufferedBody) Close() error    { return nil }

// A stream's head leaves with the first bytes when they came with it, in
// one write; alone and at once when the model has sent none yet.
func TestStreamHeadWithTheFirstBytes(t *testing.T) {
	const events = "data: {\"n\":1}\n\ndata: [DONE]\n\n"
	for _, tt := range []struct {
		name string
		body io.ReadCloser
		want []int // the body's length at each flush
	}{
		{"bytes with the head", bufferedBody{strings.NewReader(events)}, []int{len(events)}},
		{"no bytes yet", io.NopCloser(strings.NewReader(events)), []int{0, len(events)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDoor(t, nil)
			d.model.stream = func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
				return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: tt.body}, nil
			}
			w := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			r := completionRequest(context.Background(), `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			d.Handler().ServeHTTP(w, r)
			if w.Body.String() != events {
				t.Errorf("body %q", w.Body.String())
			}
			if diff := cmp.Diff(tt.want, w.flushedAt); diff != "" {
				t.Errorf("body bytes at each flush (-want +got):\n%s", diff)
			}
		})
	}
}

// silentBody is a stream that sends first, then nothing for silence, and
// then fails as a plugin's body does when its time cap cuts a silent
// stream.
type silentBody struct {
	first   string
	silence time.Duration
}

func (b *silentBody) Read(p []byte) (int, error) {
	if b.first != "" {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	time.Sleep(b.silence)
	return 0, &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after " + b.silence.String()}
}

func (*silentBody) Close() error { return nil }

// A model that goes silent after its head and a chunk: its time cap ends the
// body a little after the door's per-write deadline (the same duration,
// counted from the last chunk) has passed. The stream still ends with the
// documented error event, and the connection closes cleanly after it (the
// chunked body ends): the error event is not written under the deadline of
// the last chunk. A long stream that keeps coming is not cut: every chunk
// gets a deadline of its own.
func TestStreamSilentModelEndsWithAnErrorEvent(t *testing.T) {
	const writeTimeout = 10 * time.Second
	tests := []struct {
		name string
		body io.ReadCloser
		want string
	}{
		{"silent after one chunk", &silentBody{first: "data: {\"n\":1}\n\n", silence: writeTimeout + time.Second},
			"data: {\"n\":1}\n\n" + `data: {"error":{"message":"the model provider failed: the answer stopped before its end","type":"api_error","param":null,"code":"provider_failed"}}` + "\n\n"},
		{"a chunk every 9s for 2 minutes", &slowBody{chunks: 14, gap: writeTimeout - time.Second},
			strings.Repeat("data: {\"n\":1}\n\n", 14) + "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.WriteTimeout = writeTimeout })
				d.model.stream = func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
					return &pluginapi.StreamResponse{Status: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: tt.body}, nil
				}
				l := plugintest.NewPipeListener()
				srv := &http.Server{Handler: d.Handler(), WriteTimeout: writeTimeout}
				go func() { _ = srv.Serve(l) }()
				defer srv.Close()
				conn := l.Dial()
				defer conn.Close()

				req := completionRequest(context.Background(), `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
				go func() { _ = req.Write(conn) }()
				resp, err := http.ReadResponse(bufio.NewReader(conn), req)
				if err != nil {
					t.Fatalf("the answer's head: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Errorf("the stream was cut: %v", err)
				}
				if diff := cmp.Diff(tt.want, string(body)); diff != "" {
					t.Errorf("the stream (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// slowBody is a stream of chunks, gap apart, to its [DONE].
type slowBody struct {
	chunks int
	gap    time.Duration
	done   bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	switch {
	case b.chunks > 0:
		time.Sleep(b.gap)
		b.chunks--
		return copy(p, "data: {\"n\":1}\n\n"), nil
	case !b.done:
		b.done = true
		return copy(p, "data: [DONE]\n\n"), nil
	}
	return 0, io.EOF
}

func (*slowBody) Close() error { return nil }
