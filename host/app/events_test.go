package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// The pod event stream, end to end: the real host, its plugins and the
// simulator, on a fake clock that the wake's watch reads by.

// streamEvent is one event of a pod event stream (comments are skipped).
type streamEvent struct {
	Name string // "" for the default event, "end" for the last word
	Data string
}

// podEvent is the data of a default event.
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

// eventStream is an open GET /api/pods/{name}/events, read in the
// background.
type eventStream struct {
	events chan streamEvent // closed when the stream ends
	close  context.CancelFunc
}

// openEvents opens the event stream at path; the test's cleanup closes it.
func (h *testHost) openEvents(t *testing.T, path string) *eventStream {
	t.Helper()
	return h.openEventsAt(t, h.Base, path)
}

// openEventsAt opens the event stream at path on the address base.
func (h *testHost) openEventsAt(t *testing.T, base, path string) *eventStream {
	t.Helper()
	return openStream(t, h.Client, base, path)
}

// openStream opens the event stream at path on the address base with
// client; the test's cleanup closes it.
func openStream(t *testing.T, client *http.Client, base, path string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("GET %s: %d %q, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	es := &eventStream{events: make(chan streamEvent, 64), close: cancel}
	go func() {
		defer close(es.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var e streamEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e != (streamEvent{}) {
					es.events <- e
				}
				e = streamEvent{}
			case strings.HasPrefix(line, "event: "):
				e.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return es
}

// next is the stream's next event; it fails the test when none comes
// within waitFor or the stream ended.
func (es *eventStream) next(t *testing.T) streamEvent {
	t.Helper()
	select {
	case e, ok := <-es.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return e
	case <-time.After(waitFor):
		t.Fatalf("no event within %v", waitFor)
		return streamEvent{}
	}
}

// nextPod is the next event, which must be a pod event.
func (es *eventStream) nextPod(t *testing.T) podEvent {
	t.Helper()
	return decodePodEvent(t, es.next(t))
}

// decodePodEvent is e's data, which must be a pod event.
func decodePodEvent(t *testing.T, e streamEvent) podEvent {
	t.Helper()
	if e.Name != "" {
		t.Fatalf("event %q %s, want a pod event", e.Name, e.Data)
	}
	var p podEvent
	dec := json.NewDecoder(strings.NewReader(e.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("pod event %s: %v", e.Data, err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// TestWaitEventsResume is the foreground continuation on the push: a
// wakeMode "wait" turn on an asleep pod wakes it and names the pod's event
// stream; the client subscribes and sees waking, loading and ready pushed as
// the wake's watch reads them, with no poll of its own, and then resumes once
// and gets the model's answer.
func TestWaitEventsResume(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	const (
		session = "s-events"
		prompt  = "summarise the release notes"
	)
	status, r, raw := h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "wait"})
	if status != http.StatusOK || r.Reply != e2e.ReplyWaking || r.PendingWake == nil {
		t.Fatalf("wait turn: %d %s\nwant 200, the waking reply and a pendingWake", status, raw)
	}
	if r.PendingWake.Events != "/api/pods/qwen/events" {
		t.Fatalf("pendingWake.events %q, want /api/pods/qwen/events", r.PendingWake.Events)
	}

	stream := h.openEvents(t, r.PendingWake.Events)
	got := []podEvent{stream.nextPod(t)}
	// The watch reads the pod once a minute: RUNNING from 6m30s, the
	// model answering from 9m.
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	for got[len(got)-1].State != "ready" {
		got = append(got, stream.nextPod(t))
	}
	p, _ := h.pod(t)
	if !p.Ready || p.ReadySince == nil {
		t.Fatalf("GET /api/pods/qwen after the ready event: %+v, want ready with a readySince", p)
	}
	readySince, err := time.Parse(time.RFC3339, *p.ReadySince)
	if err != nil {
		t.Fatal(err)
	}
	want := []podEvent{
		{Pod: "qwen", State: "waking", Status: ptr("EXITED"), WakeRequestedAt: ptr(t0), ElapsedSeconds: ptr[int64](0), EtaSeconds: ptr[int64](540), At: t0},
		{Pod: "qwen", State: "loading", Status: ptr("RUNNING"), WakeRequestedAt: ptr(t0), ElapsedSeconds: ptr[int64](420), EtaSeconds: ptr[int64](120), At: t0.Add(7 * time.Minute)},
		{Pod: "qwen", State: "ready", Status: ptr("RUNNING"), Ready: true, ReadySince: &readySince, WakeRequestedAt: ptr(t0), Outcome: ptr("ready"), At: t0.Add(9 * time.Minute)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pushed events (-want +got):\n%s", diff)
	}

	status, r, raw = h.chat(t, chatRequest{Message: prompt, SessionID: session, WakeMode: "resume", PendingWake: r.PendingWake.Key})
	if status != http.StatusOK || r.Reply != "echo: "+prompt || r.PendingWake != nil {
		t.Errorf("resume: %d %s\nwant 200 and the model's answer %q", status, raw, "echo: "+prompt)
	}
	if n := h.sim(t).StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1", n)
	}
}

// countingConductor serves a simulator and counts the conductor's pod
// reads (GET /api/pods/...).
type countingConductor struct {
	sim   *sim.Sim
	reads atomic.Int64
}

func (c *countingConductor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/pods/") {
		c.reads.Add(1)
	}
	c.sim.Handler().ServeHTTP(w, r)
}

// Any number of subscribers on one pod share its wake's watch: opening the
// streams reads nothing, and over the whole wake the conductor is read
// exactly as often as the watch reads it, once a minute, while every
// subscriber sees the pod become ready.
func TestEventSubscribersCostNoLookups(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk})
	cc := &countingConductor{sim: s}
	simURL := serveSim(t, s, cc)
	h := startHost(t, hostOptions{
		conductorURL: simURL,
		apiKeyEnv:    keyEnv,
		env:          map[string]string{keyEnv: "e2e-key"},
		clock:        clk,
	})
	if got := h.ask(t, "asker", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want the waking reply", got)
	}
	e2e.WaitWatcher(t, clk, waitFor) // the start returned; the watch runs
	before := cc.reads.Load()

	const subscribers = 25
	var streams []*eventStream
	for range subscribers {
		es := h.openEvents(t, "/api/pods/qwen/events")
		if first := es.nextPod(t); first.State != "waking" {
			t.Fatalf("first event %+v, want waking", first)
		}
		streams = append(streams, es)
	}
	if n := cc.reads.Load() - before; n != 0 {
		t.Fatalf("opening %d streams read the pod %d times, want 0", subscribers, n)
	}
	stepTo(t, clk, t0.Add(9*time.Minute), time.Minute)
	for i, es := range streams {
		for e := es.nextPod(t); !e.Ready; e = es.nextPod(t) {
			if e.State != "loading" {
				t.Fatalf("subscriber %d: event %+v, want loading, then ready", i, e)
			}
		}
	}
	if n := cc.reads.Load() - before; n != 9 {
		t.Errorf("the conductor was read %d times over the wake with %d subscribers, want 9: the watch's, one a minute", n, subscribers)
	}
}

// A host shutting down ends its open event streams, each with a last event
// saying so, instead of waiting for them until the grace runs out.
func TestShutdownEndsEventStreams(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	var streams []*eventStream
	for range 3 {
		es := h.openEvents(t, "/api/pods/qwen/events")
		if first := es.nextPod(t); first.State != "asleep" || first.Status != nil || first.Ready {
			t.Fatalf("first event %+v, want asleep, no status seen yet, not ready", first)
		}
		streams = append(streams, es)
	}
	began := time.Now()
	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("shutdown took %v with streams open", took)
	}
	if lines := h.log.Matching(t, "shutdown grace ran out"); len(lines) != 0 {
		t.Errorf("the streams held the shutdown up until the grace ran out")
	}
	for i, es := range streams {
		end := es.next(t)
		if end.Name != "end" || end.Data != `{"reason":"shutdown","error":"the host is shutting down"}` {
			t.Errorf("stream %d: last event %q %s, want the shutdown end", i, end.Name, end.Data)
		}
		select {
		case e, open := <-es.events:
			if open {
				t.Errorf("stream %d goes on after its end event: %+v", i, e)
			}
		case <-time.After(waitFor):
			t.Errorf("stream %d is still open after its end event", i)
		}
	}
}

// [server] events_keepalive sets how often an open stream gets its
// keepalive comment: at 20ms, a stream carries several within a second
// (the 15 s default would carry none).
func TestEventsKeepaliveFromConfig(t *testing.T) {
	t.Parallel()
	h := startHost(t, hostOptions{simulate: true, clock: fakeclock.New(t0), eventsKeepalive: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+"/api/pods/qwen/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("GET /api/pods/qwen/events: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for keepalives := 0; keepalives < 3 && sc.Scan(); {
		if line := sc.Text(); line != "" {
			lines = append(lines, line)
			if line == ": keepalive" {
				keepalives++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the stream carried %q, then %v; want three keepalive comments within %v", lines, err, waitFor)
	}
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "data: ") {
		t.Errorf("the stream carried %q, want the first event, then only keepalive comments", lines)
	}
}
