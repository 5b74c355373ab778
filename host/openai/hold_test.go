package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// heldDoor is a door in hold mode (hold_max 2m, keepalive 15s) whose pod is
// waking and asleep at the conductor, with the pod's changes pushed through
// hub. It counts the conductor lookups the door makes.
type heldDoor struct {
	*door
	hub     *events.Hub
	lookups atomic.Int64
}

func holdDoor(t *testing.T, buffer int) *heldDoor {
	hd := &heldDoor{hub: events.New(buffer)}
	hd.door = newDoor(t, func(c *openai.Config, tc *turn.Config) {
		c.Hold, c.HoldMax, c.Keepalive, tc.Events = true, 2*time.Minute, 15*time.Second, hd.hub
	})
	hd.model.stream = fails(asleep())
	hd.model.once = answer("text/event-stream", "data: {\"answer\":1}\n\ndata: [DONE]\n\n")
	waking := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: time.Now()}
	hd.coord.setState(waking)
	hd.hub.Seed([]machines.Record{waking})
	hd.pod.lookup = func() { hd.lookups.Add(1) }
	return hd
}

// change tells the hub that pod qwen's record is now rec, seen by trigger
// with status and lookup.
func (d *heldDoor) change(rec machines.Record, trigger engine.Trigger, status, lookup string) {
	rec.Pod = "qwen"
	if rec.WakeRequestedAt.IsZero() {
		rec.WakeRequestedAt = d.hub.Current("qwen").Record.WakeRequestedAt
	}
	d.coord.setState(rec)
	d.hub.Publish(wake.Change{After: rec, Event: machines.Event{Trigger: trigger, At: time.Now(), Status: status, Lookup: lookup}})
}

// readyNow makes the pod freshly ready, as the wake's watch would: the
// conductor says RUNNING with a readySince, and the machine ready.
func (d *heldDoor) readyNow() {
	d.pod.set(resolve.Resolution{Pod: "qwen", Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound, ReadySince: time.Now()})
	d.change(machines.Record{State: machines.Ready, ReadyAt: time.Now()}, machines.ReadySinceSeen, "RUNNING", machines.LookupFound)
}

// serveAsync runs one request in the background; wait returns its
// recorder once the handler returned.
func serveAsync(h http.Handler, ctx context.Context, body string) (wait func() *httptest.ResponseRecorder) {
	r := completionRequest(ctx, body)
	w := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Go(func() { h.ServeHTTP(w, r) })
	return func() *httptest.ResponseRecorder { wg.Wait(); return w }
}

const streamBody = `{"model":"qwen","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// A held stream gets its head at once and a keepalive every 15s; once the
// pod's change says freshly ready the completion runs exactly once and its
// answer follows in the same stream. The hold asks the conductor nothing.
func TestHoldEndsInTheModelsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t, 0)
		wait := serveAsync(d.Handler(), context.Background(), streamBody)

		time.Sleep(31 * time.Second) // two keepalives
		synctest.Wait()
		if n := d.model.onces; n != 0 {
			t.Fatalf("the held completion ran %d times while the pod was waking", n)
		}
		d.change(machines.Record{State: machines.Loading}, machines.PodUp, "RUNNING", machines.LookupFound)
		synctest.Wait()
		if n := d.model.onces; n != 0 {
			t.Fatalf("the held completion ran %d times while the model was loading", n)
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
		if n := d.lookups.Load(); n != 0 {
			t.Errorf("the hold made %d conductor lookups, want 0", n)
		}
	})
}

// Any number of held requests share the pod's changes: none asks the
// conductor, and each runs once when the pod is ready.
func TestHeldRequestsAskTheConductorNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t, 0)
		const n = 20
		var waits []func() *httptest.ResponseRecorder
		for range n {
			waits = append(waits, serveAsync(d.Handler(), context.Background(), streamBody))
		}
		time.Sleep(time.Minute + 50*time.Second) // under hold_max
		synctest.Wait()
		if got := d.hub.Subscribers("qwen"); got != n {
			t.Fatalf("%d held requests subscribed, want %d", got, n)
		}
		d.readyNow()
		for i, wait := range waits {
			if body := wait().Body.String(); !strings.HasSuffix(body, "data: {\"answer\":1}\n\ndata: [DONE]\n\n") {
				t.Errorf("held request %d: %q, want the model's answer at its end", i, body)
			}
		}
		if d.model.onces != n {
			t.Errorf("%d held runs, want %d: each exactly once", d.model.onces, n)
		}
		if got := d.lookups.Load(); got != 0 {
			t.Errorf("%d held requests made %d conductor lookups, want 0", n, got)
		}
	})
}

// A held request whose client leaves is dropped: it never runs.
func TestHoldDroppedWhenTheClientLeaves(t *testing.T) {
	for _, body := range []string{streamBody, `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`} {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t, 0)
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
			if n := d.hub.Subscribers("qwen"); n != 0 {
				t.Errorf("the dropped request left %d subscribers", n)
			}
		})
	}
}

// A held non-streaming request sends nothing for as long as it is held,
// longer than the server's write timeout: the door lifts that timeout for
// the hold, and the model's answer still reaches the client whole.
func TestHeldNonStreamingOutlastsTheServersWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t, 0)
		d.model.once = answer("application/json", `{"answer":1}`)
		l := plugintest.NewPipeListener()
		srv := &http.Server{Handler: d.Handler(), WriteTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		conn := l.Dial()
		defer conn.Close()

		req := completionRequest(context.Background(), `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`)
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
		d := holdDoor(t, 0)
		still := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking, From: machines.Waking, To: machines.Waking,
			Text: stillWaking(2)}
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

// A change to a state that will not become ready by waiting, or to a view
// that is not fresh, ends the hold at once, answered as in reply mode; a
// decision that is one never holds.
func TestHoldEndsOnAStateThatWillNotBecomeReady(t *testing.T) {
	stuck := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStuck, Stuck: true, From: machines.Loading, To: machines.Stuck,
		Text: render(machines.ReplyStuck, func(d *machines.ReplyData) { d.LoadingMinutes = 25 })}
	unreadable := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyUnreadable, From: machines.Waking, To: machines.Waking,
		Text: render(machines.ReplyUnreadable, nil)}
	tests := []struct {
		name    string
		state   engine.State
		trigger engine.Trigger
		lookup  string
		then    machines.Decision
	}{
		{"stuck", machines.Stuck, machines.ModelLoading, machines.LookupFound, stuck},
		{"refused", machines.Refused, machines.StartRefused, "", waking},
		{"unreadable", machines.Waking, machines.Unreadable, machines.LookupUnreadable, unreadable},
	}
	for _, tt := range tests {
		t.Run("during the hold: "+tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := holdDoor(t, 0)
				d.coord.decisions = []machines.Decision{waking, tt.then}
				wait := serveAsync(d.Handler(), context.Background(), streamBody)
				time.Sleep(6 * time.Second)
				synctest.Wait()
				d.change(machines.Record{State: tt.state}, tt.trigger, "RUNNING", tt.lookup)
				w := wait()
				if !strings.Contains(w.Body.String(), tt.then.Text) || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
					t.Errorf("stream %q, want %q and [DONE]", w.Body.String(), tt.then.Text)
				}
				if d.model.onces != 0 {
					t.Errorf("the held completion ran %d times", d.model.onces)
				}
			})
		})
	}
	t.Run("at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t, 0)
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

// A run that provably never reached a model (the pod stopped between the
// readiness and the run) keeps the request held; 5 s later the door reads
// the pod once and goes by what the machine then says: ready runs it again,
// stopped ends the hold as in reply mode.
func TestHoldStopRace(t *testing.T) {
	notFound := func(context.Context, []byte) (*pluginapi.StreamResponse, error) {
		return nil, &resolve.ProviderError{Provider: "qwen", Status: 404, Err: &pluginapi.CompletionError{Status: 404}}
	}
	t.Run("still ready: runs again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t, 0)
			ok := d.model.once
			d.model.once = func(ctx context.Context, b []byte) (*pluginapi.StreamResponse, error) {
				d.model.mu.Lock()
				d.model.once = ok // the next run gets the answer
				d.model.mu.Unlock()
				return notFound(ctx, b)
			}
			wait := serveAsync(d.Handler(), context.Background(), streamBody)
			synctest.Wait()
			d.readyNow()
			synctest.Wait()
			if d.lookups.Load() != 0 {
				t.Fatalf("the door read the pod at once after the failed run; want 5 s later")
			}
			w := wait()
			if !strings.HasSuffix(w.Body.String(), "data: {\"answer\":1}\n\ndata: [DONE]\n\n") {
				t.Errorf("stream %q, want the model's answer", w.Body.String())
			}
			if d.model.onces != 2 || d.lookups.Load() != 1 {
				t.Errorf("%d runs and %d lookups, want 2 (one never sent) and 1", d.model.onces, d.lookups.Load())
			}
		})
	})
	t.Run("stopped: answered as in reply mode", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := holdDoor(t, 0)
			d.model.once = notFound
			d.pod.lookup = func() {
				d.lookups.Add(1)
				// What the resolver's observer does with a pod seen stopped.
				d.change(machines.Record{State: machines.Stopped}, machines.PodDown, "EXITED", machines.LookupFound)
			}
			rewake := machines.Decision{Action: machines.ActionWake, Reply: machines.ReplyReadyThenStopped, From: machines.Stopped, To: machines.Waking,
				Text: render(machines.ReplyReadyThenStopped, func(d *machines.ReplyData) { d.ReadyAt = "00:00 UTC" })}
			d.coord.decisions = []machines.Decision{waking, rewake}
			wait := serveAsync(d.Handler(), context.Background(), streamBody)
			synctest.Wait()
			d.readyNow()
			w := wait()
			if !strings.Contains(w.Body.String(), rewake.Text) {
				t.Errorf("stream %q, want the ready-then-stopped reply", w.Body.String())
			}
			if d.model.onces != 1 || d.lookups.Load() != 1 {
				t.Errorf("%d runs and %d lookups, want 1 (never sent) and 1", d.model.onces, d.lookups.Load())
			}
		})
	})
}

// The host's shutdown ends every hold at once, answered as in reply mode,
// so that no held request holds the shutdown up.
func TestHoldEndsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t, 0)
		still := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking, From: machines.Waking, To: machines.Waking,
			Text: stillWaking(1)}
		d.coord.decisions = []machines.Decision{waking, still}
		wait := serveAsync(d.Handler(), context.Background(), streamBody)
		time.Sleep(time.Minute)
		synctest.Wait()
		began := time.Now()
		d.hub.Close()
		w := wait()
		if time.Since(began) != 0 || !strings.Contains(w.Body.String(), still.Text) || d.model.onces != 0 {
			t.Errorf("after %v: stream %q, %d runs; want the still-waking reply at once, no run", time.Since(began), w.Body.String(), d.model.onces)
		}
	})
}

// blockingWriter is a ResponseWriter whose writes wait while blocked.
type blockingWriter struct {
	mu      sync.Mutex
	header  http.Header
	body    bytes.Buffer
	blocked chan struct{}
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	blocked := w.blocked
	w.mu.Unlock()
	if blocked != nil {
		<-blocked
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

// A hold whose client is slow to take a keepalive falls behind the pod's
// changes: it starts again from the current one and still runs once.
func TestHoldThatLaggedResubscribes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := holdDoor(t, 1)
		w := &blockingWriter{header: http.Header{}}
		r := completionRequest(context.Background(), streamBody)
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Handler().ServeHTTP(w, r)
		}()
		synctest.Wait()
		release := make(chan struct{})
		w.mu.Lock()
		w.blocked = release
		w.mu.Unlock()
		time.Sleep(15 * time.Second) // the keepalive's write waits
		synctest.Wait()
		d.change(machines.Record{State: machines.Loading}, machines.PodUp, "RUNNING", machines.LookupFound)
		d.readyNow() // the buffer of one is full: the hold lagged
		close(release)
		<-done
		if !strings.HasSuffix(w.body.String(), "data: {\"answer\":1}\n\ndata: [DONE]\n\n") || d.model.onces != 1 {
			t.Errorf("stream %q, %d runs; want the model's answer, one run", w.body.String(), d.model.onces)
		}
		if d.lookups.Load() != 0 {
			t.Errorf("%d lookups, want 0", d.lookups.Load())
		}
	})
}
