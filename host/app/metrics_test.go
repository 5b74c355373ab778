package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

// scrape is one GET /metrics at base, parsed.
type scrape map[string]*dto.MetricFamily

func scrapeAt(t *testing.T, client *http.Client, base string) scrape {
	t.Helper()
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics does not parse: %v", err)
	}
	return fams
}

// series returns the series of name whose labels are labels (as
// "k=v" pairs), and whether there is one.
func (s scrape) series(name string, labels ...string) (*dto.Metric, bool) {
	mf, ok := s[name]
	if !ok {
		return nil, false
	}
	for _, m := range mf.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if slices.Equal(got, labels) {
			return m, true
		}
	}
	return nil, false
}

// value is a counter's or gauge's value; a series that does not exist is
// 0 (a counter never incremented).
func (s scrape) value(name string, labels ...string) float64 {
	m, ok := s.series(name, labels...)
	switch {
	case !ok:
		return 0
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// sum is the total of the counters and gauges of name whose labels
// include where ("k=v" pairs).
func (s scrape) sum(name string, where ...string) float64 {
	var n float64
	mf, ok := s[name]
	if !ok {
		return 0
	}
series:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for _, kv := range where {
			if k, v, _ := strings.Cut(kv, "="); labels[k] != v {
				continue series
			}
		}
		n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return n
}

// byLabel is every series of name as label value → value, for one label.
func (s scrape) byLabel(name, label string, where ...string) map[string]float64 {
	out := map[string]float64{}
	mf, ok := s[name]
	if !ok {
		return out
	}
series:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for _, kv := range where {
			k, v, _ := strings.Cut(kv, "=")
			if labels[k] != v {
				continue series
			}
		}
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		out[labels[label]] = v
	}
	return out
}

// TestMetricsOverAWake scrapes GET /metrics before and after the first live
// wake, replayed through the real host, plugins and simulator on a fake
// clock: the pod's state, the wake's outcome and phases, the turns and the
// conductor requests move as the host acts.
func TestMetricsOverAWake(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk})
	s := h.sim(t)
	before := scrapeAt(t, h.Client, h.Base)

	wantStates := func(current string) map[string]float64 {
		m := map[string]float64{}
		for _, st := range []string{"asleep", "waking", "loading", "ready", "stuck", "crashed", "stopped", "idled", "refused", "start-failed", "never-ready"} {
			m[st] = 0
		}
		m[current] = 1
		return m
	}
	if diff := cmp.Diff(wantStates("asleep"), before.byLabel("wakeonchat_pod_state", "state", "pod=qwen")); diff != "" {
		t.Errorf("pod_state before the wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"ready": 0, "refused": 0, "start-failed": 0, "never-ready": 0},
		before.byLabel("wakeonchat_wakes_total", "outcome", "pod=qwen")); diff != "" {
		t.Errorf("wakes_total before the wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"wake-plugin-conductor": 1, "wake-plugin-provider-openai": 1},
		before.byLabel("wakeonchat_plugin_up", "plugin")); diff != "" {
		t.Errorf("plugin_up (-want +got):\n%s", diff)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "wakeonchat_held_requests"} {
		if _, ok := before[name]; !ok {
			t.Errorf("GET /metrics has no %s", name)
		}
	}

	// The wake of TestTimeline20260909: asleep, waking for 6m40s, loading,
	// answered at 9m10s.
	if got := h.ask(t, "m", "message 1"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q", got)
	}
	e2e.WaitWatcher(t, clk, waitFor) // the start returned; the watch runs
	mid := scrapeAt(t, h.Client, h.Base)
	if diff := cmp.Diff(wantStates("waking"), mid.byLabel("wakeonchat_pod_state", "state", "pod=qwen")); diff != "" {
		t.Errorf("pod_state while waking (-want +got):\n%s", diff)
	}
	if got := mid.value("wakeonchat_conductor_requests_total", "kind=start", "result=in_flight"); got != 1 {
		t.Errorf("conductor start requests in flight: %v, want 1", got)
	}
	stepTo(t, clk, t0.Add(3*time.Minute), time.Minute)
	h.ask(t, "m", "message 2")
	stepTo(t, clk, t0.Add(6*time.Minute+40*time.Second), time.Minute)
	h.ask(t, "m", "message 3")
	stepTo(t, clk, t0.Add(9*time.Minute+10*time.Second), time.Minute)
	if got := h.ask(t, "m", "message 4"); got != "echo: message 4" {
		t.Fatalf("ask at +9m10s: %q, want the model's answer", got)
	}
	h.waitState(t, "ready")
	// An answered turn is counted once it is stored, after its reply left;
	// the session's next turn waits for that. A resume without a pending
	// wake is that next turn (409), and adds a conflict.
	if status, _, raw := h.chat(t, chatRequest{Message: "message 5", SessionID: "m", WakeMode: "resume", PendingWake: "0123456789abcdef0123456789abcdef"}); status != http.StatusConflict {
		t.Fatalf("resume without a pending wake: %d %s, want 409", status, raw)
	}

	after := scrapeAt(t, h.Client, h.Base)
	if diff := cmp.Diff(wantStates("ready"), after.byLabel("wakeonchat_pod_state", "state", "pod=qwen")); diff != "" {
		t.Errorf("pod_state after the wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"ready": 1, "refused": 0, "start-failed": 0, "never-ready": 0},
		after.byLabel("wakeonchat_wakes_total", "outcome", "pod=qwen")); diff != "" {
		t.Errorf("wakes_total after the wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"waking": 1, "still_waking": 1, "loading_waking": 1, "answered": 1, "conflict": 1},
		after.byLabel("wakeonchat_turns_total", "result", "door=api_chat")); diff != "" {
		t.Errorf("turns_total (-want +got):\n%s", diff)
	}
	if h, ok := after.series("wakeonchat_turn_seconds", "door=api_chat"); !ok || h.GetHistogram().GetSampleCount() != 5 {
		t.Errorf("turn_seconds of api_chat: %v, want 5 turns", h)
	}
	// The host saw the pod up at the third ask (6m40s after the request:
	// the simulator's boot takes 6m30s) and answering by the fourth (9m10s)
	// at the latest; the watch reads once a minute, so either may come up
	// to a minute earlier than the ask that would have shown it.
	running, ok1 := after.series("wakeonchat_wake_phase_seconds", "phase=requested_to_running", "pod=qwen")
	answering, ok2 := after.series("wakeonchat_wake_phase_seconds", "phase=running_to_answering", "pod=qwen")
	if !ok1 || !ok2 || running.GetHistogram().GetSampleCount() != 1 || answering.GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("wake_phase_seconds: running %v, answering %v; want one observation each", running, answering)
	}
	up, total := running.GetHistogram().GetSampleSum(), running.GetHistogram().GetSampleSum()+answering.GetHistogram().GetSampleSum()
	t.Logf("requested_to_running %vs, running_to_answering %vs", up, total-up)
	if up < 390 || up > 400 {
		t.Errorf("requested_to_running %vs, want between 6m30s (the boot) and 6m40s (the ask that found it up)", up)
	}
	if total < 540 || total > 550 {
		t.Errorf("requested_to_running + running_to_answering %vs, want between 9m (the model's readySince) and 9m10s (the answered ask)", total)
	}
	gets := after.byLabel("wakeonchat_conductor_requests_total", "result", "kind=get")
	if gets["found"] < 4 || len(gets) != 1 {
		t.Errorf("conductor reads %v, want only found ones, at least one per ask", gets)
	}
	if n := s.StartRequests("qwen"); n != 1 {
		t.Errorf("start requests: %d, want 1", n)
	}
}

// apiServes is what the main listener's API says it serves.
const apiServes = "the API is POST /api/chat, GET /api/pods/{name}, GET /api/pods/{name}/events, GET /healthz and GET /readyz"

// adminServes is what the admin address says it serves.
const adminServes = "this address serves GET /metrics, the status page (GET /, its parts under /status/) and the pod event streams (GET /api/pods/{name}/events)"

// awaitValue scrapes base until the series of name with labels has value
// want, and fails the test after waitFor. For what the host does after its
// client has gone (a handler that notices a closed connection): each scrape
// reads the value itself, no time is assumed.
func awaitValue(t *testing.T, client *http.Client, base string, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		got := scrapeAt(t, client, base).value(name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %v after %v, want %v", name, got, waitFor, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventSubscribersGauge: wakeonchat_event_subscribers counts the live
// subscriptions to the pods' pushed changes, through real connections: one
// per open pod event stream and one per held OpenAI request, each gone when
// its client leaves.
func TestEventSubscribersGauge(t *testing.T) {
	t.Parallel()
	h, c := startDoor(t, doorOptions{openai: "cold_start = \"hold\"\nhold_max = \"20m\""})
	const subs, held = "wakeonchat_event_subscribers", "wakeonchat_held_requests"
	first := scrapeAt(t, h.Client, h.Base)
	if _, ok := first.series(subs); !ok {
		t.Fatalf("GET /metrics has no %s", subs)
	}
	if got := first.value(subs); got != 0 {
		t.Errorf("%s with nobody subscribed: %v, want 0", subs, got)
	}
	// A stream's first event is written after it subscribed.
	a, b := h.openEvents(t, "/api/pods/qwen/events"), h.openEvents(t, "/api/pods/qwen/events")
	a.nextPod(t)
	b.nextPod(t)
	if got := scrapeAt(t, h.Client, h.Base).value(subs); got != 2 {
		t.Errorf("%s with two streams open: %v, want 2", subs, got)
	}

	// A held request subscribes too, until it ends: here its client leaves.
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, userTurn("held"))
		done <- err
	}()
	awaitValue(t, h.Client, h.Base, 1, held)
	awaitValue(t, h.Client, h.Base, 3, subs)

	a.close()
	awaitValue(t, h.Client, h.Base, 2, subs)

	leave()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the held request whose client left: %v, want its context's cancellation", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the held request's client did not return after leaving")
	}
	awaitValue(t, h.Client, h.Base, 0, held)
	awaitValue(t, h.Client, h.Base, 1, subs)
}

// TestAdminListen: with [server] admin_listen, GET /metrics and the status
// page are served there, and only there; the admin address serves nothing
// else but the pod event streams the page follows, and both stop with the
// host.
func TestAdminListen(t *testing.T) {
	t.Parallel()
	h := startHost(t, hostOptions{simulate: true, clock: fakeclock.New(t0), adminListen: "127.0.0.1:0"})
	admin := "http://" + h.App.AdminAddr()
	if h.App.AdminAddr() == "" || h.App.AdminAddr() == h.App.Addr() {
		t.Fatalf("admin address %q, main %q: want one of its own", h.App.AdminAddr(), h.App.Addr())
	}
	if got := scrapeAt(t, h.Client, admin).value("wakeonchat_pod_state", "pod=qwen", "state=asleep"); got != 1 {
		t.Errorf("pod_state{asleep} on the admin address: %v, want 1", got)
	}
	get := func(method, url string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", method, url, ct)
		}
		var v map[string]string
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s %s: body is not JSON: %s", method, url, b)
		}
		return resp.StatusCode, v["error"]
	}
	for _, tt := range []struct {
		method, url string
		status      int
		msg         string
	}{
		{http.MethodGet, h.Base + "/metrics", http.StatusNotFound, "no such endpoint: GET /metrics; " + apiServes},
		{http.MethodGet, h.Base + "/", http.StatusNotFound, "no such endpoint: GET /; " + apiServes},
		{http.MethodGet, h.Base + "/status/plugins", http.StatusNotFound, "no such endpoint: GET /status/plugins; " + apiServes},
		{http.MethodGet, admin + "/api/pods/qwen", http.StatusNotFound, "no such endpoint: GET /api/pods/qwen; " + adminServes},
		{http.MethodPost, admin + "/api/chat", http.StatusNotFound, "no such endpoint: POST /api/chat; " + adminServes},
		{http.MethodPost, admin + "/metrics", http.StatusMethodNotAllowed, "method POST not allowed; use GET"},
		{http.MethodGet, admin + "//metrics", http.StatusNotFound, "no such endpoint: GET //metrics; " + adminServes},
		{http.MethodGet, admin + "/status/nothing", http.StatusNotFound, "no such endpoint: GET /status/nothing; the status page is GET / with its parts under /status/"},
		{http.MethodPost, admin + "/api/pods/qwen/events", http.StatusMethodNotAllowed, "method POST not allowed; use GET"},
		{http.MethodGet, admin + "/api/pods/nope/events", http.StatusNotFound, "unknown pod: nope"},
	} {
		status, msg := get(tt.method, tt.url)
		if status != tt.status || msg != tt.msg {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.url, status, msg, tt.status, tt.msg)
		}
	}
	// The status page is there too, with the event streams it follows.
	resp, err := h.Client.Get(admin + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-events="/api/pods/qwen/events"`) {
		t.Errorf("GET / on the admin address: %d\n%s\nwant the status page", resp.StatusCode, page)
	}
	stream := h.openEventsAt(t, admin, "/api/pods/qwen/events")
	if e := stream.nextPod(t); e.State != "asleep" {
		t.Errorf("the admin address's event stream: first event %+v, want asleep", e)
	}
	if err := h.Stop(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", h.App.AdminAddr(), time.Second); err == nil {
		c.Close()
		t.Error("the admin address still accepts connections after Shutdown")
	}
}

// With admin_listen, the admin address serves the pod event stream too,
// for the status page served there (same origin): the same pushes as the
// main listener's, read only (opening it wakes nothing and asks the
// conductor nothing), counted in event_subscribers, and ended, with its last
// word, when the host shuts down.
func TestAdminEventStream(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{simulate: true, clock: clk, adminListen: "127.0.0.1:0"})
	admin := "http://" + h.App.AdminAddr()
	s := h.sim(t)

	es := h.openEventsAt(t, admin, "/api/pods/qwen/events")
	if first := es.nextPod(t); first.State != "asleep" || first.Ready {
		t.Fatalf("first event on the admin address %+v, want asleep, not ready", first)
	}
	if n := s.StartRequests("qwen"); n != 0 {
		t.Errorf("opening the stream sent %d start requests, want none", n)
	}
	// The main listener keeps serving the stream (a wait answer names it
	// there).
	main := h.openEvents(t, "/api/pods/qwen/events")
	main.nextPod(t)
	if got := scrapeAt(t, h.Client, admin).value("wakeonchat_event_subscribers"); got != 2 {
		t.Errorf("event_subscribers with a stream open on each address: %v, want 2", got)
	}

	// A turn on the main listener wakes the pod; both streams are told.
	if got := h.ask(t, "a", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("ask: %q, want the waking reply", got)
	}
	for name, st := range map[string]*eventStream{"admin": es, "main": main} {
		if e := st.nextPod(t); e.State != "waking" || e.WakeRequestedAt == nil || !e.WakeRequestedAt.Equal(t0) {
			t.Errorf("pushed to the %s stream: %+v, want waking since %s", name, e, t0)
		}
	}

	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if end := es.next(t); end.Name != "end" || end.Data != `{"reason":"shutdown","error":"the host is shutting down"}` {
		t.Errorf("last event on the admin stream %q %s, want the shutdown end", end.Name, end.Data)
	}
	if lines := h.log.Matching(t, "shutdown grace ran out"); len(lines) != 0 {
		t.Error("the admin stream held the shutdown up until the grace ran out")
	}
}

// An admin_listen address that cannot be had stops start-up, naming the
// key.
func TestAdminListenInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	logs := &e2e.Log{}
	_, err, panicked := e2e.NewApp(app.Options{
		ConfigPath: e2e.WriteConfig(t, e2e.Config{AdminListen: taken.Addr().String()}),
		Simulate:   true, Clock: fakeclock.New(t0), Logger: logs.Logger(0), PluginDir: binDir,
		Getenv: func(string) string { return "" },
	})
	if panicked != nil || err == nil || !strings.HasPrefix(err.Error(), "server.admin_listen: ") {
		t.Errorf("app.New with admin_listen taken: error %v, panic %v; want an error naming server.admin_listen", err, panicked)
	}
}
