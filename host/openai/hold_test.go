package openai_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// holdDoor is a door in hold mode (hold_max 2m, keepalive 15s, a poll every
// 5s) whose pod is waking and asleep at the conductor.
func holdDoor(t *testing.T) *door {
	d := newDoor(t, func(c *openai.Config) {
		c.Hold, c.HoldMax, c.Keepalive, c.HoldPoll = true, 2*time.Minute, 15*time.Second, 5*time.Second
	})
	d.model.stream = fails(asleep())
	d.model.once = answer("text/event-stream", "data: {\"answer\":1}\n\ndata: [DONE]\n\n")
	d.coord.setState(machines.Record{State: machines.Waking, WakeRequestedAt: time.Now()})
	return d
}

// readyAt makes the pod freshly ready: the conductor says RUNNING with a
// readySince, and the machine ready.
func (d *door) readyNow() {
	d.pod.set(resolve.Resolution{Pod: "qwen", Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound, ReadySince: time.Now()})
	d.coord.setState(machines.Record{State: machines.Ready})
}

// serveAsync runs one request in the background; wait returns its
// recorder once the handler returned.
func serveAsync(h http.Handler, ctx context.Context, body string) (wait func() *httptest.ResponseRecorder) {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	w := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Go(func() { h.ServeHTTP(w, r) })
	return func() *httptest.ResponseRecorder { wg.Wait(); return w }
}

const streamBody = `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// A held stream gets its head at once and a keepalive every 15s; once the
// model is freshly ready the completion runs exactly once and its answer
// follows in the same stream.
func TestHoldEndsInTheModelsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t)
		wait := serveAsync(d.Handler(), context.Background(), streamBody)

		time.Sleep(31 * time.Second) // two keepalives, six polls of a waking pod
		synctest.Wait()
		if n := d.model.onces; n != 0 {
			t.Fatalf("the held completion ran %d times while the pod was waking", n)
		}
		d.readyNow()
		w := wait()

		want := ": waking — 0 min elapsed\n\n: waking — 0 min elapsed\n\ndata: {\"answer\":1}\n\ndata: [DONE]\n\n"
		if diff := cmp.Diff(want, w.Body.String()); diff != "" {
			t.Errorf("stream (-want +got):\n%s", diff)
		}
		if w.Code != 200 || w.Header().Get("X-Wake-State") != "waking" || w.Header().Get("Content-Type") != "text/event-stream" {
			t.Errorf("head %d %v", w.Code, w.Header())
		}
		if d.model.onces != 1 {
			t.Errorf("the held completion ran %d times, want exactly 1", d.model.onces)
		}
		if diff := cmp.Diff([]string{"qwen EXITED FOUND"}, d.coord.notReadyCalls()); diff != "" {
			t.Errorf("NotReady calls (-want +got):\n%s", diff)
		}
	})
}

// A held request whose client leaves is dropped: it never runs.
func TestHoldDroppedWhenTheClientLeaves(t *testing.T) {
	for _, body := range []string{streamBody, `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`} {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t)
			ctx, cancel := context.WithCancel(context.Background())
			wait := serveAsync(d.Handler(), ctx, body)
			time.Sleep(7 * time.Second)

			cancel()
			d.readyNow() // before the handler is known to be gone: it must not run
			time.Sleep(time.Minute)
			synctest.Wait()
			d.model.mu.Lock()
			ran := d.model.onces
			d.model.mu.Unlock()
			wait()

			if ran != 0 {
				t.Errorf("the dropped request ran %d times", ran)
			}
		})
	}
}

// pipeListener hands out in-memory connections (net.Pipe), so that a real
// http.Server runs inside a synctest bubble with its deadlines on the
// bubble's clock.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
}

// dial is a client connection to the listener's server.
func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// A held non-streaming request sends nothing for as long as it is held,
// longer than the server's write timeout: the door lifts that timeout for
// the hold, and the model's answer still reaches the client whole.
func TestHeldNonStreamingOutlastsTheServersWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t)
		d.model.once = answer("application/json", `{"answer":1}`)
		l := newPipeListener()
		srv := &http.Server{Handler: d.Handler(), WriteTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		conn := l.dial()
		defer conn.Close()

		req, _ := http.NewRequest(http.MethodPost, "http://door/v1/chat/completions",
			strings.NewReader(`{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`))
		sent := make(chan error, 1)
		go func() { sent <- req.Write(conn) }()
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute) // six times the write timeout, in silence
		synctest.Wait()
		if n := d.model.onces; n != 0 {
			t.Fatalf("the held completion ran %d times while the pod was waking", n)
		}
		d.readyNow()

		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("the answer after a one-minute hold: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("the answer's body: %v", err)
		}
		if resp.StatusCode != 200 || string(body) != `{"answer":1}` || resp.Header.Get("X-Wake-State") != "ready" {
			t.Errorf("answer %d %q (X-Wake-State %q), want the model's 200, ready", resp.StatusCode, body, resp.Header.Get("X-Wake-State"))
		}
	})
}

// Past hold_max the request is answered as in reply mode: the model is
// tried once more, and the machine's decision is the reply.
func TestHoldMaxAnswersAsReplyMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t)
		still := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking, From: machines.Waking, To: machines.Waking,
			Text: "Still waking — 2 min elapsed, usually ready by ~9. Ask again shortly."}
		d.coord.decisions = []machines.Decision{waking, still}
		w := serveAsync(d.Handler(), context.Background(), `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)()

		got := decode(t, w.Body.String()).(map[string]any)
		choice := got["choices"].([]any)[0].(map[string]any)
		if msg := choice["message"].(map[string]any)["content"]; msg != still.Text || choice["finish_reason"] != "stop" {
			t.Errorf("answer %v, want the still-waking reply", got)
		}
		if n := len(d.model.sent()); n != 2 || d.model.onces != 0 {
			t.Errorf("model calls: %d in all, %d held runs; want 2 (the first try and the one at hold_max) and 0", n, d.model.onces)
		}
		if n := len(d.coord.notReadyCalls()); n != 2 {
			t.Errorf("%d NotReady calls, want 2", n)
		}
	})
}

// A state that will not become ready by waiting ends the hold at once; a
// decision that is one never holds.
func TestHoldEndsOnAStateThatWillNotBecomeReady(t *testing.T) {
	stuck := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStuck, Stuck: true, From: machines.Loading, To: machines.Stuck,
		Text: "The model server has been up for 25 minutes and still is not answering — it may be stuck. Someone needs to look at the pod."}
	t.Run("during the hold", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t)
			d.coord.decisions = []machines.Decision{waking, stuck}
			wait := serveAsync(d.Handler(), context.Background(), streamBody)
			time.Sleep(6 * time.Second)
			synctest.Wait()
			d.coord.setState(machines.Record{State: machines.Stuck})
			time.Sleep(5 * time.Second)
			w := wait()
			if !strings.Contains(w.Body.String(), stuck.Text) || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
				t.Errorf("stream %q, want the stuck reply and [DONE]", w.Body.String())
			}
		})
	})
	t.Run("at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t)
			d.coord.decisions = []machines.Decision{stuck}
			w := serveAsync(d.Handler(), context.Background(), streamBody)()
			if !strings.Contains(w.Body.String(), stuck.Text) || strings.Contains(w.Body.String(), ": waking") {
				t.Errorf("stream %q, want the stuck reply without a hold", w.Body.String())
			}
			if w.Header().Get("X-Wake-State") != "stuck" {
				t.Errorf("X-Wake-State %q, want stuck", w.Header().Get("X-Wake-State"))
			}
		})
	})
}
