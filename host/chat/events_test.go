package chat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/chat"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// streamWriter is an http.ResponseWriter a test reads while the handler
// still writes. With block set, every Write waits until block is closed.
type streamWriter struct {
	mu     sync.Mutex
	header http.Header
	status int
	body   bytes.Buffer
	block  chan struct{}
}

func newStreamWriter() *streamWriter { return &streamWriter{header: http.Header{}} }

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *streamWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	block := w.block
	w.mu.Unlock()
	if block != nil {
		<-block
	}
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

func (w *streamWriter) Flush() {}

func (w *streamWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// countingPod is a turn.PodView that counts its lookups: an event stream
// must make none.
type countingPod struct {
	mu      sync.Mutex
	lookups int
}

func (p *countingPod) Lookup(context.Context) (resolve.Resolution, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lookups++
	return resolve.Resolution{}, nil
}

func (p *countingPod) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookups
}

// eventsFixture is a chat.Server serving pod qwen's events from hub, with
// the 9-minute estimate. Build it inside the synctest bubble.
type eventsFixture struct {
	hub     *events.Hub
	pod     *countingPod
	handler http.Handler
	logs    *bytes.Buffer
}

func newEventsFixture(buffer int) *eventsFixture {
	f := &eventsFixture{hub: events.New(buffer), pod: &countingPod{}, logs: &bytes.Buffer{}}
	f.handler = chat.New(chat.Config{
		Pods:   map[string]turn.PodView{"qwen": f.pod},
		Events: f.hub,
		Clock:  clock.Real(),
		Logger: slog.New(slog.NewTextHandler(f.logs, nil)),
		Wake:   nineMinutes{},
	}).Handler()
	return f
}

// nineMinutes is a coordinator that only estimates: 9 minutes a wake. The
// event stream asks it nothing else.
type nineMinutes struct{ turn.Coordinator }

func (nineMinutes) Estimate(string) machines.Estimate {
	return machines.Estimate{Wake: 9 * time.Minute}
}

// open serves GET /api/pods/qwen/events into w in the background; the
// returned channel is closed when the handler has returned.
func (f *eventsFixture) open(ctx context.Context, w *streamWriter) <-chan struct{} {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/pods/qwen/events", nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.handler.ServeHTTP(w, r)
	}()
	return done
}

// publish tells the hub of a change of pod qwen to rec, seen with status
// by a trigger, now.
func (f *eventsFixture) publish(rec machines.Record, trigger engine.Trigger, status string) {
	rec.Pod = "qwen"
	f.hub.Publish(wake.Change{After: rec, Event: machines.Event{Trigger: trigger, At: time.Now(), Status: status, Lookup: machines.LookupFound}})
}

// sseEvent is one event of a stream, or one comment.
type sseEvent struct {
	Name    string
	Data    string
	Comment string
}

func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	if body != "" && !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("the stream does not end with a whole event: %q", body)
	}
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if block == "" {
			continue
		}
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, ": "):
				e.Comment = strings.TrimPrefix(line, ": ")
			case strings.HasPrefix(line, "event: "):
				e.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.Data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("not an SSE line: %q in %q", line, body)
			}
		}
		out = append(out, e)
	}
	return out
}

// podEvent is an event's data, decoded strictly.
type podEvent struct {
	Pod             string     `json:"pod"`
	State           string     `json:"state"`
	Status          *string    `json:"status"`
	Ready           bool       `json:"ready"`
	ReadySince      *time.Time `json:"readySince"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	Outcome         *string    `json:"outcome"`
	ElapsedSeconds  *int64     `json:"elapsedSeconds"`
	EtaSeconds      *int64     `json:"etaSeconds"`
	At              time.Time  `json:"at"`
}

func decodeEvent(t *testing.T, data string) podEvent {
	t.Helper()
	var e podEvent
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
	return e
}

// The stream: the current view first (from the hub: the status is unknown
// until the host sees a change), then one event per change of what it
// reports, a keepalive comment every 15 s, and no conductor lookup at all.
// It ends when the client leaves.
func TestEventStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(0)
		wakeAt := time.Now().UTC()
		f.hub.Seed([]machines.Record{{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt}})
		time.Sleep(time.Minute)
		ctx, leave := context.WithCancel(context.Background())
		w := newStreamWriter()
		done := f.open(ctx, w)
		synctest.Wait()

		time.Sleep(5*time.Minute + 10*time.Second) // 6m10s: RUNNING, the model loading
		f.publish(machines.Record{State: machines.Loading, WakeRequestedAt: wakeAt, ModelLoadingSince: wakeAt}, machines.PodUp, "RUNNING")
		synctest.Wait()
		// The loading clock changes, nothing the stream reports does.
		f.publish(machines.Record{State: machines.Loading, WakeRequestedAt: wakeAt, ModelLoadingSince: wakeAt.Add(time.Second)}, machines.PodUp, "RUNNING")
		time.Sleep(2*time.Minute + 50*time.Second) // 9m: ready
		f.publish(machines.Record{State: machines.Ready, WakeRequestedAt: wakeAt, ReadyAt: wakeAt.Add(9 * time.Minute)}, machines.ReadySinceSeen, "RUNNING")
		time.Sleep(time.Second)
		synctest.Wait()
		leave()
		<-done

		var evs []podEvent
		keepalives := 0
		for _, e := range parseSSE(t, w.String()) {
			switch {
			case e.Comment == "keepalive" && e.Name == "" && e.Data == "":
				keepalives++
			case e.Comment == "" && e.Name == "":
				evs = append(evs, decodeEvent(t, e.Data))
			default:
				t.Errorf("unexpected event %+v", e)
			}
		}
		// Open from 1m to 9m1s: a comment every 15 s.
		if keepalives != 32 {
			t.Errorf("%d keepalive comments over 8 minutes, want 32", keepalives)
		}
		at := func(d time.Duration) time.Time { return wakeAt.Add(d) }
		want := []podEvent{
			{Pod: "qwen", State: "waking", WakeRequestedAt: &wakeAt, ElapsedSeconds: ptr[int64](60), EtaSeconds: ptr[int64](480), At: at(time.Minute)},
			{Pod: "qwen", State: "loading", Status: ptr("RUNNING"), WakeRequestedAt: &wakeAt, ElapsedSeconds: ptr[int64](370), EtaSeconds: ptr[int64](170), At: at(6*time.Minute + 10*time.Second)},
			{Pod: "qwen", State: "ready", Status: ptr("RUNNING"), Ready: true, ReadySince: ptr(at(9 * time.Minute)), WakeRequestedAt: &wakeAt, Outcome: ptr("ready"), At: at(9 * time.Minute)},
		}
		if diff := cmp.Diff(want, evs); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" || w.status != http.StatusOK {
			t.Errorf("answer %d %q, want 200 text/event-stream", w.status, ct)
		}
		if n := f.pod.count(); n != 0 {
			t.Errorf("the stream made %d conductor lookups, want 0", n)
		}
		if n := f.hub.Subscribers("qwen"); n != 0 {
			t.Errorf("%d subscribers after the client left, want 0", n)
		}
	})
}

// Past the estimate the remaining time is 0, never negative.
func TestEventStreamEtaNeverNegative(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(0)
		wakeAt := time.Now().UTC()
		f.hub.Seed([]machines.Record{{Pod: "qwen", State: machines.Stuck, WakeRequestedAt: wakeAt, ModelLoadingSince: wakeAt}})
		time.Sleep(25 * time.Minute)
		ctx, leave := context.WithCancel(context.Background())
		w := newStreamWriter()
		done := f.open(ctx, w)
		synctest.Wait()
		leave()
		<-done
		evs := parseSSE(t, w.String())
		if len(evs) != 1 {
			t.Fatalf("stream %q, want one event", w.String())
		}
		e := decodeEvent(t, evs[0].Data)
		if e.State != "stuck" || e.ElapsedSeconds == nil || *e.ElapsedSeconds != 1500 || e.EtaSeconds == nil || *e.EtaSeconds != 0 {
			t.Errorf("event %s, want stuck, 1500 s elapsed, 0 s remaining", evs[0].Data)
		}
	})
}

// A client that falls behind is closed after what it holds, with a last
// event saying so, and logged; the hub and the others never wait for it.
func TestEventStreamLagged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(2)
		w := newStreamWriter()
		done := f.open(context.Background(), w)
		synctest.Wait()
		block := make(chan struct{})
		w.mu.Lock()
		w.block = block // the client stops reading
		w.mu.Unlock()

		_, other := f.hub.Subscribe("qwen")
		otherGot := make(chan int, 1)
		go func() {
			n := 0
			for range other.C() {
				n++
			}
			otherGot <- n
		}()
		wakeAt := time.Now()
		states := []engine.State{machines.Waking, machines.Loading, machines.Stuck, machines.Crashed}
		for _, s := range states {
			f.publish(machines.Record{State: s, WakeRequestedAt: wakeAt}, machines.PodUp, "RUNNING")
			synctest.Wait() // the handler takes the first and blocks writing it
		}
		close(block)
		<-done

		var got []string
		for _, e := range parseSSE(t, w.String()) {
			if e.Name == "end" {
				got = append(got, "end "+e.Data)
				continue
			}
			got = append(got, decodeEvent(t, e.Data).State)
		}
		want := []string{"asleep", "waking", "loading", "stuck",
			`end {"reason":"lagged","error":"this stream fell behind the pod's changes and is closed; subscribe again for the current view"}`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the lagging stream (-want +got):\n%s", diff)
		}
		f.hub.Close()
		if n := <-otherGot; n != len(states) || !errors.Is(other.Err(), events.ErrClosed) {
			t.Errorf("the other subscriber got %d updates and ended with %v, want all %d and ErrClosed", n, other.Err(), len(states))
		}
		if !strings.Contains(f.logs.String(), "event stream lagged for pod qwen; closed") {
			t.Errorf("no lagged line in the log:\n%s", f.logs)
		}
	})
}

// The host's shutdown (the hub closed) ends every stream with a last event
// saying so.
func TestEventStreamEndsAtShutdown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := newEventsFixture(0)
		w := newStreamWriter()
		done := f.open(context.Background(), w)
		synctest.Wait()
		f.hub.Close()
		<-done
		evs := parseSSE(t, w.String())
		if len(evs) != 2 || evs[1].Name != "end" || evs[1].Data != `{"reason":"shutdown","error":"the host is shutting down"}` {
			t.Errorf("stream %q, want the view, then the shutdown end event", w.String())
		}
	})
}

// What is not a stream answers JSON.
func TestEventStreamRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"unknown pod", http.MethodGet, "/api/pods/other/events", 404, `{"error":"unknown pod: other"}` + "\n"},
		{"a pod name that is not one", http.MethodGet, "/api/pods/Not_A_Pod/events", 404, `{"error":"unknown pod (not a valid pod name)"}` + "\n"},
		{"POST", http.MethodPost, "/api/pods/qwen/events", 405, `{"error":"method POST not allowed; use GET"}` + "\n"},
		{"HEAD", http.MethodHead, "/api/pods/qwen/events", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newEventsFixture(0)
			w := httptest.NewRecorder()
			f.handler.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status || w.Body.String() != tt.body {
				t.Errorf("%d %q, want %d %q", w.Code, w.Body.String(), tt.status, tt.body)
			}
			if f.hub.Subscribers("qwen") != 0 {
				t.Errorf("a refused request left a subscriber")
			}
		})
	}
	t.Run("no hub", func(t *testing.T) {
		h := chat.New(chat.Config{Pods: map[string]turn.PodView{"qwen": &countingPod{}}}).Handler()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/pods/qwen/events", nil))
		if w.Code != 503 || w.Body.String() != `{"error":"the pod event stream is not available"}`+"\n" {
			t.Errorf("%d %q, want 503 naming the stream", w.Code, w.Body.String())
		}
	})
}
